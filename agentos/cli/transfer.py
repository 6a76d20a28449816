"""The `export`, `import`, `fork` and `rename` commands: agents moved between files, names and copies."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from agentos.agent.agent import Agent, open_store
from agentos.commands.console import progress_bar
from agentos.commands.forking import fork_agent
from agentos.commands.importing import import_native, is_agentos_file
from agentos.errors import AgentOSError
from agentos.portable.archive import SUFFIX, export_agent
from agentos.portable.letta_export import export_af
from agentos.portable.letta_file import read_af
from agentos.portable.letta_import import import_af
from agentos.text import plural


def counted_rows(rows: dict[str, int]) -> str:
    """Each member's rows with its label, a plural noun, made singular for one: "4 messages, 1 restore point"."""
    def one(label: str) -> str:
        return label[:-3] + "y" if label.endswith("ies") else label.removesuffix("s")

    return ", ".join(plural(n, one(label), label) for label, n in rows.items())


def transfer_progress(what: str, done: int, total: int) -> None:
    """A progress bar for each table of at least 1,000 rows (smaller ones are done at once)."""
    if total >= 1000:
        progress_bar(what, done, total)


def cmd_export(args: argparse.Namespace) -> int:
    kind = args.format or ("af" if args.output and args.output.endswith(".af") else "agentos")
    path = Path(args.output or f"{args.name}{'.af' if kind == 'af' else SUFFIX}").expanduser()
    if path.exists() and not args.force:
        raise AgentOSError(f"{path} already exists; pass --force to overwrite it, or -o to write elsewhere.")
    also = getattr(args, "also", None) or []
    if also and kind != "af":
        raise AgentOSError("an agentos export holds one agent; --with is for Letta agent files (--format af).")
    if kind == "af":
        for line in export_af(open_store(), args.name, path, also).lines():
            print(line)
        return 0
    report = export_agent(open_store(), args.name, path, progress=transfer_progress)
    size = path.stat().st_size
    print(f'Exported agent "{args.name}" to {path} ({size / 1e6:,.1f} MB): {counted_rows(report.rows)}')
    for note in report.notes:
        print(f"  {note}")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    path = Path(args.file).expanduser()
    if not is_agentos_file(path):  # a Letta agent file (JSON)

        if not (args.agent or args.all) and sys.stdin.isatty():
            agents = read_af(path).agents
            if len(agents) > 1:
                for number, one in enumerate(agents, 1):
                    print(f"  {number}. {one.name} ({one.id})")
                answer = input(f"{path.name} holds {len(agents)} agents; import which (a number, or 'all')? ").strip()
                if answer.lower() == "all":
                    args.all = True
                elif answer.isdigit() and 1 <= int(answer) <= len(agents):
                    args.agent = agents[int(answer) - 1].id
                else:
                    raise AgentOSError(f"{answer!r} is not one of the numbers shown, nor 'all'; nothing was imported.")

        reports = import_af(open_store(), path, agent=args.agent, all_agents=args.all, name=args.name, model=args.model,
                            window=args.window)
        for letta in reports:
            for line in letta.lines():
                print(line)
        print("Chat with it: agentos chat " + " / ".join(r.name for r in reports))
        return 0
    if args.agent or args.all:
        raise AgentOSError(f"{path} is an agentos export, which holds one agent; --agent and --all are for Letta "
                           f"agent files.")
    report = import_native(open_store(), path, args.name, args.model, args.window, transfer_progress)
    print(f'Imported agent "{report.name}" from {args.file}: '
          + (counted_rows(report.rows) or "no rows"))
    if args.window is not None:
        print(f"  context window: {args.window:,} tokens (given on import)")
    for line in report.skipped:
        print(f"  not imported: {line}")
    for note in report.notes:
        print(f"  {note}")
    print(f"Chat with it: agentos chat {report.name}")
    return 0


def cmd_fork(args: argparse.Namespace) -> int:
    point = fork_agent(open_store(), args.name, args.new, args.at, transfer_progress)
    at = f" as it was at point {point.turn} ({point.label})" if point is not None else ""
    print(f'Forked "{args.name}"{at} as "{args.new}": an independent copy. Chat with it: agentos chat {args.new}')
    return 0


def cmd_rename(args: argparse.Namespace) -> int:
    if args.old == args.new:
        Agent.load(args.old, read_only=True, with_model=False).close()  # says that there is no such agent, if none
        raise AgentOSError(f'"{args.old}" already has that name; nothing was renamed. Give it another: '
                           f"agentos rename {args.old} NEW")
    Agent.rename(args.old, args.new)
    print(f'Renamed "{args.old}" to "{args.new}".')
    return 0
