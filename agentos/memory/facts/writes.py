"""Writing fact memory: a group of changes is logged (the commit point), then its facts are merged in.

A crash between the two is finished when the agent is next opened for writing, from the log rows, which carry
the facts they made. People's decisions (correct, retract, undo, prune) are changes like consolidation's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

import numpy as np
import pyarrow as pa

from agentos.actors import Actor
from agentos.embedders.base import vector_array
from agentos.errors import FactError
from agentos.events import SecretsRemoved
from agentos.memory.facts.retention import last_use
from agentos.memory.facts.rows import FACT_CHANGES, PROGRESS_KINDS, Fact, FactChange, effects, undo_effects
from agentos.memory.facts.tables import FactTables
from agentos.memory.secret_gate import gate_of
from agentos.messages import new_id, utc_now
from agentos.storage.audit import AuditEntry, shown_ids
from agentos.storage.audit import change as audit_change
from agentos.storage.failures import storage_errors
from agentos.storage.filters import quote
from agentos.storage.schemas import FACT_CHANGES_SCHEMA
from agentos.text import valid_text

CONSOLIDATION = Actor("model", "fact consolidation")  # who makes consolidation's changes, for the audit log
COMPACT_EVERY_COMMITS = 16  # consolidation compacts the facts tables this often (each batch is a commit or two)


class FactWrites(FactTables):
    """The writes of one agent's fact memory (only under its lease, from one thread at a time: `lock`)."""

    def discard(self, message_ids: Sequence[str]) -> None:
        """Messages taken back (a rewind, or a step that never landed): undo what consolidation made of them, and
        consolidate again from before the first of them."""
        if not message_ids or self.ctx.db.count_rows(self.changes_name) is None:
            return
        gone = set(message_ids)
        seqs = self._seqs(message_ids)
        with self.lock:
            made = [c for c in self.changes() if c.by == "consolidator" and c.kind in FACT_CHANGES
                    and gone.intersection(c.message_ids) and not self.undone(c.id)]
            group = new_id("grp")
            undos = [FactChange(kind="undo", by="consolidator", group_id=group, target_change=c.id,
                                reason="its messages were taken back") for c in reversed(made)]
            watermark = self.watermark()
            back_to = min(seqs) - 1 if seqs else watermark
            rows: list[FactChange] = [*undos]
            if back_to < watermark:
                rows.append(FactChange(kind="rewind", by="consolidator", group_id=group, through_seq=back_to,
                                       reason=f"{len(gone)} message(s) taken back"))
            if rows:
                self.commit(rows, tolerate_conflicts=True)

    def commit(self, changes: Sequence[FactChange], *, tolerate_conflicts: bool = False) -> list[FactChange]:
        """Log and apply a group of changes (one commit each for the log and the facts); the changes made.

        A change that cannot be made raises FactError before anything is written, or, with
        `tolerate_conflicts`, is left out."""
        self.ctx.check_writable("change fact memory")
        changes = self._screened(changes)
        with self.lock:
            self._finish_unapplied()
            touched = [c.old_fact_id for c in changes] + [c.fact_id for c in changes]
            targets = {c.target_change: self.change(c.target_change) for c in changes if c.target_change}
            touched += [i for t in targets.values() for i in (t.fact_id, t.old_fact_id)]
            known = self.by_ids(i for i in touched if i)
            written: dict[str, Fact] = {}
            made: list[FactChange] = []
            for change in changes:
                try:
                    if change.kind == "undo":
                        rows = undo_effects(targets[change.target_change or ""], change.id, known)
                    elif change.kind in FACT_CHANGES:
                        rows = effects(change, known)
                    else:
                        rows = []
                except FactError:
                    if not tolerate_conflicts:
                        raise
                    continue
                for fact in rows:
                    known[fact.id] = written[fact.id] = fact
                made.append(change)
            if not made:
                return []
            self._write(made, list(written.values()))
        entry = audit_entry(made)
        if entry is not None:
            self.ctx.note(entry)
        return made

    def _screened(self, changes: Sequence[FactChange]) -> list[FactChange]:
        """`changes` with the secret gate applied to the facts they make and to their reasons; what it removed is
        told as news (a SecretsRemoved event)."""
        gate = gate_of(self.ctx.settings() if self.ctx.settings is not None else None)
        found: Counter[str] = Counter()
        screened = []
        for change in changes:
            fact, reason = change.fact, gate.redact(change.reason)
            text = gate.redact(fact.text) if fact is not None else None
            if text is not None and text.found:
                fact = replace(fact, text=text.text)  # type: ignore[type-var]
                found.update(text.found)
            found.update(reason.found)
            screened.append(replace(change, fact=fact, reason=reason.text) if fact is not change.fact or reason.found
                            else change)
        if found:
            self.ctx.tell(SecretsRemoved(kinds=dict(found), where=["facts"]))
        return screened

    def _write(self, changes: list[FactChange], facts: list[Fact]) -> None:
        """The log rows (the commit point), then the facts. Everything that can fail before the commit point
        (embedding, above all) is done first; a failure after it leaves the group to finish before the next one."""
        data = self._fact_rows(facts) if facts else None
        db = self.ctx.db
        with storage_errors("write fact memory"):
            db.check_writable(self.changes_name)
            self.changes_table.add(pa.Table.from_pylist([c.row() for c in changes], schema=FACT_CHANGES_SCHEMA))
        self.ctx.wrote(self.changes_name)
        progress = [c for c in changes if c.kind in PROGRESS_KINDS and c.through_seq is not None]
        if progress:
            self._watermark = progress[-1].through_seq
        if any(c.kind in ("skip", "retry") for c in changes):
            self._skipped = None
        if data is not None:
            self._unapplied = changes[0].group_id
            self._apply(data)
            self._unapplied = None

    def _finish_unapplied(self) -> None:
        """Apply the facts of a group whose log rows are written but whose facts failed to be (a storage error)."""
        if self._unapplied is not None:
            self.repair()
            self._unapplied = None

    def _fact_rows(self, facts: list[Fact]) -> pa.Table:
        """The rows of `facts`, whole, with their vectors, in the table's schema."""
        table = self.table
        schema = table.schema
        rows = [f.row(self.embedder.name) for f in facts]
        data = pa.Table.from_pylist(rows, schema=pa.schema([schema.field(n) for n in schema.names if n != "vector"]))
        if self.embedder.enabled:
            data = data.append_column(schema.field("vector"), vector_array(self._vectors(facts)))
        return data.select(schema.names).cast(schema)

    def _apply(self, data: pa.Table) -> None:
        """Write fact rows whole, new or changed, in one merge (doing it twice changes nothing)."""
        table = self.table
        with storage_errors("write fact memory"):
            self.ctx.db.check_writable(self.table_name)
            table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(data)
        self._current, self._exists, self._prompt = None, True, None
        self._writes += 1
        self._commits += 1
        self.ctx.wrote(self.table_name)

    def _vectors(self, facts: list[Fact]) -> np.ndarray:
        """An (n, dim) array of the facts' vectors: kept for a fact already stored, reused from the search that
        compared it (consolidation searches with each candidate's text), else embedded."""
        stored: dict[str, Any] = {}
        ids = [f.id for f in facts]
        if self._reading() is not None and ids:
            where = f"id IN ({', '.join(quote(i) for i in ids)})"
            for r in self.table.search().where(where).select(["id", "vector"]).limit(None).to_arrow().to_pylist():
                stored[r["id"]] = r["vector"]
        reuse = self._query_vectors if self.embedder.symmetric else {}  # a query vector is a document's only then
        fresh = sorted({f.text for f in facts if f.id not in stored and f.text not in reuse})
        embedded = dict(zip(fresh, self.embedder.embed_documents(fresh))) if fresh else {}
        rows = [stored[f.id] if f.id in stored else embedded.get(f.text, self._query_vectors.get(f.text))
                for f in facts]
        return np.asarray(rows, dtype=np.float32).reshape(len(facts), self.embedder.dim)

    def compact_if_due(self) -> None:
        """Compact the facts tables after every COMPACT_EVERY_COMMITS commits (consolidation's thread calls this:
        searches of a table of many small fragments, whose newest rows no index covers, slow it down)."""
        if self._commits < COMPACT_EVERY_COMMITS:
            return
        self._commits = 0
        for name in (self.table_name, self.changes_name):
            try:
                self.ctx.db.optimize(name)
            except Exception:  # noqa: BLE001 - background maintenance's own runs retry it
                return

    def repair(self) -> int:
        """Apply the last group of logged changes again if a crash left its facts unwritten; how many facts."""
        if self.ctx.db.count_rows(self.changes_name) is None:
            return 0
        log = self.changes()
        if not log:
            return 0
        group = [c for c in log if c.group_id == log[-1].group_id]
        expected: dict[str, str] = {}
        for change in group:
            for fact_id in (change.fact_id, change.old_fact_id):
                if fact_id and change.kind in FACT_CHANGES:
                    expected[fact_id] = change.id
            if change.kind == "undo" and change.target_change:
                target = self.change(change.target_change)
                for fact_id in (target.fact_id, target.old_fact_id):
                    if fact_id:
                        expected[fact_id] = change.id
        found = self.by_ids(expected)
        if all(fact_id in found and found[fact_id].last_change == change for fact_id, change in expected.items()):
            return 0
        known = dict(found)
        written: dict[str, Fact] = {}
        for change in group:
            try:
                if change.kind == "undo":
                    rows = undo_effects(self.change(change.target_change or ""), change.id, known)
                elif change.kind in FACT_CHANGES:
                    rows = effects(change, known)
                else:
                    continue
            except FactError:
                continue  # already applied (a later part of the group was written)
            for fact in rows:
                known[fact.id] = written[fact.id] = fact
        if written:
            self._apply(self._fact_rows(list(written.values())))
        return len(written)

    def correct(self, fact_id: str, text: str, reason: str = "") -> FactChange:
        """The user's correction: a new version of the fact, which supersedes the old one."""
        text = valid_text(" ".join((text or "").split()))
        reason = valid_text(reason)
        if not text:
            raise FactError("the corrected text is empty; give the fact as it should read.")
        old = self.require(fact_id)
        if old.text == text:
            raise FactError(f"fact {fact_id} already reads {text!r}.")
        now = utc_now()
        new = Fact(text=text, subject=old.subject, category=old.category, confidence=1.0, valid_from=now,
                   recorded_at=now, supersedes=old.id, source_ids=old.source_ids)
        change = FactChange(kind="correct", by="user", group_id=new_id("grp"), fact=new, old_fact_id=old.id,
                            reason=reason or "corrected by the user")
        return self.commit([change])[0]

    def retract(self, fact_id: str, reason: str = "") -> FactChange:
        """The user's retraction: the fact no longer holds (kept, and shown as retracted)."""
        self.require(fact_id)
        change = FactChange(kind="retract", by="user", group_id=new_id("grp"), old_fact_id=fact_id,
                            reason=valid_text(reason) or "retracted by the user")
        return self.commit([change])[0]

    def undo(self, change_id: str, by: str = "user") -> FactChange:
        """Reverse one change: what it made is marked undone, what it ended holds again."""
        target = self.change(change_id)
        if target.kind not in FACT_CHANGES:
            raise FactError(_not_undoable(target))
        if self.undone(change_id):
            raise FactError(f"change {change_id} was already undone.")
        change = FactChange(kind="undo", by=by, group_id=new_id("grp"), target_change=change_id,
                            reason=f"undo of {target.kind} {change_id}")
        return self.commit([change])[0]

    def prunable(self, *, older_than: datetime | None, min_confidence: float | None) -> list[Fact]:
        """Current facts last used before `older_than` and/or less confident than `min_confidence`."""
        if older_than is None and min_confidence is None:
            raise FactError("say what to prune: --older-than DATE and/or --min-confidence N.")
        out = []
        for fact in self.listing():
            if older_than is not None and last_use(fact) >= older_than:
                continue
            if min_confidence is not None and fact.confidence >= min_confidence:
                continue
            out.append(fact)
        return out

    def prune(self, facts: Sequence[Fact], reason: str) -> list[FactChange]:
        group = new_id("grp")
        return self.commit([FactChange(kind="prune", by="user", group_id=group, old_fact_id=f.id, reason=reason)
                            for f in facts])


def audit_entry(changes: Sequence[FactChange]) -> AuditEntry | None:
    """The audit entry of a group of changes (None when it changed no fact: consolidation's progress marks), made
    by consolidation's model when all of it is consolidation's, else by whoever acts now."""
    made = [c for c in changes if c.kind in FACT_CHANGES]
    if not made:
        return None
    kinds = ", ".join(f"{kind} {n}" for kind, n in Counter(c.kind for c in made).items())
    ids = [c.fact_id or c.old_fact_id or c.target_change or "" for c in made]
    by = CONSOLIDATION if all(c.by == "consolidator" for c in made) else None
    return audit_change("facts", len(made), shown_ids([i for i in ids if i]), kinds, by=by)


def _not_undoable(change: FactChange) -> str:
    """Why a change that changed no fact cannot be undone, and what can be done instead."""
    if change.kind == "skip":
        model = f" with {change.model}" if change.model else ""
        return (f"change {change.id} is a skipped batch ({len(change.message_ids)} message(s) that consolidation{model} "
                f"could not read: {change.reason}), not a change to facts, so there is nothing to undo. Read it "
                f"again with: agentos facts AGENT consolidate --retry-skipped (with another model: add --model SPEC)")
    return (f"change {change.id} ({change.kind}) records how far consolidation got and changed no fact, so there is "
            f"nothing to undo. Review the changes with: agentos facts AGENT changes")
