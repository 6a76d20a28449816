"""The `history` and `rewind` commands: an agent's restore points, going back to one, and undoing that."""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
from typing import Any

from agentos.errors import AgentOSError

BACKUP = "{base}.before-rewind-{n}"  # the copy a rewind keeps of the agent as it was
SWAPPED = "{base}.rewound-{n}"  # the rewound agent, once `--undo` has put the copy back
BASE_CHARS = 40  # names are at most 64 characters: a longer name is cut and told apart by a hash of it


def _base(name: str) -> str:
    if len(name) <= BASE_CHARS:
        return name
    return f"{name[: BASE_CHARS - 7]}-{hashlib.sha1(name.encode()).hexdigest()[:6]}"


def cmd_history(args: argparse.Namespace) -> int:
    from agentos.agent.agent import Agent

    agent = Agent.load(args.name, read_only=True)
    points = agent.restore_points()
    shown = points[-args.last:] if args.last else points
    print(f'Restore points of "{agent.name}" (rewind with: agentos rewind {agent.name} --to N):')
    print(f"  {'N':>4}  {'WHEN':<16}  {'MESSAGES':>8}  QUESTION")
    for point in shown:
        print(f"  {point.turn:>4}  {point.at.astimezone():%Y-%m-%d %H:%M}  {point.message_count:>8,}  {point.label}")
    backups = _backups(agent.name, agent.store.agent_rows())
    if backups:
        print(f"Copies kept by earlier rewinds: {', '.join(name for _, name in backups)} "
              f"(agentos rewind {agent.name} --undo puts the newest back)")
    return 0


def _numbered(name: str, rows: Any, kind: str) -> list[tuple[int, str]]:
    """The agents named `<base of name>.<kind>-N`, as (N, name), oldest first."""
    base = re.escape(_base(name))
    found = [(int(m.group(1)), other) for other in rows if (m := re.fullmatch(rf"{base}\.{kind}-(\d+)", other))]
    return sorted(found)


def _backups(name: str, rows: Any) -> list[tuple[int, str]]:
    """The copies earlier rewinds of `name` kept, as (number, name), oldest first."""
    return _numbered(name, rows, "before-rewind")


def next_backup_name(agent: Any) -> str:
    """The name the copy a rewind of `agent` keeps will take: `NAME.before-rewind-N`, N one past the last."""
    n = max((number for number, _ in _backups(agent.name, agent.store.agent_rows())), default=0) + 1
    return BACKUP.format(base=_base(agent.name), n=n)


def rewind_keeping_copy(agent: Any, turn: int, backup: str, progress: Any = None) -> Any:
    """Copy the open `agent` as `backup`, then rewind it to restore point `turn` (the CLI's and the TUI's way)."""
    from agentos.portable.archive import copy_agent

    copy_agent(agent.store, agent.name, backup, progress, held=agent)
    return agent.rewind(turn)


def _confirm(question: str, yes: bool) -> bool:
    if yes:
        return True
    if not sys.stdin.isatty():
        raise AgentOSError("refusing to rewind without confirmation; pass --yes.")
    return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")


def cmd_rewind(args: argparse.Namespace) -> int:
    if args.undo:
        return _undo(args)
    if args.to is None:
        raise AgentOSError("say where to: --to N (a restore point from `agentos history`), or --undo.")
    from agentos.agent.agent import Agent
    from agentos.cli_transfer import transfer_progress

    agent = Agent.load(args.name, with_model=False)
    try:
        points = agent.restore_points()
        point = next((p for p in points if p.turn == args.to), None)
        if point is None:
            raise AgentOSError(f'agent "{agent.name}" has no restore point {args.to}: its points are 0 to '
                               f"{len(points) - 1}. See them with: agentos history {agent.name}")
        turns = len(points) - 1 - point.turn
        messages = agent.state.message_count - point.message_count
        backup = next_backup_name(agent)
        print(f'Rewinding "{agent.name}" to point {point.turn} ({point.at.astimezone():%Y-%m-%d %H:%M}, '
              f'"{point.label}") takes back {turns} turn(s) and {messages:,} message(s), with the memory edits and '
              f'archival passages made since. The agent as it is now is kept as "{backup}" first.')
        if not _confirm("Rewind?", args.yes):
            print("Not rewound.")
            return 1
        done = rewind_keeping_copy(agent, point.turn, backup, transfer_progress)
    finally:
        agent.close()
    passages = done.items.get("archival", 0)
    print(f'Rewound "{agent.name}" to point {point.turn}: {done.messages:,} message(s), {done.edits} block change(s) '
          f"and {passages} archival passage(s) taken back. Undo with: agentos rewind {agent.name} --undo")
    return 0


def _undo(args: argparse.Namespace) -> int:
    from agentos.agent.agent import Agent, open_store

    store = open_store()
    if store.agent_row(args.name) is None:
        Agent.load(args.name, read_only=True)  # says that there is no such agent, and which there are
    backups = _backups(args.name, store.agent_rows())
    if not backups:
        raise AgentOSError(f'no rewind of "{args.name}" to undo: no copy named '
                           f'"{BACKUP.format(base=_base(args.name), n="N")}" exists.')
    n, backup = backups[-1]
    n = max([n - 1, *(k for k, _ in _numbered(args.name, store.agent_rows(), "rewound"))]) + 1  # a free number
    swapped = SWAPPED.format(base=_base(args.name), n=n)
    print(f'Undoing the last rewind of "{args.name}": the copy "{backup}" becomes "{args.name}" again, and the '
          f'rewound agent is kept as "{swapped}".')
    if not _confirm("Undo?", args.yes):
        print("Not undone.")
        return 1
    Agent.rename_many({args.name: swapped, backup: args.name})
    print(f'"{args.name}" is back as it was before the rewind; the rewound one is "{swapped}" '
          f"(delete it with: agentos delete {swapped}).")
    return 0


def add_history_commands(sub: Any) -> None:
    """Register `history` and `rewind` on the top-level subparsers."""
    p = sub.add_parser("history", help="list an agent's restore points (one per turn)",
                       description="list an agent's restore points: its creation, then the end of each turn")
    p.set_defaults(handler=cmd_history)
    p.add_argument("name")
    p.add_argument("--last", type=int, default=20, help="only the last N points (0: all; default 20)")

    p = sub.add_parser("rewind", help="go back to a restore point (a copy of the agent is kept; --undo)",
                       description="restore an agent's blocks, context, summary, counters and archival memory to a "
                                   "restore point; the agent as it was is kept as a copy, which --undo puts back")
    p.set_defaults(handler=cmd_rewind)
    p.add_argument("name")
    p.add_argument("--to", type=int, metavar="N", help="the restore point (see agentos history NAME)")
    p.add_argument("--undo", action="store_true", help="put back the copy the last rewind kept")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
