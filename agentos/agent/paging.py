"""Carries out the pager's plans for one agent: counts, the pressure alert, summaries, eviction.

It reads the agent through a `PagerView` and returns what to change (an alert to append, a
`Compaction`, a new `Calibration`); the agent's `TurnState` applies it. It never touches the agent.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentos.agent.prompts import SUMMARY_ID, PromptRenderer
from agentos.agent.state import PagerSettings
from agentos.agent.turn_state import Calibration, Compaction
from agentos.errors import ProviderError
from agentos.events import MessagesEvicted, Notice
from agentos.messages import Message, Usage
from agentos.pager import ALERT_NAME, Budget, Counts, Plan, Reason, plan
from agentos.providers import prefix_cache
from agentos.providers.base import ModelRequest, Provider, complete
from agentos.providers.models import LOCAL_FAMILIES
from agentos.tokens import MESSAGE_OVERHEAD, EstimateCounter, MessageSizes, TokenCounter, count_message, counter_for

LINE_LIMIT = 2000  # characters of one message in the summarizer's transcript
# The least a local server's summary is waited for: a CPU model takes minutes, and a single-slot server makes the
# next call wait for an abandoned one anyway (the provider's read timeout still ends a server that stops sending).
LOCAL_SUMMARY_TIMEOUT_S = 600.0
MIN_KEPT_CHARS = 48  # a truncated message keeps at least its start: never cut to nothing
_MARKER = re.compile(r"\[(\d+) earlier messages were removed from context without a summary[^\]]*\]\s*$")


@dataclass(frozen=True)
class PagerView:
    """What the pager reads of an agent for one decision."""

    request: ModelRequest  # the request the agent would send now (summary first, then the context)
    context: tuple[Message, ...]
    summary: str
    message_count: int
    alerted: bool
    calibration: Calibration


@dataclass(frozen=True)
class BeforeCall:
    """The pager's decision before a model call: the pressure flag, and an alert or a compaction."""

    alerted: bool
    alert: Message | None = None
    notice: Notice | None = None
    compaction: Compaction | None = None


def truncation_note(kept: int, length: int) -> str:
    """What a truncated message ends with."""
    return f"\n[truncated by the pager: {kept:,} of {length:,} characters shown; all of it is in recall memory]"


def _marker(previous: str, count: int, limit_chars: int) -> str:
    """The previous summary plus one merged marker line for `count` more unsummarized messages."""
    match = _MARKER.search(previous)
    if match:
        count += int(match.group(1))
        previous = previous[: match.start()].rstrip()
    line = f"[{count} earlier messages were removed from context without a summary; they remain in recall memory.]"
    room = max(0, limit_chars - len(line) - 1)
    previous = previous if len(previous) <= room else previous[: max(0, room - 1)] + "…"
    return f"{previous}\n{line}".strip()


def _call(provider: Provider, request: ModelRequest, timeout: float) -> str:
    """One model call that gives up after `timeout` seconds (the call is left to finish in the background)."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["text"] = complete(provider, request).text
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller
            box["error"] = exc

    worker = threading.Thread(target=run, daemon=True, name="agentos-summarizer")
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise TimeoutError(f"no answer within {timeout:g} s")
    if "error" in box:
        raise box["error"]
    return str(box["text"])


def _continued(provider: Provider, request: ModelRequest, timeout: float) -> str:
    """A summary asked as a continuation of the main request; "" when it gave none (the usual request follows)."""
    try:
        return prefix_cache.usable(_call(provider, request, timeout))
    except ProviderError:  # longer than the server's window after all, say; a timeout is not tried twice
        return ""


class Pager:
    """One agent's pager: counts its context, alerts under pressure and plans and writes compactions."""

    def __init__(self, model: str, settings: PagerSettings, prompts: PromptRenderer, window: int,
                 summarizer: Callable[[], Provider]) -> None:
        self.settings = settings
        self.prompts = prompts
        self.window = window
        self.summarizer = summarizer  # the model that writes summaries (the agent's "summary" role)
        self._base = counter_for(model)
        prompts.fit_window(window, self._base)  # blocks too big for the window are shown cut, never lock the agent out
        self.sizes = MessageSizes(self._base)
        self._counters: dict[float | None, TokenCounter] = {}
        self.seconds = 0.0  # time spent in the pager, summaries included
        self._tools_key: tuple[str, ...] | None = None
        self._tools_text = ""
        self._static: tuple[str | None, TokenCounter | None, int] = (None, None, 0)

    # -- budget and counts ---------------------------------------------------------------------

    def counter(self, calibration: Calibration) -> TokenCounter:
        """The token counter under the agent's calibration."""
        if not isinstance(self._base, EstimateCounter):
            return self._base
        ratio = calibration.tokens_per_byte
        if ratio not in self._counters:
            self._counters = {ratio: EstimateCounter(ratio)}
        return self._counters[ratio]

    def budget(self) -> Budget:
        s, window = self.settings, self.window
        return Budget(window=window, warn_at=s.warn_at, evict_at=s.evict_at, target=s.target,
                      keep_last=s.keep_last, summary_tokens=max(32, int(window * s.summary_fraction)))

    def _tools(self, tools: list[Any]) -> str:
        key = tuple(t.name for t in tools)
        if key != self._tools_key:
            self._tools_key = key
            self._tools_text = json.dumps([t.openai_schema() for t in tools], separators=(",", ":"))
        return self._tools_text

    def _static_tokens(self, text: str, counter: TokenCounter) -> int:
        """Tokens of the byte-stable instructions, counted once per counter."""
        if self._static[0] is not text or self._static[1] is not counter:
            self._static = (text, counter, counter.count(text))
        return self._static[2]

    def counts(self, request: ModelRequest, calibration: Calibration, *, offset: bool = True,
               fixed_only: bool = False) -> Counts:
        """Token counts per part of a request; `fixed_only` skips the messages."""
        counter = self.counter(calibration)
        messages = [] if fixed_only else request.messages
        summary = 0
        if messages and messages[0].id == SUMMARY_ID:
            summary, messages = self.sizes.tokens(messages[0], counter), messages[1:]
        return Counts(
            system=self._static_tokens(request.system_static, counter),
            memory=counter.count(request.system_dynamic),
            tools=counter.count(self._tools(request.tools)),
            summary=summary,
            messages=self.sizes.all_tokens(messages, counter) if messages else (),
            offset=calibration.offset if offset else 0,
        )

    def _message_bytes(self, messages: list[Message]) -> int:
        """UTF-8 size of a request's messages (the summary apart, so the context's sizes stay kept)."""
        if messages and messages[0].id == SUMMARY_ID:
            return self.sizes.nbytes(messages[0]) + self.sizes.total_nbytes(messages[1:])
        return self.sizes.total_nbytes(messages)

    def observe(self, request: ModelRequest, usage: Usage, calibration: Calibration) -> Calibration:
        """The calibration that anchors the estimate to the input tokens the provider reported for `request`."""
        started = time.perf_counter()
        try:
            reported = usage.input_tokens
            if reported <= 0:
                return calibration
            counter = self.counter(calibration)
            nbytes = 0
            if isinstance(counter, EstimateCounter):  # only the estimate learns from bytes
                texts = [request.system_static, request.system_dynamic, self._tools(request.tools)]
                nbytes = sum(len(t.encode("utf-8")) for t in texts) + self._message_bytes(request.messages)
            learned = counter.recalibrated(nbytes, reported - MESSAGE_OVERHEAD * len(request.messages))
            ratio = learned.tokens_per_byte if isinstance(learned, EstimateCounter) and learned.calibrated else None
            updated = Calibration(ratio, 0)
            return Calibration(ratio, reported - self.counts(request, updated, offset=False).total)
        finally:
            self.seconds += time.perf_counter() - started

    def breakdown(self, view: PagerView, last_reported: int | None) -> dict[str, Any]:
        """The context by part, in tokens, with the window and thresholds."""
        c, b = self.counts(view.request, view.calibration), self.budget()
        return {
            "window": b.window, "counter": self.counter(view.calibration).name, "system": c.system,
            "memory": c.memory, "tools": c.tools, "summary": c.summary, "messages": sum(c.messages),
            "message_count": len(c.messages), "correction": c.offset, "total": c.total,
            "last_reported": last_reported, "hidden": max(0, view.message_count - len(view.context)),
            "warn_at": b.warn_at, "evict_at": b.evict_at, "target": b.target, "keep_last": b.keep_last,
        }

    # -- plans ---------------------------------------------------------------------------------

    def preflight(self, request: ModelRequest, calibration: Calibration) -> str | None:
        """Why no turn can run (the system prompt alone exceeds the window), or None."""
        c, b = self.counts(request, calibration, fixed_only=True), self.budget()
        if c.fixed <= b.window:
            return None
        return plan([], Counts(c.system, c.memory, c.tools), b).reason + (
            ". Shorten the memory blocks, remove tools, or use a model with a larger window.")

    def fixed_over_share(self, request: ModelRequest, calibration: Calibration) -> str | None:
        """Why the fixed part of `request` (instructions, blocks, tool schemas) leaves too little room for the
        conversation: over the share of the window a compaction aims for (`target`); None when it fits."""
        c, b = self.counts(request, calibration, fixed_only=True), self.budget()
        ceiling = b.tokens(b.target)
        if c.fixed <= ceiling:
            return None
        return (f"the fixed part of the prompt (instructions, memory blocks and tool schemas) would take "
                f"{c.fixed:,} tokens, more than {round(100 * b.target)}% of the {b.window:,}-token context window "
                f"({ceiling:,}), leaving too little room for the conversation")

    def before_call(self, view: PagerView) -> BeforeCall:
        """Check the budget before a model call: alert once per pressure episode, compact past the threshold."""
        started = time.perf_counter()
        try:
            p = plan(view.context, self.counts(view.request, view.calibration), self.budget(), alerted=view.alerted)
            if p.action == "alert":
                b = self.budget()
                alert = Message(role="user", name=ALERT_NAME, content=self.prompts.render(
                    "pressure_alert.j2", percent=round(100 * p.tokens_before / b.window),
                    used=f"{p.tokens_before:,}", window=f"{b.window:,}"))
                notice = Notice(text=f"memory pressure: {p.tokens_before:,} of {b.window:,} tokens; the agent "
                                "was asked to save what matters", data={"tokens": p.tokens_before, "window": b.window})
                return BeforeCall(alerted=p.alerted, alert=alert, notice=notice)
            if p.action == "evict":
                return BeforeCall(alerted=p.alerted, compaction=self._compaction(view, p))  # None: nothing changed
            return BeforeCall(alerted=p.alerted)
        finally:
            self.seconds += time.perf_counter() - started

    def compact(self, view: PagerView, reason: Reason = "manual", attempt: int = 1) -> Compaction | Notice:
        """Plan and write a forced compaction: after a provider overflow, or on request (evicts all it may)."""
        started = time.perf_counter()
        try:
            counts = self.counts(view.request, view.calibration)
            p = plan(view.context, counts, self.budget(), alerted=view.alerted, reason=reason, attempt=attempt)
            compaction = self._compaction(view, p) if p.action == "evict" else None
            if compaction is not None:
                return compaction
            why = p.reason or "the context is already small"
            if p.action == "evict":
                why = "no message can go, and those it could cut are too short to shorten"
            return Notice(text=f"nothing to compact: {why}", data={"tokens": p.tokens_before})
        finally:
            self.seconds += time.perf_counter() - started

    def _compaction(self, view: PagerView, p: Plan) -> Compaction | None:
        """The context and summary after carrying out `p`, and the event that reports it; None when carrying it
        out would change nothing (no message to evict, and those to cut too short to shorten)."""
        before = self.counts(view.request, view.calibration)
        context = list(view.context)
        dropped = {index for index, _ in p.truncate if context[index].name == ALERT_NAME}  # the pager's own note goes
        cut = 0
        for index, keep in p.truncate:
            if index not in dropped:
                shorter = self._truncated(context[index], keep, view.calibration)
                cut += shorter is not context[index]
                context[index] = shorter
        if not p.evict and not cut and not dropped:
            return None
        context = [m for index, m in enumerate(context) if index not in dropped]
        evicted = context[: p.evict]
        summary, note = view.summary, ""
        if evicted:
            summary, note = self._summarize(view, evicted, p.summary_tokens)
            context = context[p.evict :]
        if cut:
            note = f"{note}; " if note else ""
            note += f"truncated {cut} oversized message(s) that stay in context"
        after = self._total_after(before, context, summary, view)
        alerted = p.alerted and after > self.budget().tokens(self.settings.warn_at)
        event = MessagesEvicted(count=len(evicted), tokens_before=before.total, tokens_after=after,
                                summarized=bool(evicted) and not note.startswith("not summarized"), note=note)
        return Compaction(context=tuple(context), summary=summary, alerted=alerted, event=event)

    def _total_after(self, before: Counts, context: list[Message], summary: str, view: PagerView) -> int:
        """The request's size once the compaction is applied."""
        counter = self.counter(view.calibration)
        hidden = max(0, view.message_count - len(context))
        message = self.prompts.summary_message(summary, hidden)
        after = Counts(before.system, before.memory, before.tools,
                       summary=self.sizes.tokens(message, counter) if message else 0,
                       messages=tuple(self.sizes.tokens(m, counter) for m in context), offset=before.offset)
        return after.total

    def _truncated(self, message: Message, keep_tokens: int, calibration: Calibration) -> Message:
        """A copy of `message` cut to about `keep_tokens` (the full text stays in recall)."""
        size = max(1, count_message(self.counter(calibration), message))
        content = message.content
        keep = min(len(content), max(MIN_KEPT_CHARS, int(len(content) * keep_tokens / size) - 120))
        tail = truncation_note(keep, len(content))
        if keep + len(tail) >= len(content):
            return message  # cutting would not make it shorter
        return message.model_copy(update={"content": content[:keep] + tail})

    # -- the summary ---------------------------------------------------------------------------

    def _summarize(self, view: PagerView, evicted: list[Message], limit: int) -> tuple[str, str]:
        """The new running summary (at most `limit` tokens) and an empty note, or a plain marker and why."""
        previous = view.summary
        counter = self.counter(view.calibration)
        fallback_chars = max(len(previous), self.budget().summary_tokens * 4)
        wrapper = self.prompts.render("summary_message.j2", summary="", hidden=view.message_count)
        limit = max(16, limit - count_message(counter, Message.user(wrapper)))
        try:
            provider = self.summarizer()
            local = getattr(provider, "name", None) in LOCAL_FAMILIES
            timeout = max(self.settings.summary_timeout_s, LOCAL_SUMMARY_TIMEOUT_S if local else 0)
            shared = self._continuation(provider, view, evicted, limit) if local else None
            text = _continued(provider, shared, timeout) if shared is not None else ""
            if not text:
                text = _call(provider, self._summary_request(provider, previous, evicted, limit, counter), timeout).strip()
        except Exception as exc:  # noqa: BLE001 - any summarizer failure degrades to a marker
            why = f"the summarizer failed ({type(exc).__name__}: {str(exc)[:160]})"
            if isinstance(exc, TimeoutError):
                why = f"the summarizer timed out ({exc})"
            return _marker(previous, len(evicted), fallback_chars), f"not summarized: {why}; evicted with a marker"
        if not text:
            return _marker(previous, len(evicted), fallback_chars), "not summarized: the summary was empty; evicted with a marker"
        size = counter.count(text)
        if size > limit:
            why = f"the summary was too long ({size:,} tokens, limit {limit:,})"
            return _marker(previous, len(evicted), fallback_chars), f"not summarized: {why}; evicted with a marker"
        return text, ""

    def _continuation(self, provider: Provider, view: PagerView, evicted: list[Message], limit: int) -> ModelRequest | None:
        """For a local server of the agent's own model, the summary asked as a continuation of the main request, so
        its prompt cache keeps the main prompt's prefix (`providers.prefix_cache`); None where that does not fit."""
        if self.settings.summary_model:
            return None
        summary_first = bool(view.request.messages) and view.request.messages[0].id == SUMMARY_ID
        request = prefix_cache.continuation(view.request, evicted, words=max(10, int(limit * 0.6)),
                                            max_output_tokens=limit, summary_first=summary_first)
        window = getattr(provider, "context_window", 0) or self.window
        fits = request is not None and self.counts(request, view.calibration).total + limit <= window
        return request if fits else None

    def _summary_request(self, provider: Provider, previous: str, evicted: list[Message], limit: int,
                         counter: TokenCounter) -> ModelRequest:
        window = getattr(provider, "context_window", 0) or self.window
        room_tokens = max(256, int(window * 0.6) - counter.count(previous) - limit)
        lines = [self._line(m) for m in evicted]
        transcript = self._fit(lines, room_tokens, counter)
        max_words = max(10, int(limit * 0.6))
        return ModelRequest(
            system_static=self.prompts.render("summarizer.j2", max_words=max_words),
            system_dynamic="",
            messages=[Message.user(self.prompts.render(
                "summarize.j2", previous=previous, transcript=transcript, count=len(evicted), max_words=max_words))],
            max_output_tokens=limit,
        )

    @staticmethod
    def _line(m: Message) -> str:
        if m.role == "tool":
            text = f"tool result ({m.name}{', error' if m.is_error else ''}): {m.content}"
        elif m.tool_calls:
            calls = "; ".join(f"{c.name}({c.arguments})" for c in m.tool_calls)
            text = f"{m.role}: {m.content} [called {calls}]".replace(":  [", ": [")
        else:
            text = f"{m.role}: {m.content}"
        return text if len(text) <= LINE_LIMIT else text[:LINE_LIMIT] + " […]"

    @staticmethod
    def _fit(lines: list[str], room_tokens: int, counter: TokenCounter) -> str:
        """Join transcript lines, dropping lines from the middle if they exceed `room_tokens`."""
        sizes = [counter.count(line) + 1 for line in lines]
        if sum(sizes) <= room_tokens:
            return "\n".join(lines)
        head: list[str] = []
        tail: list[str] = []
        used, i, j, from_head = 0, 0, len(lines) - 1, True
        while i <= j:
            index = i if from_head else j
            if used + sizes[index] > room_tokens:
                break
            used += sizes[index]
            if from_head:
                head.append(lines[i])
                i += 1
            else:
                tail.insert(0, lines[j])
                j -= 1
            from_head = not from_head
        omitted = len(lines) - len(head) - len(tail)
        return "\n".join(head + [f"[... {omitted} messages omitted ...]"] + tail)
