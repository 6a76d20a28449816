"""Blocks several agents use: one row each in the table `shared_blocks`, changed only by compare-and-set.

The row is the truth; each agent attached to it keeps a copy in its own state, with the revision it last saw. An
edit names that revision (`update ... where id = X and rev = R`, as an agent's state write does), so of two agents
editing at the same moment one wins and the other is told, never overwritten. A shared block belongs to one
database: in `agentos serve` every user has a database of their own, so no block is ever shared across owners.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from agentos.messages import new_id, utc_now
from agentos.storage.db import Database
from agentos.storage.failures import retry_conflicts, storage_errors
from agentos.storage.filters import quote

SHARED_TABLE = "shared_blocks"


@dataclass(frozen=True)
class SharedRow:
    """One shared block as stored: its value, limit and description, its revision, and who edited it last."""

    id: str
    label: str
    value: str
    limit: int
    description: str = ""
    rev: int = 0
    updated_at: datetime | None = None
    updated_by: str | None = None  # an agent's id (None: by hand, or its creation)
    updated_by_name: str | None = None

    def row(self) -> dict[str, Any]:
        return {"id": self.id, "label": self.label, "value": self.value, "limit": int(self.limit),
                "description": self.description, "rev": int(self.rev), "updated_at": self.updated_at or utc_now(),
                "updated_by": self.updated_by, "updated_by_name": self.updated_by_name}

    @classmethod
    def of(cls, raw: dict[str, Any]) -> SharedRow:
        return cls(id=raw["id"], label=raw["label"], value=raw["value"] or "", limit=int(raw["limit"]),
                   description=raw.get("description") or "", rev=int(raw["rev"]), updated_at=raw.get("updated_at"),
                   updated_by=raw.get("updated_by"), updated_by_name=raw.get("updated_by_name"))


def new_shared_id() -> str:
    return new_id("block")


class SharedBlocks:
    """Reads and compare-and-set writes of the shared blocks of one database."""

    def __init__(self, db: Database, committed: Callable[[list[str]], None] = lambda tables: None) -> None:
        self.db = db
        self._committed = committed  # counts a write towards compaction

    def version(self) -> int | None:
        """The table's version now (it moves with every write), or None while no block was ever shared."""
        with storage_errors("read the shared blocks"):
            table = self.db.existing(SHARED_TABLE)
            if table is None:
                return None
            table.checkout_latest()
            return int(table.version)

    def get(self, ids: Iterable[str]) -> dict[str, SharedRow]:
        """The rows with these ids, as stored now (an id with no row is left out)."""
        wanted = sorted(set(ids))
        if not wanted:
            return {}
        return self._read(f"id IN ({', '.join(quote(i) for i in wanted)})")

    def all(self) -> list[SharedRow]:
        """Every shared block, by label."""
        return sorted(self._read(None).values(), key=lambda row: (row.label, row.id))

    def _read(self, where: str | None) -> dict[str, SharedRow]:
        with storage_errors("read the shared blocks"):
            table = self.db.existing(SHARED_TABLE)
            if table is None:
                return {}
            table.checkout_latest()
            query = table.search()
            if where is not None:
                query = query.where(where)
            rows = query.limit(None).to_arrow().to_pylist()
        found: dict[str, SharedRow] = {}
        for raw in rows:  # two imports creating one id at once leave two rows: the newest revision counts
            row = SharedRow.of(raw)
            if row.id not in found or row.rev > found[row.id].rev:
                found[row.id] = row
        return found

    def create(self, row: SharedRow) -> SharedRow:
        """Store a new shared block; when one with its id exists already, that one is returned, unchanged."""
        existing = self.get([row.id]).get(row.id)
        if existing is not None:
            return existing
        row = replace(row, updated_at=row.updated_at or utc_now())
        self.db.add(SHARED_TABLE, [row.row()])
        self._committed([SHARED_TABLE])
        return row

    def write(self, block_id: str, rev: int, value: str, by: str | None, by_name: str | None) -> bool:
        """Set the block's value if it is still at revision `rev` (it moves to `rev + 1`); False when another edit
        got in first, or the block is gone."""
        values = {"value": value, "rev": int(rev) + 1, "updated_at": utc_now(), "updated_by": by,
                  "updated_by_name": by_name}
        table = self.db.table(SHARED_TABLE)
        self.db.check_writable(SHARED_TABLE)
        where = f"id = {quote(block_id)} AND rev = {int(rev)}"
        result = retry_conflicts("edit a shared block", lambda: table.update(where=where, values=values),
                                 table.checkout_latest)
        self._committed([SHARED_TABLE])
        return int(result.rows_updated) >= 1

    def remove(self, block_id: str) -> None:
        """Delete a shared block (no agent uses it any more)."""
        with storage_errors("delete a shared block"):
            table = self.db.existing(SHARED_TABLE)
            if table is None:
                return
            self.db.check_writable(SHARED_TABLE)
            table.checkout_latest()
            table.delete(f"id = {quote(block_id)}")
        self._committed([SHARED_TABLE])
