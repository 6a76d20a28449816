"""Consolidation: the conversation's committed messages become facts, in the background, a batch at a time.

A batch is read from after the last consolidated message; the model extracts candidate facts; each
candidate that is confident enough and not an exact duplicate is compared with the most similar current
facts, and the model decides ADD, UPDATE, DELETE or NONE. The batch's changes and the mark of how far
consolidation got are logged in one commit, so a crash repeats a batch whole or not at all: no message is
consolidated twice. A bad answer skips its batch with a notice; a provider failure leaves it for later. A skipped
batch is logged with its messages, the reason and the model that skipped it, and read again when asked
(`retry_skipped`) or, by itself, once another model is asked.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from agentos.errors import AgentOSError, ContextOverflowError, LeaseLostError, ProviderError, ReadOnlyAgentError
from agentos.events import Event, FactsChanged, FactsNotice
from agentos.memory.facts.extraction import BatchSkipped, CandidateFact, FactModel, fact_of, message_line, sources_of
from agentos.memory.facts.reports import BatchReport, ConsolidationReport, change_line
from agentos.memory.facts.rows import Fact, FactChange, fact_hash
from agentos.memory.facts.settings import FactSettings
from agentos.messages import Message, new_id

log = logging.getLogger(__name__)

STOP_WAIT_SECONDS = 3.0  # closing waits this long for a batch whose model is still answering, then leaves it
RETRY_AFTER_SECONDS = 30.0  # after a provider failure, the next try waits at least this long (or the next turn)
READ_AHEAD_BATCHES = 4  # messages are read this many batches ahead
ReadMessages = Callable[[int, int], list[tuple[int, Message]]]  # (first seq, end seq) -> (seq, message) in order


class FactStore(Protocol):
    """What consolidation reads and writes of the fact tier."""

    def watermark(self) -> int: ...
    def skipped(self) -> list[FactChange]: ...
    def messages_by_id(self, message_ids: Sequence[str]) -> list[tuple[int, Message]]: ...
    def similar(self, texts: Sequence[str], k: int) -> list[list[Fact]]: ...
    def current_hashes(self, hashes: Sequence[str]) -> set[str]: ...
    def commit(self, changes: Sequence[FactChange], *, tolerate_conflicts: bool = False) -> list[FactChange]: ...
    def compact_if_due(self) -> None: ...


def worth_reading(message: Message) -> bool:
    """What consolidation reads: what the user and the agent said (tool traffic and empty steps are left out)."""
    return message.role in ("user", "assistant") and bool(message.content.strip())


class Consolidator:
    """Consolidates one agent's messages into its fact tier; runs batches in the foreground or on its own thread."""

    def __init__(self, facts: FactStore, read_messages: ReadMessages, model: Callable[[], FactModel],
                 settings: Callable[[], FactSettings], tell: Callable[[Event], None]) -> None:
        self.facts = facts
        self.read_messages = read_messages
        self._model_factory = model
        self._model: FactModel | None = None
        self._settings = settings
        self._tell = tell  # hands news to the agent's event stream (`Agent.idle`)
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._committed = 0  # messages committed (seq below this): what may be read
        self._turns_waiting = 0
        self._last_turn = time.monotonic()
        self._retry_at = 0.0
        self._busy = False
        self._read_ahead: list[tuple[int, Message]] = []  # messages read and not yet consolidated
        self._ended: dict[str, str] = {}  # texts of the facts the batch being made ends, by id
        self._write_lock = threading.Lock()  # held while a batch is written: stopping waits for the write to end
        self.last_error: str | None = None

    @property
    def model(self) -> FactModel:
        if self._model is None:
            self._model = self._model_factory()
        return self._model

    @property
    def settings(self) -> FactSettings:
        """The fact settings now (a change applies from the next batch)."""
        return self._settings()

    def _emit(self, event: FactsChanged | FactsNotice) -> None:
        try:
            self._tell(event)
        except Exception:  # noqa: BLE001 - a consumer's failure must not stop consolidation
            log.exception("handing over fact news failed")

    # -- running -------------------------------------------------------------------------------

    def pending(self, committed: int) -> int:
        """How many committed messages wait to be consolidated."""
        return max(0, committed - 1 - self.facts.watermark())

    def retryable(self, everything: bool = False) -> list[FactChange]:
        """The skipped batches a run reads again: all of them with `everything`, else those that another model than
        the one asked now skipped (the same model would most likely skip them again)."""
        skipped = self.facts.skipped()
        return skipped if everything or not skipped else [s for s in skipped if s.model != self.model.spec]

    def run(self, committed: int, progress: Callable[[int, int], None] | None = None,
            stop: Callable[[], bool] = lambda: False, retry_skipped: bool = False) -> ConsolidationReport:
        """Consolidate every message below seq `committed` not yet consolidated, batch by batch, here and now, after
        reading again the skipped batches that are `retryable` (all of them with `retry_skipped`).

        A provider failure raises (what was done is kept); a batch without a usable answer is skipped."""
        report = ConsolidationReport()
        self._read_ahead = []  # read afresh each run: a rewind since may have given other messages these seqs
        pending, first = self.pending(committed), self.facts.watermark() + 1
        if pending or self.facts.skipped():
            self._model = self._model_factory()  # the model as it is set now (`agent.roles.use("facts", ...)`)
        retries = self.retryable(retry_skipped)
        total, retried = pending + sum(len(s.message_ids) for s in retries), 0
        for skip in retries:  # first: what they find is older than what the messages after them say
            done = None if stop() else self.retry(skip, stop)
            if done is None:
                return report
            report.batches.append(done)
            retried += len(skip.message_ids)
            self._compact(stop)
            if progress is not None:
                progress(retried, total)
        limit = self.settings.batch_messages
        while not stop():
            start = self.facts.watermark() + 1
            if start >= committed:
                break
            batch, through = self._next_batch(start, committed, limit)
            try:
                done = self.run_batch(batch, through, stop)
            except ContextOverflowError as exc:
                if len(batch) > 1:
                    limit = max(1, len(batch) // 2)  # too long for the model's window: smaller batches from here on
                    continue
                done = self.run_batch(batch, through, stop, skip=f"one message is too long for the model ({exc})")
            if done is None:
                break
            report.batches.append(done)
            self._compact(stop)
            if progress is not None:
                progress(retried + through + 1 - first, total)
        return report

    def retry(self, skip: FactChange, stop: Callable[[], bool] = lambda: False) -> BatchReport | None:
        """Read a skipped batch again (those of its messages still stored); skipped again, it is logged again, with
        the model asked now. None when `stop()` cut it short."""
        batch = [(seq, m) for seq, m in self.facts.messages_by_id(skip.message_ids) if worth_reading(m)]
        try:
            return self.run_batch(batch, None, stop, retrying=skip)
        except ContextOverflowError as exc:
            return self.run_batch(batch, None, stop, skip=f"too long for the model ({exc})", retrying=skip)

    def _compact(self, stop: Callable[[], bool]) -> None:
        with self._write_lock:
            if not stop():
                self.facts.compact_if_due()

    def _next_batch(self, start: int, committed: int, wanted: int) -> tuple[list[tuple[int, Message]], int]:
        """The next batch from seq `start`: up to `wanted` messages worth reading, and the seq it ends at.
        Messages are read ahead a few batches at a time, each once."""
        chosen: list[tuple[int, Message]] = []
        end = start
        while end < committed:
            ahead = [(seq, m) for seq, m in self._read_ahead if end <= seq < committed]
            if not ahead or ahead[0][0] != end:
                high = min(committed, end + wanted * READ_AHEAD_BATCHES)
                ahead = self.read_messages(end, high)
                self._read_ahead = ahead
                if not ahead:
                    end = high
                    continue
            for seq, message in ahead:
                if worth_reading(message):
                    chosen.append((seq, message))
                    if len(chosen) >= wanted:
                        return chosen, seq
            end = ahead[-1][0] + 1
        return chosen, committed - 1

    def run_batch(self, batch: Sequence[tuple[int, Message]], through_seq: int | None,
                  stop: Callable[[], bool] = lambda: False, skip: str | None = None,
                  retrying: FactChange | None = None) -> BatchReport | None:
        """Consolidate one batch of messages and log, in one commit, its changes and how far it got (or, `retrying`
        a skipped batch, that it was read again); None when `stop()` said, once the answers were in, that nothing
        more may be written (the batch is redone later)."""
        started = time.perf_counter()
        report = BatchReport(through_seq=through_seq, messages=len(batch), retried=retrying.id if retrying else None)
        group = new_id("grp")
        messages = [m for _, m in batch]
        ids = tuple(m.id for m in messages)
        changes: list[FactChange] = []
        self._ended = {}
        try:
            if skip:
                raise BatchSkipped(skip)
            if messages:
                changes = self._changes(messages, group, report)
        except BatchSkipped as exc:
            report.skipped = str(exc)
        progress = [FactChange(kind="retry", by="consolidator", group_id=group, target_change=retrying.id,
                               message_ids=ids, reason=f"read again with {self.model.spec}")] if retrying else []
        if report.skipped or not retrying:
            progress.append(FactChange(kind="skip" if report.skipped else "batch", by="consolidator", group_id=group,
                                       message_ids=ids, through_seq=through_seq, reason=report.skipped or "",
                                       model=self.model.spec if report.skipped else ""))
        with self._write_lock:
            if stop():
                return None
            made = self.facts.commit([*changes, *progress], tolerate_conflicts=True)
        report.changes = [c for c in made if c.kind not in ("batch", "skip", "retry")]
        report.seconds = time.perf_counter() - started
        if report.changes:
            lines = [change_line(c, self._ended.get(c.old_fact_id or "")) for c in report.changes]
            self._emit(FactsChanged(changes=lines, count=len(report.changes)))
        if report.skipped:
            self._emit(FactsNotice(text=f"fact consolidation skipped {len(batch)} message(s): {report.skipped} "
                                        f"(kept: another facts model reads them again, or consolidate --retry-skipped)",
                                   level="warning"))
        return report

    def _changes(self, messages: list[Message], group: str, report: BatchReport) -> list[FactChange]:
        lines = [message_line(i + 1, m) for i, m in enumerate(messages)]
        found, usage, calls = self.model.extract(lines)
        report.usage, report.calls = report.usage + usage, report.calls + calls
        candidates = self._candidates(found)
        if not candidates:
            return []
        similar = self.facts.similar([c.text for c in candidates], self.settings.similar)
        aliases: list[list[tuple[str, Fact]]] = []
        number = 0
        for facts in similar:
            shown = []
            for fact in facts:
                number += 1
                shown.append((f"F{number}", fact))
            aliases.append(shown)
        if any(aliases):
            decisions, usage, calls = self.model.decide(candidates, aliases)
            report.usage, report.calls = report.usage + usage, report.calls + calls
        else:
            decisions = {}
        changes: list[FactChange] = []
        ended: set[str] = set()
        for i, candidate in enumerate(candidates):
            decision = decisions.get(i + 1)
            action = decision.action if decision else "ADD"
            by_alias = {a.upper(): f for a, f in aliases[i]}
            old = by_alias.get((decision.fact or "").strip().upper()) if decision else None
            reason = decision.reason if decision else "nothing similar was stored"
            sources = sources_of(candidate, messages)
            if action == "NONE":
                continue
            if action in ("UPDATE", "DELETE") and (old is None or old.id in ended):
                if action == "DELETE":
                    continue  # another candidate of this batch already ended it
                action, old = "ADD", None  # the fact it replaces was replaced by another candidate: keep both new
            new = None if action == "DELETE" else fact_of(candidate, sources)
            kind = {"ADD": "add", "UPDATE": "update", "DELETE": "delete"}[action]
            changes.append(FactChange(kind=kind, by="consolidator", group_id=group, fact=new,  # type: ignore[arg-type]
                                      old_fact_id=old.id if old else None, reason=reason,
                                      message_ids=tuple(m.id for m in sources),
                                      valid_at=min(m.created_at for m in sources)))
            if old is not None:
                ended.add(old.id)
                self._ended[old.id] = old.text
        return changes

    def _candidates(self, found: Sequence[CandidateFact]) -> list[CandidateFact]:
        """Confident candidates, without exact duplicates of each other or of a current fact."""
        kept: list[CandidateFact] = []
        hashes: set[str] = set()
        for candidate in found:
            digest = fact_hash(candidate.text)
            if candidate.confidence < self.settings.min_confidence or digest in hashes:
                continue
            hashes.add(digest)
            kept.append(candidate)
        stored = self.facts.current_hashes([fact_hash(c.text) for c in kept])
        return [c for c in kept if fact_hash(c.text) not in stored]

    # -- the background thread -----------------------------------------------------------------

    def turn_ended(self, committed: int) -> None:
        """A turn ended with `committed` messages saved: wake the thread if consolidation is due."""
        if self.settings.mode == "off":
            return
        with self._cond:
            self._committed = committed  # from the agent's own thread, in order (a rewind lowers it)
            self._turns_waiting += 1
            self._last_turn = time.monotonic()
            self._start()
            self._cond.notify_all()

    def opened(self, committed: int) -> None:
        """The agent was opened with `committed` messages: what an earlier session left waiting is consolidated
        after the first turn (or, in idle mode, once the agent is idle), never while it is being opened."""
        if self.settings.mode == "off":
            return
        with self._cond:
            self._committed = committed
            if self.pending(committed):
                self._turns_waiting = max(self._turns_waiting, self.settings.batch_turns - 1)
                if self.settings.mode == "idle":
                    self._start()

    def _start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._stopping = False
            self._thread = threading.Thread(target=self._loop, daemon=True, name="agentos-facts")
            self._thread.start()

    def _due(self) -> float | None:
        """0 when a run is due now, seconds to wait before it may be, or None to wait for the next turn."""
        if not self.pending(self._committed):
            return None
        now = time.monotonic()
        if now < self._retry_at:
            return self._retry_at - now
        mode = self.settings.mode
        if mode == "turn" and self._turns_waiting:
            return 0.0
        if mode == "batch" and self._turns_waiting >= self.settings.batch_turns:
            return 0.0
        if mode == "idle":
            quiet = now - self._last_turn
            return max(0.0, self.settings.idle_seconds - quiet)
        return None

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._stopping:
                    wait = self._due()
                    if wait == 0.0:
                        break
                    self._cond.wait(wait)
                if self._stopping:
                    return
                committed, self._turns_waiting, self._busy = self._committed, 0, True
            try:
                self.run(committed, stop=lambda: self._stopping)
                self.last_error = None
            except ProviderError as exc:
                self._retry_at = time.monotonic() + RETRY_AFTER_SECONDS
                self.last_error = str(exc)
                self._emit(FactsNotice(text=f"fact consolidation will try again later: {exc}", level="warning"))
            except (LeaseLostError, ReadOnlyAgentError) as exc:
                self.last_error = str(exc)
                return
            except AgentOSError as exc:
                self._retry_at = time.monotonic() + RETRY_AFTER_SECONDS
                self.last_error = str(exc)
                self._emit(FactsNotice(text=f"fact consolidation stopped for now: {exc}", level="error"))
            except Exception as exc:  # noqa: BLE001 - background work never takes the agent down
                self._retry_at = time.monotonic() + RETRY_AFTER_SECONDS
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.exception("fact consolidation failed")
                self._emit(FactsNotice(text=f"fact consolidation failed: {self.last_error}", level="error"))
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until the thread has nothing due (tests, benchmarks, a foreground run); False on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._busy or (self._thread is not None and self._thread.is_alive() and self._due() == 0.0):
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(left if left is not None else 0.5)
        return True

    def stop(self, timeout: float | None = None) -> bool:
        """Stop the thread after the batch it is in (a batch cut short is redone next time); False if it is still
        waiting for a model after `timeout` seconds (default STOP_WAIT_SECONDS; it then writes nothing more)."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        thread = self._thread
        if thread is not None:
            thread.join(STOP_WAIT_SECONDS if timeout is None else timeout)
        with self._write_lock:  # a write under way ends; none starts after this
            pass
        return thread is None or not thread.is_alive()

    @property
    def running(self) -> bool:
        return self._busy
