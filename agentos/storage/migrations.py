"""Schema migrations: a table written by an older agentos is upgraded when it is first opened.

Each step turns a table's rows at one schema version into rows of the next. The last step's
result replaces the table through `replace_table`, which commits a full copy first, so a crash
in the middle leaves a table that opens (and the migration simply runs again).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from agentos.storage.records import search_text_of
from agentos.storage.schemas import STATE, state_table_name

ROW_ID = "directory"  # the directory's one row (see storage.directory)

# creates a table holding rows in one commit, False if it exists (`Database.create`), for a step that splits a table
CreateTable = Callable[[str, pa.Schema, list[dict[str, Any]]], bool]
Step = Callable[[CreateTable, pa.Table], pa.Table]


def agents_v1_to_v2(create: CreateTable, data: pa.Table) -> pa.Table:
    """v1 kept every state revision of every agent as a row; v2 keeps the directory (names to ids) as one
    row, and each agent's newest state, with an empty lease, in its own table (made first, so a crash
    only repeats this)."""
    newest: dict[str, dict[str, Any]] = {}
    for row in data.to_pylist():
        if row["name"] not in newest or row["rev"] > newest[row["name"]]["rev"]:
            newest[row["name"]] = row
    rows = list(newest.values())
    for row in rows:
        state = json.loads(row["state"])
        create(state_table_name(row["agent_id"]), STATE, [{
            "agent_id": row["agent_id"], "rev": max(int(row["rev"]), int(state.get("rev", 0))),
            "updated_at": row["updated_at"], "state": row["state"],
            "lease_token": None, "lease_holder": None, "lease_expires_at": None, "step_id": None,
        }])
    names = {r["name"]: r["agent_id"] for r in rows}
    return pa.table({"id": [ROW_ID], "rev": [0], "names": [json.dumps(names)]})


def messages_v1_to_v2(create: CreateTable, data: pa.Table) -> pa.Table:
    """v2 stores what recall's keyword search indexes (date, speaker and text of speech; null for tool traffic)."""
    rows = data.select(["role", "created_at", "name", "content"]).to_pylist()
    return data.append_column("search_text", pa.array([search_text_of(row) for row in rows], pa.string()))


def memory_edits_v1_to_v2(create: CreateTable, data: pa.Table) -> pa.Table:
    """v2 records the state revision each edit landed with; older edits all landed, so theirs stays null."""
    return data.append_column("rev", pa.nulls(data.num_rows, pa.int64()))


def memory_edits_v2_to_v3(create: CreateTable, data: pa.Table) -> pa.Table:
    """v3 records who made each edit; before it only the agent could, so theirs stays null (read as "agent")."""
    return data.append_column("by", pa.nulls(data.num_rows, pa.string()))


STEPS: dict[tuple[str, int], Step] = {
    ("agents", 1): agents_v1_to_v2,
    ("messages", 1): messages_v1_to_v2,
    ("memory_edits", 1): memory_edits_v1_to_v2,
    ("memory_edits", 2): memory_edits_v2_to_v3,
}


def upgrade(create: CreateTable, name: str, data: pa.Table, found: int, wanted: int) -> pa.Table | None:
    """The rows of table `name` at schema version `wanted`, or None when no migration path exists; `create` makes
    the tables a step splits off."""
    for version in range(found, wanted):
        step = STEPS.get((name, version))
        if step is None:
            return None
        data = step(create, data)
    return data
