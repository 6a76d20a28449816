"""`agentos audit NAME`: the agent's audit log, one line per read or change of its memory, newest last."""

from __future__ import annotations

import argparse
import json

from agentos.agent.agent import Agent
from agentos.storage.audit import AuditEntry
from agentos.times import moment_or_ago


def audit_line(entry: AuditEntry) -> str:
    """One entry as a line: when (local time), who, read or change, what, the target, how many, and the detail."""
    who = f"{entry.by.kind}: {entry.by.name}"
    line = (f"{entry.at.astimezone():%Y-%m-%d %H:%M:%S}  {who:<44}  {entry.action:<6}  {entry.what:<14}  "
            f"{entry.target or '-'}  {entry.count:,}")
    return f"{line}  ({entry.detail})" if entry.detail else line


def cmd_audit(args: argparse.Namespace) -> int:
    since = moment_or_ago(args.since, "--since")
    agent = Agent.load(args.name, read_only=True, with_model=False)
    try:
        entries = agent.store.audit.entries(agent.id, since=since, limit=args.limit or None)
    finally:
        agent.close()
    for entry in entries:
        print(json.dumps(entry.json(), ensure_ascii=False) if args.json else audit_line(entry))
    if not entries and not args.json:
        print("No audit entries" + (" since then." if since is not None else " yet."))
    return 0
