"""The `export`, `import`, `fork` and `rename` commands: agents moved between files, names and copies."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from agentos.cli_memory import progress_bar
from agentos.errors import AgentOSError


def transfer_progress(what: str, done: int, total: int) -> None:
    """A progress bar for each table of at least 1,000 rows (smaller ones are done at once)."""
    if total >= 1000:
        progress_bar(what, done, total)


def cmd_export(args: argparse.Namespace) -> int:
    from agentos.agent.agent import open_store
    from agentos.portable.archive import SUFFIX, export_agent

    kind = args.format or ("af" if args.output and args.output.endswith(".af") else "agentos")
    path = Path(args.output or f"{args.name}{'.af' if kind == 'af' else SUFFIX}").expanduser()
    if path.exists() and not args.force:
        raise AgentOSError(f"{path} already exists; pass --force to overwrite it, or -o to write elsewhere.")
    if kind == "af":
        from agentos.portable.letta_export import export_af

        for line in export_af(open_store(), args.name, path).lines():
            print(line)
        return 0
    report = export_agent(open_store(), args.name, path, progress=transfer_progress)
    size = path.stat().st_size
    print(f'Exported agent "{args.name}" to {path} ({size / 1e6:,.1f} MB): '
          + ", ".join(f"{n:,} {what}" for what, n in report.rows.items()))
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    import zipfile

    from agentos.agent.agent import open_store
    from agentos.portable.archive import SUFFIX, import_agent

    path = Path(args.file).expanduser()
    native = path.suffix == SUFFIX or not path.is_file() or zipfile.is_zipfile(path)
    if not native:  # a Letta agent file (JSON)
        from agentos.portable.letta_file import read_af
        from agentos.portable.letta_import import import_af

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

        reports = import_af(open_store(), path, agent=args.agent, all_agents=args.all, name=args.name, model=args.model)
        for letta in reports:
            for line in letta.lines():
                print(line)
        print("Chat with it: agentos chat " + " / ".join(r.name for r in reports))
        return 0
    if args.agent or args.all:
        raise AgentOSError(f"{path} is an agentos export, which holds one agent; --agent and --all are for Letta "
                           f"agent files.")
    report = import_agent(open_store(), path, args.name, progress=transfer_progress, model=args.model)
    print(f'Imported agent "{report.name}" from {args.file}: '
          + (", ".join(f"{n:,} {what}" for what, n in report.rows.items()) or "no rows"))
    for line in report.skipped:
        print(f"  not imported: {line}")
    print(f"Chat with it: agentos chat {report.name}")
    return 0


def cmd_fork(args: argparse.Namespace) -> int:
    from agentos.agent.agent import open_store
    from agentos.portable.archive import copy_agent

    store = open_store()
    copy_agent(store, args.name, args.new, transfer_progress)
    at = ""
    if args.at is not None:
        from agentos.agent.agent import Agent

        fork = Agent.load(args.new, store=store, with_model=False)
        try:
            done = fork.rewind(args.at)
        except BaseException:
            fork.close()
            Agent.delete(args.new, store=store)  # no half-made fork left behind
            raise
        fork.close()
        at = f" as it was at point {done.point.turn} ({done.point.label})"
    print(f'Forked "{args.name}"{at} as "{args.new}": an independent copy. Chat with it: agentos chat {args.new}')
    return 0


def cmd_rename(args: argparse.Namespace) -> int:
    from agentos.agent.agent import Agent

    Agent.rename(args.old, args.new)
    print(f'Renamed "{args.old}" to "{args.new}".')
    return 0


def add_transfer_commands(sub: Any) -> None:
    """Register `export`, `import`, `fork` and `rename` on the top-level subparsers."""
    def add(name: str, handler: Any, help_text: str) -> argparse.ArgumentParser:
        p: argparse.ArgumentParser = sub.add_parser(name, help=help_text, description=help_text)
        p.set_defaults(handler=handler)
        return p

    p = add("export", cmd_export, "write an agent and everything it remembers to one file")
    p.add_argument("name")
    p.add_argument("-o", "--output", help="the file to write (default: NAME.agentos, or NAME.af, here)")
    p.add_argument("--format", choices=["agentos", "af"],
                   help="agentos (everything, the default) or af (a Letta Agent File; default for -o FILE.af)")
    p.add_argument("--force", action="store_true", help="overwrite the file if it exists")

    p = add("import", cmd_import, "restore an agent from an agentos export or a Letta Agent File (.af)")
    p.add_argument("file")
    p.add_argument("--name", help="import it under this name (needed when its own is taken)")
    p.add_argument("--agent", help="of a Letta file with several agents: the one to import (name or id)")
    p.add_argument("--all", action="store_true", help="of a Letta file with several agents: import each one")
    p.add_argument("--model", help="the model spec to use instead of the file's (needed when the file's names a server "
                                   "not on this machine)")

    p = add("fork", cmd_fork, "make an independent copy of an agent")
    p.add_argument("name")
    p.add_argument("new")
    p.add_argument("--at", type=int, metavar="POINT", help="copy it as it was at this restore point (agentos history)")

    p = add("rename", cmd_rename, "give an agent a new name")
    p.add_argument("old")
    p.add_argument("new")
