"""The `history` and `rewind` commands: an agent's restore points, going back to one, and undoing that."""

from __future__ import annotations

import argparse
import sys

from agentos.agent.agent import Agent, open_store
from agentos.cli.transfer import transfer_progress
from agentos.commands.rewinding import backups, find_point, next_backup_name, rewind_keeping_copy, undo_plan
from agentos.errors import AgentOSError


def cmd_history(args: argparse.Namespace) -> int:
    agent = Agent.load(args.name, read_only=True)
    points = agent.restore_points()
    shown = points[-args.last:] if args.last else points
    print(f'Restore points of "{agent.name}" (rewind with: agentos rewind {agent.name} --to N):')
    print(f"  {'N':>4}  {'WHEN':<16}  {'MESSAGES':>8}  QUESTION")
    for point in shown:
        print(f"  {point.turn:>4}  {point.at.astimezone():%Y-%m-%d %H:%M}  {point.message_count:>8,}  {point.label}")
    kept = backups(agent.name, agent.store.agent_rows())
    if kept:
        print(f"Copies kept by earlier rewinds: {', '.join(name for _, name in kept)} "
              f"(agentos rewind {agent.name} --undo puts the newest back)")
    return 0


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

    agent = Agent.load(args.name, with_model=False)
    try:
        point = find_point(agent, args.to)
        turns = len(agent.restore_points()) - 1 - point.turn
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
    backup, swapped = undo_plan(open_store(), args.name)
    print(f'Undoing the last rewind of "{args.name}": the copy "{backup}" becomes "{args.name}" again, and the '
          f'rewound agent is kept as "{swapped}".')
    if not _confirm("Undo?", args.yes):
        print("Not undone.")
        return 1
    Agent.rename_many({args.name: swapped, backup: args.name})
    print(f'"{args.name}" is back as it was before the rewind; the rewound one is "{swapped}" '
          f"(delete it with: agentos delete {swapped}).")
    return 0
