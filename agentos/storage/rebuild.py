"""Rebuilding what `agentos doctor --repair` would otherwise leave unreachable: an agent's state whose row is lost
(from its newest restore point, then the messages and memory edits saved after it), and directory rows whose table
lost them (from the agents' own state tables).

Pure functions on rows as dicts: `agentos.storage.doctor` reads the tables and writes what these return.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from typing import Any

from agentos.messages import utc_now

Row = dict[str, Any]


@dataclass(frozen=True)
class Rebuilt:
    """An agent's state row made anew, and one line per source it came from."""

    row: Row
    sources: list[str]


def point_state(point: Row) -> Row | None:
    """The state a restore point holds, or None when it cannot be read."""
    try:
        state = json.loads(zlib.decompress(point["state"]))
    except (zlib.error, ValueError, TypeError, KeyError):
        return None
    return state if isinstance(state, dict) else None


def newest_point(points: list[Row]) -> tuple[Row, Row] | None:
    """The restore point of the highest revision whose state reads, with that state."""
    for point in sorted(points, key=lambda p: (int(p["rev"]), p["at"]), reverse=True):
        state = point_state(point)
        if state is not None:
            return point, state
    return None


def _later_messages(agent_id: str, count: int, messages: list[Row]) -> list[Row]:
    later = [m for m in messages if m["agent_id"] == agent_id and int(m["seq"]) >= count]
    return sorted(later, key=lambda m: int(m["seq"]))


def _later_edits(agent_id: str, rev: int, edits: list[Row]) -> list[Row]:
    later = [e for e in edits if e["agent_id"] == agent_id and e.get("rev") is not None and int(e["rev"]) > rev]
    return sorted(later, key=lambda e: (int(e["rev"]), e["at"]))


def catch_up(agent_id: str, state: Row, rev: int, messages: list[Row], edits: list[Row],
             highest_rev: int) -> tuple[Row, list[str]]:
    """`state` (of revision `rev`) brought up to what was saved after it: the messages from its message count on
    join its context, and logged block edits of later revisions are applied. Returns the state, at a revision above
    `highest_rev` (every revision the agent's tables mention), and what was added."""
    state, added = dict(state), []
    later = _later_messages(agent_id, int(state.get("message_count", 0)), messages)
    if later:
        state["in_context_ids"] = [*state.get("in_context_ids", []), *(m["id"] for m in later)]
        state["message_count"] = int(later[-1]["seq"]) + 1
        added.append(f"{len(later)} message(s) saved after it (seq {later[0]['seq']}-{later[-1]['seq']})")
    applied: dict[str, int] = {}
    blocks = [dict(b) for b in state.get("blocks", [])]
    for edit in _later_edits(agent_id, rev, edits):
        for block in blocks:
            if block.get("label") == edit["label"] and edit.get("new_value") is not None:
                block["value"] = edit["new_value"]
                applied[edit["label"]] = applied.get(edit["label"], 0) + 1
    if applied:
        state["blocks"] = blocks
        added.append("memory edits made after it (" + ", ".join(f"{n} of block {label!r}" for label, n in applied.items())
                     + ")")
    state["rev"] = max(highest_rev, rev) + 1
    return state, added


def state_row(agent_id: str, state: Row) -> Row:
    """A state table's one row for `state`, held by nobody."""
    return {"agent_id": agent_id, "rev": int(state["rev"]), "updated_at": utc_now(), "state": json.dumps(state),
            "lease_token": None, "lease_holder": None, "lease_expires_at": None, "step_id": None}


def rebuild_state(agent_id: str, found: Row | None, found_from: str, points: list[Row], messages: list[Row],
                  edits: list[Row]) -> Rebuilt | None:
    """The agent's state from the newest of `found` (a state row read from `found_from`, e.g. an older version of
    its table) and its restore points, caught up with what was saved after it; None when neither exists."""
    point = newest_point(points)
    found_state = json.loads(found["state"]) if found is not None else None
    found_rev = int(found["rev"]) if found is not None else -1
    if point is not None and int(point[0]["rev"]) > found_rev:
        rev, state = int(point[0]["rev"]), point[1]
        source = f"its restore point of revision {rev} (saved {point[0]['at']:%Y-%m-%d %H:%M:%S} UTC)"
    elif found_state is not None:
        rev, state, source = found_rev, found_state, f"{found_from}, at revision {found_rev}"
    else:
        return None
    highest = max([rev, *(int(p["rev"]) for p in points),
                   *(int(e["rev"]) for e in edits if e["agent_id"] == agent_id and e.get("rev") is not None)])
    state, added = catch_up(agent_id, state, rev, messages, edits, highest)
    return Rebuilt(state_row(agent_id, state), [source, *added])


def free_name(wanted: str, taken: set[str]) -> str:
    """`wanted`, or `wanted-recovered`, `wanted-recovered-2`... whichever is free."""
    if wanted not in taken:
        return wanted
    candidate, n = f"{wanted}-recovered", 2
    while candidate in taken:
        candidate, n = f"{wanted}-recovered-{n}", n + 1
    return candidate


def relist(names: dict[str, str], states: dict[str, Row]) -> tuple[dict[str, str], list[str]]:
    """The directory's names with every agent whose state is known but which has no name added back, under the name
    its state was saved with (or a free variant of it), and a line for each."""
    names, lines = dict(names), []
    listed = set(names.values())
    for agent_id, state in sorted(states.items()):
        if agent_id in listed:
            continue
        wanted = str(state.get("name") or agent_id)
        name = free_name(wanted, set(names))
        names[name] = agent_id
        renamed = "" if name == wanted else f' (its own name "{wanted}" is taken)'
        lines.append(f'agent "{name}"{renamed}: its name and id, from its own state table')
    return names, lines
