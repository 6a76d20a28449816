"""Rewinding with a copy kept: the names of the copies (`NAME.before-rewind-N`), the restore point asked for, the
rewind the CLI, the TUI and the server run, and what undoing it renames."""

from __future__ import annotations

import hashlib
import re
from typing import Any

from agentos.agent.agent import Agent
from agentos.agent.directory import is_empty
from agentos.agent.history import RestorePoint
from agentos.errors import AgentOSError
from agentos.portable.archive import copy_agent
from agentos.storage.store import Store

BACKUP = "{base}.before-rewind-{n}"  # the copy a rewind keeps of the agent as it was
SWAPPED = "{base}.rewound-{n}"  # the rewound agent, once `--undo` has put the copy back
BASE_CHARS = 40  # names are at most 64 characters: a longer name is cut and told apart by a hash of it


def base_name(name: str) -> str:
    """The start of the copies' names: the name, or a cut of a long one with a hash of it."""
    if len(name) <= BASE_CHARS:
        return name
    return f"{name[: BASE_CHARS - 7]}-{hashlib.sha1(name.encode()).hexdigest()[:6]}"


def numbered(name: str, rows: Any, kind: str) -> list[tuple[int, str]]:
    """The agents named `<base of name>.<kind>-N`, as (N, name), oldest first."""
    base = re.escape(base_name(name))
    found = [(int(m.group(1)), other) for other in rows if (m := re.fullmatch(rf"{base}\.{kind}-(\d+)", other))]
    return sorted(found)


def backups(name: str, rows: Any) -> list[tuple[int, str]]:
    """The copies earlier rewinds of `name` kept, as (number, name), oldest first."""
    return numbered(name, rows, "before-rewind")


def next_backup_name(agent: Any) -> str:
    """The name the copy a rewind of `agent` keeps will take: `NAME.before-rewind-N`, N one past the last."""
    n = max((number for number, _ in backups(agent.name, agent.store.agent_rows())), default=0) + 1
    return BACKUP.format(base=base_name(agent.name), n=n)


def rewind_keeping_copy(agent: Any, turn: int, backup: str, progress: Any = None) -> Any:
    """Copy the open `agent` as `backup`, then rewind it to restore point `turn` (the CLI's and the TUI's way)."""
    copy_agent(agent.store, agent.name, backup, progress, held=agent)
    return agent.rewind(turn)


def find_point(agent: Any, turn: int) -> RestorePoint:
    """Restore point `turn` of `agent`, or the error naming the points it has."""
    points = agent.restore_points()
    point = next((p for p in points if p.turn == turn), None)
    if point is None:
        raise AgentOSError(f'agent "{agent.name}" has no restore point {turn}: its points are 0 to {len(points) - 1}. '
                           f"See them with: agentos history {agent.name}")
    return point


def undo_plan(store: Store, name: str) -> tuple[str, str]:
    """What undoing the last rewind of `name` renames: (the copy that becomes `name` again, the name the rewound
    agent is kept under). Errors when there is no such agent, or no copy to put back."""
    if is_empty(store) or store.agent_row(name) is None:
        Agent.load(name, store=store, read_only=True)  # says that there is no such agent, and which there are
    kept = backups(name, store.agent_rows())
    if not kept:
        raise AgentOSError(f'no rewind of "{name}" to undo: no copy named '
                           f'"{BACKUP.format(base=base_name(name), n="N")}" exists.')
    n, backup = kept[-1]
    n = max([n - 1, *(k for k, _ in numbered(name, store.agent_rows(), "rewound"))]) + 1  # a free number
    return backup, SWAPPED.format(base=base_name(name), n=n)
