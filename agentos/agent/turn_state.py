"""The one owner of an agent's mutable state: context, summary, blocks, counters and token calibration.

Everything else reads it, or hands it a change to apply: the pager a `Compaction`, the pager's
token count a `Calibration`, the memory tools an edit, the loop a message. It also gathers what
changed since the last save into the rows of the next step write.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from agentos.agent.context import unanswered_calls
from agentos.agent.forget_state import StateCut, add_ranges
from agentos.agent.secret_tally import SecretTally
from agentos.agent.shared_link import USER_RETRIES, SharedConflict, SharedLink, conflict_message
from agentos.agent.state import AgentSettings, AgentState
from agentos.blocks import Block, CoreMemory, MemoryEdit
from agentos.errors import MemoryEditError
from agentos.events import MessagesEvicted
from agentos.memory.secret_gate import gate_of
from agentos.messages import Message, utc_now
from agentos.storage.audit import AuditEntry
from agentos.storage.audit import change as audit_change
from agentos.storage.records import message_row
from agentos.storage.store import Rows, StepWrite


@dataclass(frozen=True)
class Calibration:
    """What the token estimate learned from the provider: tokens per byte (None until measured), and
    the provider's count minus the estimate for the last request."""

    tokens_per_byte: float | None = None
    offset: int = 0


@dataclass(frozen=True)
class Compaction:
    """What a compaction changes, as the pager returns it: the context and summary that replace the old ones."""

    context: tuple[Message, ...]
    summary: str
    alerted: bool
    event: MessagesEvicted


class TurnState:
    """An agent's state between saves; `prepare_save` turns what changed into one `StepWrite`."""

    def __init__(self, state: AgentState, context: Iterable[Message]) -> None:
        self._state = state.model_copy(deep=True)
        self._context: list[Message] = list(context)
        self._memory = CoreMemory([b.model_copy() for b in self._state.blocks])
        self._new_messages: list[tuple[int, Message]] = []
        self._new_edits: list[MemoryEdit] = []
        self._unreported: list[MemoryEdit] = []
        self._changed = False  # the context, summary or settings changed since the last save
        self._pending: StepWrite | None = None  # handed to storage, not yet committed
        self._pending_ids: list[str] = []
        self._audit: list[AuditEntry] = []  # audit entries that go with the next save
        self._secrets = SecretTally()
        self._shared: SharedLink | None = None  # the shared blocks' rows (the truth; the blocks here are copies)

    # -- reading -------------------------------------------------------------------------------

    @property
    def id(self) -> str:
        return self._state.id

    @property
    def name(self) -> str:
        return self._state.name

    @property
    def model(self) -> str:
        return self._state.model

    @property
    def settings(self) -> AgentSettings:
        """The agent's settings (read them; change them through this object's setters)."""
        return self._state.settings

    @property
    def context(self) -> tuple[Message, ...]:
        return tuple(self._context)

    def last(self) -> Message | None:
        return self._context[-1] if self._context else None

    @property
    def summary(self) -> str:
        return self._state.summary

    @property
    def message_count(self) -> int:
        """Messages ever saved (also the `seq` of the next one)."""
        return self._state.message_count

    @property
    def recall_count(self) -> int:
        """Messages in recall memory: saved and still stored (see `AgentState.recall_count`)."""
        return self._state.recall_count

    @property
    def hidden_count(self) -> int:
        """Messages in recall memory that are no longer in the context."""
        return max(0, self._state.recall_count - len(self._context))

    @property
    def rev(self) -> int:
        return self._state.rev

    @property
    def alerted(self) -> bool:
        return self._state.memory_pressure_alerted

    @property
    def calibration(self) -> Calibration:
        return Calibration(self._state.token_ratio, self._state.token_offset)

    @property
    def compactions(self) -> int:
        return self._state.compactions

    @property
    def last_memory_edit_at(self) -> datetime | None:
        return self._state.last_memory_edit_at

    def blocks(self) -> list[Block]:
        """Copies of the core memory blocks, in display order."""
        return [b.model_copy() for b in self._memory]

    def block(self, label: str) -> Block:
        return self._memory.get(label).model_copy()

    def blocks_view(self) -> list[Block]:
        """The blocks themselves, for rendering the prompt without copying (never to be changed)."""
        return list(self._memory)

    def snapshot(self) -> AgentState:
        """The state as it would be saved now."""
        state = self._state.model_copy(deep=True)
        state.in_context_ids = [m.id for m in self._context]
        state.blocks = self.blocks()
        return state

    @property
    def has_changes(self) -> bool:
        """Whether anything changed since the last save (messages, edits, the context or settings)."""
        return bool(self._new_messages or self._new_edits or self._changed or self._pending)

    # -- changing ------------------------------------------------------------------------------

    @property
    def secrets(self) -> SecretTally:
        """What the secret gate removed from messages and blocks since a turn last told of it."""
        return self._secrets

    def screened(self, message: Message) -> Message:
        """`message` as the secret gate lets it be stored and sent to the model (the same one when it finds nothing)."""
        return self._secrets.screen(message, gate_of(self._state.settings))

    def append(self, message: Message) -> Message:
        """Add a message, as the secret gate lets it through, to the context; it is written to recall with the next
        save. Returns the message added."""
        message = self.screened(message)
        self._new_messages.append((self._state.message_count, message))
        self._state.message_count += 1
        self._context.append(message)
        return message

    def add_history(self, messages: Sequence[Message], in_context: int = 0) -> None:
        """Add messages to recall; only the last `in_context` of them join the context (imports, evaluations)."""
        messages = [self.screened(m) for m in messages]
        for message in messages:
            self._new_messages.append((self._state.message_count, message))
            self._state.message_count += 1
        if in_context > 0:
            self._context.extend(messages[-in_context:])
            self._changed = True

    def screen_blocks(self) -> None:
        """Pass the blocks through the secret gate (a new agent's, before it is first saved)."""
        gate = gate_of(self._state.settings)
        for block in self._memory:
            block.value = gate.redact(block.value).text

    def close_open_calls(self) -> None:
        """Give every tool call of the last reply that has no result an error result (a cut-short step)."""
        for result in unanswered_calls(self._context):
            self.append(result)

    def link_shared(self, link: SharedLink) -> None:
        """Where the shared blocks this agent uses are read and written (without it they act as private copies)."""
        self._shared = link

    def refresh_shared(self, force: bool = False) -> list[MemoryEdit]:
        """Take in what other agents changed in the shared blocks this agent uses; each change is an edit logged as
        theirs (`by="shared"`). Returns those edits."""
        seen = []
        for copy, edit in self._shared.changes(self._memory, force) if self._shared is not None else ():
            self._memory.blocks[copy.label] = copy
            self._changed = True
            if edit is not None:
                self._state.last_memory_edit_at = edit.at
                seen.append(edit)
        self._new_edits += seen  # logged with the next save; not reported as edits of a tool call (callers report them)
        return seen

    def put_block(self, block: Block) -> MemoryEdit | None:
        """Add `block`, or put it in place of the one with its label (sharing, detaching); a changed value is logged
        as the user's edit."""
        old = self._memory.blocks.get(block.label)
        self._memory.blocks[block.label] = block.model_copy()
        self._changed = True
        if old is not None and old.value == block.value:
            return None
        edit = MemoryEdit(label=block.label, old_value=old.value if old else "", new_value=block.value, by="user")
        self._new_edits.append(edit)
        self._unreported.append(edit)
        return edit

    def edit(self, change: Callable[[CoreMemory], MemoryEdit],
             refusal: Callable[[list[Block]], str | None] | None = None) -> Block:
        """Make a block edit: `change` is tried on a copy of the blocks first (the edit rules hold there), and an edit
        that grows a block is refused, unmade, when `refusal` of the blocks as they would be gives a reason. An edit
        of a shared block lands in its row first: one another edit got in before is not made (SharedConflict), except
        the user's, made again on the new value."""
        for attempt in range(USER_RETRIES):
            try:
                return self._edit(change, refusal)
            except SharedConflict as conflict:
                if conflict.by != "user" or attempt == USER_RETRIES - 1:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _edit(self, change: Callable[[CoreMemory], MemoryEdit],
              refusal: Callable[[list[Block]], str | None] | None) -> Block:
        preview = CoreMemory([b.model_copy() for b in self._memory])
        edit = change(preview)
        if refusal is not None and len(edit.new_value) > len(edit.old_value):  # only growth can crowd the window
            why = refusal(list(preview))
            if why:
                raise MemoryEditError(f"this edit was not made: {why}. Shorten a memory block, or keep the details "
                                      f"in archival memory instead.")
        kept = gate_of(self._state.settings).redact(edit.new_value)
        if kept.found:  # stored, shown in the prompt and logged without the secret
            edit.new_value = kept.text
            self._secrets.add("core memory", kept.found)
        block = self._memory.get(edit.label)
        if block.shared_id is not None and self._shared is not None:
            if not self._shared.commit(block, edit.new_value, self.id, self.name):
                self.refresh_shared(force=True)
                if self._memory.get(edit.label).shared_id is not None:  # else the shared block is gone: it is private
                    raise SharedConflict(conflict_message(edit.label, self._shared.rows.get(block.shared_id)), edit.by)
            else:
                block.shared_rev += 1
        self._memory.get(edit.label).value = edit.new_value
        self._state.last_memory_edit_at = edit.at
        self._new_edits.append(edit)
        self._audit.append(audit_change("core memory", target=edit.label,
                                        detail=f"{len(edit.old_value):,} -> {len(edit.new_value):,} chars"))
        self._unreported.append(edit)
        return self.block(edit.label)

    def note(self, entry: AuditEntry) -> None:
        """An audit entry to write with the next save."""
        self._audit.append(entry)

    def take_audit(self) -> list[AuditEntry]:
        """The audit entries made since the last call, for the save that writes them."""
        entries, self._audit = self._audit, []
        return entries

    def take_edit_reports(self) -> list[MemoryEdit]:
        """The edits made since the last call, for the turn's MemoryEdited events."""
        edits, self._unreported = self._unreported, []
        return edits

    def apply(self, compaction: Compaction) -> None:
        self._context = list(compaction.context)
        self._state.summary = compaction.summary
        self._state.memory_pressure_alerted = compaction.alerted
        self._state.compactions += 1
        self._changed = True

    def restore(self, point: AgentState, context: Sequence[Message]) -> list[MemoryEdit]:
        """Go back to a restore point: its blocks (each block it changes is logged as an edit by the user), context,
        summary and counters. Settings, tools and the token calibration stay as they are now, and so do the blocks
        shared with other agents (going back is this agent's alone)."""
        if self._new_messages or self._pending:
            raise RuntimeError("save the agent before rewinding it")
        now = {b.label: b.value for b in self._memory}
        shared = {b.label: b for b in self._memory if b.shared_id is not None}
        blocks = [shared.pop(b.label, b) for b in point.blocks] + list(shared.values())
        edits = [MemoryEdit(label=b.label, old_value=now.get(b.label, ""), new_value=b.value, by="user")
                 for b in blocks if now.get(b.label, "") != b.value]
        kept = {b.label for b in blocks}
        edits += [MemoryEdit(label=label, old_value=value, new_value="", by="user")
                  for label, value in now.items() if label not in kept]
        self._memory = CoreMemory([b.model_copy() for b in blocks])
        self._context = list(context)
        state = self._state
        state.summary, state.message_count, state.compactions = point.summary, point.message_count, point.compactions
        state.memory_pressure_alerted, state.lost_messages = point.memory_pressure_alerted, point.lost_messages
        if edits:
            state.last_memory_edit_at = edits[-1].at
        self._new_edits += edits
        self._unreported += edits
        self._changed = True
        return edits

    def forget(self, cut: StateCut, seqs: Iterable[int], shared_revs: dict[str, int] | None = None) -> None:
        """Take out what a forget request reaches (see `forget_state`) and record the seqs of the messages it took
        from recall; `shared_revs`: the revisions the shared blocks' rows moved to when they were cut the same way.
        No memory edit is logged for it: the log would keep what was forgotten."""
        if self._new_messages or self._new_edits or self._pending:
            raise RuntimeError("save the agent before forgetting")
        for label, value in cut.blocks.items():
            block = self._memory.get(label)
            block.value = value
            if label in cut.detach:  # it forgets alone: the agents it shared the block with keep theirs
                block.shared_id, block.shared_rev = None, 0
            elif shared_revs and label in shared_revs:
                block.shared_rev = shared_revs[label]
        if cut.summary is not None:
            self._state.summary = cut.summary
        kept = set(cut.context_ids)
        self._context = [m for m in self._context if m.id in kept]
        self._state.unlogged_edits = list(cut.unlogged)
        self._state.forgotten = add_ranges(self._state.forgotten, seqs)
        self._changed = True

    def calibrate(self, calibration: Calibration) -> None:
        self._state.token_ratio, self._state.token_offset = calibration.tokens_per_byte, calibration.offset

    def set_alerted(self, alerted: bool) -> None:
        self._state.memory_pressure_alerted = alerted

    def update_settings(self, **changes: object) -> AgentSettings:
        """Replace settings (validated as a whole), e.g. the embedder after a reindex or the context window."""
        merged = {**self._state.settings.model_dump(), **changes}
        self._state.settings = AgentSettings.model_validate(merged)
        self._changed = True
        return self._state.settings

    def set_model(self, spec: str) -> None:
        """Give the agent another main model (a spec its caller checked); saved with the next step."""
        self._state.model = spec
        self._changed = True

    def set_tool_names(self, names: Sequence[str]) -> None:
        self._state.tool_names = list(names)

    # -- saving --------------------------------------------------------------------------------

    def prepare_save(self, tier_rows: Callable[[list[Message]], dict[str, Rows]]) -> tuple[StepWrite, AgentState, list[str]]:
        """Move what changed into the pending step write; return it, the state it leads to and the ids
        of the messages it saves. `tier_rows` gives the tiers' rows for the new messages. New memory edits
        travel in the state itself (`unlogged_edits`) and reach the edit log once the state is saved."""
        if self._pending is None:
            self._pending = StepWrite(base_rev=self._state.rev, rev=self._state.rev + 1)
            self._state.last_active_at = utc_now()  # once per step write, so a retry writes the same state
        step = self._pending
        messages = [m for _, m in self._new_messages]
        rows_by_table = tier_rows(messages)  # first: a tier that raises leaves the step as it was
        step.add("messages", [message_row(self.id, seq, m) for seq, m in self._new_messages])
        for table, rows in rows_by_table.items():
            step.add(table, rows)
        self._state.unlogged_edits += [e.model_copy(update={"rev": step.rev}) for e in self._new_edits]
        self._pending_ids += [m.id for m in messages]
        self._new_messages, self._new_edits, self._changed = [], [], False
        state = self.snapshot()
        state.rev = step.rev
        return step, state, list(self._pending_ids)

    def saved(self, step: StepWrite, rev: int) -> None:
        """The pending step write landed: the state is at revision `rev` now."""
        self._state.rev = rev
        self._pending, self._pending_ids = None, []

    def unlogged(self) -> list[MemoryEdit]:
        """Saved edits not yet in the edit log (their state landed; the log follows with the next write)."""
        return [e for e in self._state.unlogged_edits if (e.rev or 0) <= self._state.rev]

    def logged(self, edits: list[MemoryEdit]) -> None:
        """These edits are in the edit log now (the next saved state stops carrying them)."""
        done = {(e.rev, e.label, e.at) for e in edits}
        self._state.unlogged_edits = [e for e in self._state.unlogged_edits if (e.rev, e.label, e.at) not in done]

    def rewrite_pending(self) -> None:
        """Write every pending row again at the next save (what was written may have been discarded since)."""
        if self._pending is not None:
            self._pending.written = {}
