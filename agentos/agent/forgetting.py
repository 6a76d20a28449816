"""Forgetting on request, in one agent: what goes from every tier (the plan and its preview), then taking it out.

Carrying out a request, as the agent's writer: (1) the state loses the lines, sentences and context messages, and
records the request and the seqs that go, in one save, so that a crash from here on is finished by the next open
(the same request is planned again; what is already gone is simply not found); (2) the rows go from every table:
messages, each tier's tables, the edit log, the audit log; (3) each restore point's copy of the state gets the same
cut, and points whose label or moment is forgotten are relabelled or removed; (4) the state saves without the
request; (5) every table touched loses its older versions and has its full-text index built again.
"""

from __future__ import annotations

import json
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from agentos.agent.forget_state import FORGOTTEN_LABEL, StateCut, applied, cut_state
from agentos.agent.state import AgentState
from agentos.memory.forget_request import ForgetError, ForgetRequest
from agentos.storage.forget_rows import (
    SHARED_TABLES,
    TableCut,
    clear_pending,
    leave_no_copy,
    mark_pending,
    pending,
    read_agent_rows,
    remove,
    rewrite,
    select,
)
from agentos.storage.schemas import state_table_name
from agentos.storage.shared_blocks import SHARED_TABLE

PREVIEWS = 3  # snippets shown per tier
SHARED_RETRIES = 20  # a shared block's row that other agents keep editing is cut again this often
SNIPPET_CHARS = 70
NOT_FORGOTTEN = ("export files written before now still hold what they held; delete them yourself",
                 "the model provider's side: what was sent to the model before now (its logs, if it keeps them)")


@dataclass
class ForgetPlan:
    """What a request reaches in one agent: rows per table (with what each table holds), the state's cut, the
    messages' seqs, and the restore points it changes."""

    request: ForgetRequest
    cuts: dict[str, TableCut]
    labels: dict[str, str]
    state: StateCut
    seqs: list[int]
    gone_ids: set[str]
    points: pa.Table | None = None  # the restore points as they will be (None: unchanged)
    points_changed: int = 0
    points_removed: int = 0
    previews: dict[str, list[str]] = field(default_factory=dict)
    shared_rows: list[str] = field(default_factory=list)  # the shared blocks' rows it cut

    def counts(self) -> dict[str, int]:
        """Rows that go, by what holds them (tiers, the edit log...), plus the state's lines and restore points."""
        counts: dict[str, int] = {}
        for name, cut in self.cuts.items():
            if cut.doomed:
                what = self.labels.get(name, name)
                counts[what] = counts.get(what, 0) + len(cut.doomed)
        for label, lines in self.state.lines.items():
            counts[f"core memory block '{label}' (lines)"] = lines
        if self.state.summary is not None:
            counts["summary (sentences)"] = max(1, self.state.sentences)
        if self.points_changed or self.points_removed:
            counts["restore points"] = self.points_changed + self.points_removed
        return counts

    @property
    def rows(self) -> int:
        return sum(len(c.doomed) for c in self.cuts.values()) + self.points_removed

    @property
    def empty(self) -> bool:
        return not self.counts()


def _snippet(request: ForgetRequest, value: Any) -> str | None:
    """The matching part of a value, with a little around it, on one line."""
    texts = value if isinstance(value, list) else [value]
    for text in texts:
        if not isinstance(text, str) or not text:
            continue
        flat = " ".join(text.split())
        if request.text is None:
            return flat[:SNIPPET_CHARS] + ("…" if len(flat) > SNIPPET_CHARS else "")
        found = request.pattern().search(flat)
        if found:
            start = max(0, found.start() - 25)
            piece = flat[start:start + SNIPPET_CHARS]
            return ("…" if start else "") + piece + ("…" if start + SNIPPET_CHARS < len(flat) else "")
    return None


def _pair_calls(cut: TableCut) -> set[str]:
    """Messages that go take their tool-call partners with them (a call's results, a result's call and its other
    results), so that the history and the context stay well-formed; the ids newly marked."""
    rows = cut.rows.to_pylist()
    caller: dict[int, int] = {}  # a result's position -> its call's message
    results: dict[int, list[int]] = {}  # a call's message -> its results
    made: dict[str, int] = {}
    for position, row in enumerate(rows):
        for call in json.loads(row.get("tool_calls") or "[]"):
            made[str(call.get("id"))] = position
    for position, row in enumerate(rows):
        call = made.get(str(row.get("tool_call_id"))) if row.get("tool_call_id") else None
        if call is not None:
            caller[position] = call
            results.setdefault(call, []).append(position)
    marked, new = set(cut.doomed), set()
    waiting = list(marked)
    while waiting:
        position = waiting.pop()
        partners = results.get(position, []) + ([caller[position]] if position in caller else [])
        for partner in partners:
            if partner not in marked:
                marked.add(partner)
                cut.doomed.append(partner)
                new.add(rows[partner]["id"])
                waiting.append(partner)
    return new


def plan_forget(session: Any, request: ForgetRequest) -> ForgetPlan:
    """What `request` reaches in the agent of `session` (nothing is changed)."""
    db, agent_id = session.store.db, session.id
    labels = {"messages": "messages", "memory_edits": "memory edit log entries", "audit_log": "audit log entries",
              **{name: f"{what} rows" for name, what in session.tiers.stored_tables().items()}}
    if not session.read_only:  # a rewrite a crash cut short is finished first (see `replace_table`)
        for name in [*labels, session.history.table_name]:
            db.recover(name)
    cuts: dict[str, TableCut] = {}
    for name in labels:
        rows = read_agent_rows(db, name, agent_id)
        if rows is not None and rows.num_rows:
            cuts[name] = TableCut(name, rows)
    gone: set[str] = set()
    if request.fact_id is not None:
        gone |= _fact_chain(cuts, request.fact_id)
    matches: Callable[[Any], bool] = request.matches
    messages = cuts.get("messages")
    message_ids = set(messages.rows.column("id").to_pylist()) if messages is not None else set()
    while True:
        new: set[str] = set()
        for name, cut in cuts.items():  # a message goes for what it says or when, never for a row naming it
            new |= select(cut, matches, request.within, set() if name == "messages" else gone, request.everything)
        if messages is not None:
            new |= _pair_calls(messages)
            new -= message_ids - {r["id"] for r in messages.doomed_rows()}  # rows made for a message that stays
        if not new - gone:
            break
        gone |= new
    seqs = [int(r["seq"]) for r in messages.doomed_rows()] if messages is not None else []
    state = session.state.snapshot()
    plan = ForgetPlan(request, cuts, labels, cut_state(state, request, gone), seqs, gone)
    _plan_points(session, plan)
    for name, cut in cuts.items():
        shown = [s for row in cut.doomed_rows()[: PREVIEWS * 4]
                 for s in [next((x for x in (_snippet(request, row.get(c)) for c in ("content", "text", "new_value",
                                                                                    "old_value", "name"))
                                 if x), None)] if s]
        if shown:
            plan.previews[labels.get(name, name)] = shown[:PREVIEWS]
    return plan


def _fact_chain(cuts: dict[str, TableCut], fact_id: str) -> set[str]:
    """The fact `fact_id` and every version of it (linked by supersedes), marked; their ids."""
    facts = next((c for name, c in cuts.items() if name.startswith("facts_")), None)
    rows = facts.rows.to_pylist() if facts is not None else []
    if not any(r["id"] == fact_id for r in rows):
        raise ForgetError(f"no fact {fact_id!r} in this agent's fact memory. See the ids with: agentos facts NAME")
    chain, grew = {fact_id}, True
    while grew:
        grew = False
        for row in rows:
            linked = {row["id"], row.get("supersedes"), row.get("superseded_by")} - {None}
            if linked & chain and not linked <= chain:
                chain |= linked
                grew = True
    assert facts is not None
    facts.doomed += [i for i, r in enumerate(rows) if r["id"] in chain]
    return chain


def _plan_points(session: Any, plan: ForgetPlan) -> None:
    """The restore points with the same cut made (or gone, when their moment is forgotten)."""
    rows = read_agent_rows(session.store.db, session.history.table_name, session.id)
    if rows is None or not rows.num_rows:
        return
    request, kept, changed = plan.request, [], 0
    for row in rows.to_pylist():
        if request.everything or request.within(row["at"]):
            plan.points_removed += 1
            continue
        point = AgentState.model_validate_json(zlib.decompress(row["state"]))
        after = applied(point, cut_state(point, request, plan.gone_ids))
        new_state = zlib.compress(after.model_dump_json().encode("utf-8"))
        label = FORGOTTEN_LABEL if request.matches(row["label"]) else row["label"]
        if after != point or label != row["label"]:
            changed += 1
            row = {**row, "state": new_state, "label": label}
        kept.append(row)
    plan.points_changed = changed
    if changed or plan.points_removed:
        plan.points = pa.Table.from_pylist(kept, schema=rows.schema)


def carry_out(session: Any, plan: ForgetPlan) -> list[str]:
    """Take out everything `plan` reaches (the session has saved and stopped background work); the tables done."""
    db, began = session.store.db, time.time()
    mark_pending(db, session.id, plan.request.model_dump_json())
    session.state.forget(plan.state, plan.seqs, cut_shared_rows(session, plan))
    session.save()
    for cut in plan.cuts.values():
        if cut.doomed:
            remove(db, cut, session.id)
    if plan.points is not None:
        rewrite(db, session.history.table_name, plan.points)
    # every table, not only those changed now: a run a crash cut short may have left older copies anywhere
    own = [*(n for n in plan.labels if n not in SHARED_TABLES), state_table_name(session.id), session.history.table_name]
    shared = [n for n in plan.labels if n in SHARED_TABLES] + ([SHARED_TABLE] if plan.shared_rows else [])
    done = leave_no_copy(db, own, shared, began)
    clear_pending(db, session.id)  # last: a crash before it has the next open carry the request out again
    return done


def cut_shared_rows(session: Any, plan: ForgetPlan) -> dict[str, int]:
    """Cut the rows of the shared blocks this agent uses (the truth the other agents read) as its copies are cut;
    the revisions they moved to, by label. A row another agent edits meanwhile is read again and cut again."""
    revs: dict[str, int] = {}
    shared = session.store.shared
    for block in session.state.blocks():
        if block.shared_id is None or block.label not in plan.state.blocks or block.label in plan.state.detach:
            continue
        for _ in range(SHARED_RETRIES):
            row = shared.get([block.shared_id]).get(block.shared_id)
            if row is None:
                break
            value, _lines = plan.request.cut_lines(row.value)
            if value == row.value or shared.write(row.id, row.rev, value, session.id, session.name):
                revs[block.label] = row.rev + (value != row.value)
                plan.shared_rows.append(row.id)
                break
    return revs


def resume_forget(session: Any) -> ForgetRequest | None:
    """The forget request a crash cut short for this agent, if any (the caller carries it out again)."""
    saved = pending(session.store.db, session.id)
    return None if saved is None else ForgetRequest.model_validate_json(saved)
