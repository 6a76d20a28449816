"""Schema migrations: a table written by an older agentos is upgraded when it is first opened.

Each step turns a table's rows at one schema version into rows of the next. The last step's
result replaces the table through `replace_table`, which commits a full copy first, so a crash
in the middle leaves a table that opens (and the migration simply runs again).
"""

from __future__ import annotations

import json
from typing import Callable

import pyarrow as pa

Step = Callable[[pa.Table], pa.Table]


def agents_v1_to_v2(data: pa.Table) -> pa.Table:
    """v1 kept every state revision as its own row; v2 keeps one row per agent, with an empty lease."""
    newest: dict[str, dict[str, object]] = {}
    for row in data.to_pylist():
        if row["name"] not in newest or row["rev"] > newest[row["name"]]["rev"]:  # type: ignore[operator]
            newest[row["name"]] = row
    rows = list(newest.values())
    return pa.table({
        "agent_id": [r["agent_id"] for r in rows],
        "name": [r["name"] for r in rows],
        "rev": [max(int(r["rev"]), int(json.loads(r["state"]).get("rev", 0))) for r in rows],  # type: ignore[call-overload]
        "updated_at": [r["updated_at"] for r in rows],
        "state": [r["state"] for r in rows],
        "lease_token": pa.nulls(len(rows), pa.string()),
        "lease_holder": pa.nulls(len(rows), pa.string()),
        "lease_expires_at": pa.nulls(len(rows), pa.timestamp("us", tz="UTC")),
    })


def memory_edits_v1_to_v2(data: pa.Table) -> pa.Table:
    """v2 records the state revision each edit landed with; older edits all landed, so theirs stays null."""
    return data.append_column("rev", pa.nulls(data.num_rows, pa.int64()))


STEPS: dict[tuple[str, int], Step] = {
    ("agents", 1): agents_v1_to_v2,
    ("memory_edits", 1): memory_edits_v1_to_v2,
}


def upgrade(name: str, data: pa.Table, found: int, wanted: int) -> pa.Table | None:
    """The rows of table `name` at schema version `wanted`, or None when no migration path exists."""
    for version in range(found, wanted):
        step = STEPS.get((name, version))
        if step is None:
            return None
        data = step(data)
    return data
