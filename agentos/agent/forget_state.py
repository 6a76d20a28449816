"""What a forget request takes from an agent's state (pure): lines of blocks, sentences of the summary, messages of
the context, unlogged edits, and the seqs of the messages recall no longer holds. The same cut applies to the live
state and to every restore point's copy of it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from agentos.agent.state import AgentState
from agentos.blocks import MemoryEdit
from agentos.memory.forget_request import ForgetRequest

KEPT_BLOCKS = ("persona",)  # what `--all` leaves: who the agent is, not what it learnt
SUMMARY_NOTICE = "(Part of the earlier conversation was forgotten at the user's request.)"
FORGOTTEN_LABEL = "(forgotten)"  # a restore point's label that held what was forgotten


@dataclass
class StateCut:
    """What goes from one state: new block values (changed ones), the new summary (None: unchanged), the in-context
    ids kept and the unlogged edits kept, with counts for the report."""

    blocks: dict[str, str] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)
    summary: str | None = None
    sentences: int = 0
    context_ids: list[str] = field(default_factory=list)
    unlogged: list[MemoryEdit] = field(default_factory=list)
    detach: list[str] = field(default_factory=list)  # shared blocks this agent leaves (and empties) instead of cutting

    @property
    def changed(self) -> bool:
        return bool(self.blocks) or self.summary is not None


def cut_state(state: AgentState, request: ForgetRequest, gone_ids: set[str]) -> StateCut:
    """The cut of `request` on `state`, given the ids of the messages (and other rows) that go."""
    cut = StateCut(context_ids=[i for i in state.in_context_ids if i not in gone_ids])
    cut.unlogged = [e for e in state.unlogged_edits if not _edit_goes(e, request)]
    if request.everything:
        cut.context_ids, cut.unlogged = [], []
        emptied = [b for b in state.blocks if b.label not in KEPT_BLOCKS and b.value]
        cut.blocks = {b.label: "" for b in emptied}
        cut.detach = [b.label for b in emptied if b.shared_id is not None]
        cut.lines = {b.label: len(b.value.split("\n")) for b in emptied}
        cut.summary = "" if state.summary else None
        return cut
    if request.by_content:
        for block in state.blocks:
            value, lines = request.cut_lines(block.value)
            if lines:
                cut.blocks[block.label], cut.lines[block.label] = value, lines
        if state.summary:
            summary, sentences = request.cut_sentences(state.summary.replace(SUMMARY_NOTICE, "").strip())
            if sentences:
                cut.summary = f"{summary} {SUMMARY_NOTICE}".strip()
                cut.sentences = sentences
        return cut
    evicted = gone_ids - set(state.in_context_ids)
    if request.by_period and state.summary and evicted and state.summary != SUMMARY_NOTICE:
        cut.summary, cut.sentences = SUMMARY_NOTICE, 1  # what a summary says cannot be told apart by time
    return cut


def _edit_goes(edit: MemoryEdit, request: ForgetRequest) -> bool:
    return request.everything or request.matches(edit.old_value) or request.matches(edit.new_value) or \
        request.within(edit.at)


def applied(state: AgentState, cut: StateCut) -> AgentState:
    """A copy of `state` with the cut made (a restore point's state; the live one goes through `TurnState`)."""
    copy = state.model_copy(deep=True)
    for block in copy.blocks:
        if block.label in cut.blocks:
            block.value = cut.blocks[block.label]
            if block.label in cut.detach:
                block.shared_id, block.shared_rev = None, 0
    if cut.summary is not None:
        copy.summary = cut.summary
    copy.in_context_ids = list(cut.context_ids)
    copy.unlogged_edits = list(cut.unlogged)
    return copy


def add_ranges(ranges: Iterable[Iterable[int]], seqs: Iterable[int]) -> list[list[int]]:
    """Seq ranges `[start, end)` (merged, sorted) covering `ranges` and `seqs`."""
    spans = sorted([list(r)[:2] for r in ranges] + [[s, s + 1] for s in set(seqs)])
    merged: list[list[int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged

