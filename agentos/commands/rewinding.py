"""Rewinding with a copy kept: the names of the copies (`NAME.before-rewind-N`), and the rewind the CLI and the TUI
both run."""

from __future__ import annotations

import hashlib
import re
from typing import Any

from agentos.portable.archive import copy_agent

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
