"""Restore points: an agent's saved state after each turn, in its own table, so a rewind can go back to one.

A point is written with the step that ends a turn, before the state it records (like the step's messages): a point
whose step never landed has a revision above the agent's, is ignored, and is removed by the next writer to open the
agent (or by the session that lost the agent, by its step id). Rows, not LanceDB versions: the
cleanup of old versions cannot remove them, and they export like any other table.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agentos.agent.state import AgentState
from agentos.errors import AgentOSError, DamagedStoreError
from agentos.storage.db import Database
from agentos.storage.failures import storage_errors
from agentos.storage.filters import quote
from agentos.storage.schemas import RESTORE_POINTS, restore_points_table_name

LABEL_CHARS = 80


@dataclass(frozen=True)
class RestorePoint:
    """One point: the turn it ended (counted from 1; 0 is the agent's creation), when, and what was asked."""

    turn: int
    rev: int
    at: datetime
    message_count: int
    label: str


@dataclass(frozen=True)
class Rewound:
    """What a rewind took back: the point it went to, the messages after it, the block edits it made to get there,
    and each tier's items stored since (archival passages)."""

    point: RestorePoint
    messages: int
    edits: int
    items: dict[str, int]


def point_row(state: AgentState, rev: int, at: datetime, label: str, step_id: str | None = None, *,
              state_json: str | None = None) -> dict[str, Any]:
    """The row of a restore point for `state` at revision `rev` (edits waiting to be logged are left out);
    `state_json` is `state` already serialized, used when it is the same."""
    if state_json is None or state.rev != rev or state.unlogged_edits:
        state_json = state.model_copy(update={"rev": rev, "unlogged_edits": []}).model_dump_json()
    line = " ".join(label.split())
    return {"rev": rev, "at": at, "message_count": state.message_count,
            "label": line if len(line) <= LABEL_CHARS else line[: LABEL_CHARS - 1] + "…",
            "state": zlib.compress(state_json.encode("utf-8")), "step_id": step_id}


class RestorePoints:
    """One agent's restore points."""

    def __init__(self, db: Database, agent_id: str) -> None:
        self.db = db
        self.table_name = restore_points_table_name(agent_id)

    def stored_tables(self) -> dict[str, str]:
        """The table, with what it holds for people (opening the agent looks at it for damage)."""
        return {self.table_name: "restore points"}

    def open(self) -> None:
        """Open the table (creating it), as a step's write needs before it adds rows."""
        self.db.table(self.table_name, RESTORE_POINTS, {})

    def add(self, row: dict[str, Any]) -> None:
        self.open()
        self.db.add(self.table_name, [row])

    def _rows(self, columns: list[str], upto_rev: int) -> list[dict[str, Any]]:
        handle = self.db.existing(self.table_name)
        if handle is None:
            return []
        with storage_errors("read the agent's restore points"):
            handle.checkout_latest()
            rows = handle.search().where(f"rev <= {int(upto_rev)}").select(columns).limit(None).to_arrow().to_pylist()
        newest: dict[int, dict[str, Any]] = {}
        for row in sorted(rows, key=lambda r: r["at"]):  # a step written twice (a retry) leaves its point twice
            newest[row["rev"]] = row
        return [newest[rev] for rev in sorted(newest)]

    def list(self, upto_rev: int) -> list[RestorePoint]:
        """The points of the agent's saved history (revision `upto_rev` and before), oldest first."""
        rows = self._rows(["rev", "at", "message_count", "label"], upto_rev)
        return [RestorePoint(turn=i, rev=r["rev"], at=r["at"], message_count=r["message_count"], label=r["label"])
                for i, r in enumerate(rows)]

    def state(self, point: RestorePoint, upto_rev: int) -> AgentState:
        """The agent's state as it was at `point`."""
        for row in self._rows(["rev", "at", "state"], upto_rev):
            if row["rev"] == point.rev:
                return AgentState.model_validate_json(zlib.decompress(row["state"]))
        raise AgentOSError(f"restore point {point.turn} is no longer stored.")

    def forget_after(self, rev: int) -> None:
        """Remove the points after revision `rev`: the turns a rewind took back, or those of steps that never landed
        (before the agent reaches their revision again and they would pass for its own)."""
        self._forget(f"rev > {int(rev)}")

    def forget_unlanded(self, rev: int) -> None:
        """Remove the points of steps that never landed (above revision `rev`), as a writer opening the agent does. A
        table too damaged to look in keeps them, so that the agent still opens (opening warns of the damage): the
        next writer to open it after `agentos doctor --repair` removes those still above its revision."""
        try:
            self.forget_after(rev)
        except DamagedStoreError:
            pass

    def forget_step(self, step_id: str) -> None:
        """Remove the points a step wrote that will never land (this session lost the agent)."""
        self._forget(f"step_id = {quote(step_id)}")

    def _forget(self, where: str) -> None:
        handle = self.db.existing(self.table_name)
        if handle is None:
            return
        with storage_errors("update the agent's restore points"):
            handle.checkout_latest()
            if handle.count_rows(where):
                self.db.check_writable(self.table_name)
                handle.delete(where)
