"""The records of fact memory: a fact (one version of what is believed) and a change (what made or ended one).

A fact is never overwritten with other text and never deleted. A change that replaces it writes a new
fact that `supersedes` it and ends the old one (`valid_to`, `superseded_by`, `ended_by`); a change that
invalidates it only ends it. Every change is logged, so each can be reviewed and undone.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from typing import Any, Literal

from agentos.errors import FactError
from agentos.messages import new_id, utc_now
from agentos.times import iso_moment

Status = Literal["current", "superseded", "invalidated", "retracted", "undone"]
ChangeKind = Literal["add", "update", "delete", "correct", "retract", "prune", "undo", "batch", "skip", "rewind",
                     "retry"]
# Kinds that change facts (the others mark how far consolidation got, why it skipped messages, or that a skipped
# batch was read again: a "retry" names the skip it settles in `target_change`).
FACT_CHANGES = ("add", "update", "delete", "correct", "retract", "prune", "undo")
PROGRESS_KINDS = ("batch", "skip", "rewind")
_MODEL_NOTE = re.compile(r" \[model: ([^\]]+)\]$")  # how a skip's reason carries the model that skipped

def facts_table_name(agent_id: str) -> str:
    return f"facts_{agent_id}"


def fact_changes_table_name(agent_id: str) -> str:
    return f"fact_changes_{agent_id}"


def fact_hash(text: str) -> str:
    """What makes two facts the same: their words, case and spacing aside."""
    return hashlib.sha256(" ".join(text.casefold().split()).encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Fact:
    """One version of one fact."""

    text: str
    subject: str = "user"
    category: str = "other"
    confidence: float = 1.0
    valid_from: datetime = field(default_factory=utc_now)
    valid_to: datetime | None = None
    recorded_at: datetime = field(default_factory=utc_now)
    status: Status = "current"
    supersedes: str | None = None
    superseded_by: str | None = None
    source_ids: tuple[str, ...] = ()
    change_id: str = ""
    ended_by: str | None = None
    last_change: str = ""
    retrieved_count: int = 0
    last_retrieved_at: datetime | None = None
    id: str = field(default_factory=lambda: new_id("fact"))

    @property
    def current(self) -> bool:
        return self.status == "current"

    @property
    def content_hash(self) -> str:
        return fact_hash(self.text)

    def ended(self, status: Status, at: datetime, change: str, superseded_by: str | None = None) -> Fact:
        """This fact, no longer holding from `at`, ended by `change`."""
        return replace(self, status=status, valid_to=max(at, self.valid_from), superseded_by=superseded_by,
                       ended_by=change, last_change=change)

    def restored(self, change: str) -> Fact:
        """This fact holding again (an undo of what ended it)."""
        return replace(self, status="current", valid_to=None, superseded_by=None, ended_by=None, last_change=change)

    def to_json(self) -> str:
        data = asdict(self)
        for key in ("valid_from", "valid_to", "recorded_at", "last_retrieved_at"):
            data[key] = data[key].isoformat() if data[key] else None
        data["source_ids"] = list(self.source_ids)
        return json.dumps(data)

    @classmethod
    def from_json(cls, text: str) -> Fact:
        data = json.loads(text)
        for key in ("valid_from", "valid_to", "recorded_at", "last_retrieved_at"):
            data[key] = iso_moment(data[key]) if data.get(key) else None
        data["source_ids"] = tuple(data.get("source_ids") or ())
        return cls(**data)

    def row(self, embedder: str) -> dict[str, Any]:
        data = asdict(self)
        data["source_ids"] = list(self.source_ids)
        data["content_hash"] = self.content_hash
        data["embedder"] = embedder
        return data

    @classmethod
    def of_row(cls, row: dict[str, Any]) -> Fact:
        known = {k: row[k] for k in cls.__dataclass_fields__ if k in row}
        known["source_ids"] = tuple(row.get("source_ids") or ())
        known["confidence"] = round(float(row.get("confidence", 1.0)), 4)
        return cls(**known)


@dataclass(frozen=True)
class FactChange:
    """One logged change: a fact made or ended, an undo, or how far consolidation got."""

    kind: ChangeKind
    by: str
    group_id: str
    fact: Fact | None = None  # the fact it made
    old_fact_id: str | None = None
    target_change: str | None = None
    reason: str = ""
    message_ids: tuple[str, ...] = ()
    through_seq: int | None = None
    valid_at: datetime | None = None  # when what it says became true (a DELETE ends the fact then); None: `at`
    at: datetime = field(default_factory=utc_now)
    id: str = field(default_factory=lambda: new_id("chg"))
    model: str = ""  # a skip: the model spec that gave no usable answer ("": not recorded, as in older logs)

    @property
    def fact_id(self) -> str | None:
        return self.fact.id if self.fact else None

    def row(self) -> dict[str, Any]:
        reason = f"{self.reason} [model: {self.model}]" if self.kind == "skip" and self.model else self.reason
        return {
            "id": self.id, "group_id": self.group_id, "at": self.at, "kind": self.kind, "by": self.by,
            "fact_id": self.fact_id, "old_fact_id": self.old_fact_id, "target_change": self.target_change,
            "fact_json": self.fact.to_json() if self.fact else None, "reason": reason,
            "message_ids": list(self.message_ids), "through_seq": self.through_seq, "valid_at": self.valid_at,
        }

    @classmethod
    def of_row(cls, row: dict[str, Any]) -> FactChange:
        reason, model = row.get("reason") or "", ""
        noted = _MODEL_NOTE.search(reason) if row["kind"] == "skip" else None
        if noted:
            reason, model = reason[: noted.start()], noted.group(1)
        return cls(
            kind=row["kind"], by=row["by"], group_id=row["group_id"],
            fact=Fact.from_json(row["fact_json"]) if row.get("fact_json") else None,
            old_fact_id=row.get("old_fact_id"), target_change=row.get("target_change"), reason=reason,
            message_ids=tuple(row.get("message_ids") or ()), through_seq=row.get("through_seq"),
            valid_at=row.get("valid_at"), at=row["at"], id=row["id"], model=model,
        )


def effects(change: FactChange, known: dict[str, Fact]) -> list[Fact]:
    """The fact rows `change` writes, given the facts it touches (`known`, by id, as they are before it).

    Raises FactError when it cannot be made: the fact it ends is not current, or an undo comes after a later
    change to the same facts."""
    def current(fact_id: str | None) -> Fact:
        fact = known.get(fact_id or "")
        if fact is None:
            raise FactError(f"there is no fact {fact_id!r}.")
        if not fact.current:
            raise FactError(f"fact {fact_id} is no longer current ({fact.status}); only a current fact can change.")
        return fact

    made = [replace(change.fact, change_id=change.id, last_change=change.id)] if change.fact else []
    if change.kind == "add":
        return made
    if change.kind in ("update", "correct"):
        old = current(change.old_fact_id)
        new = replace(made[0], supersedes=old.id)
        return [new, old.ended("superseded", new.valid_from, change.id, superseded_by=new.id)]
    if change.kind in ("delete", "retract", "prune"):
        status: Status = "retracted" if change.kind == "retract" else "invalidated"
        return [current(change.old_fact_id).ended(status, change.valid_at or change.at, change.id)]
    raise FactError(f"a change of kind {change.kind!r} changes no fact directly.")


def undo_effects(target: FactChange, undo_id: str, known: dict[str, Fact]) -> list[Fact]:
    """The fact rows an undo of `target` writes: what it made is undone, what it ended holds again."""
    rows: list[Fact] = []
    if target.kind not in ("add", "update", "correct", "delete", "retract", "prune"):
        raise FactError(f"change {target.id} ({target.kind}) cannot be undone.")
    if target.fact_id:
        made = known.get(target.fact_id)
        if made is None:
            raise FactError(f"fact {target.fact_id}, made by change {target.id}, is missing.")
        if not made.current:
            later = f" by change {made.ended_by}" if made.ended_by else ""
            raise FactError(f"fact {made.id} was changed again{later} after change {target.id}; undo that first.")
        rows.append(made.ended("undone", made.valid_from, undo_id))
    if target.old_fact_id:
        old = known.get(target.old_fact_id)
        if old is None:
            raise FactError(f"fact {target.old_fact_id}, ended by change {target.id}, is missing.")
        if old.ended_by != target.id:
            raise FactError(f"fact {old.id} was changed again after change {target.id}; undo that first.")
        rows.append(old.restored(undo_id))
    return rows
