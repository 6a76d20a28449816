"""`agentos memory|archival|recall|reindex`: the memory subcommands. Heavy imports happen inside commands."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from agentos.errors import AgentOSError


def _load(name: str, *, write: bool = False) -> Any:
    """The agent, read-only unless the command changes it (then it takes the agent's lease, but no model)."""
    from agentos.agent.agent import Agent

    return Agent.load(name, read_only=not write, with_model=False)


def _tags(raw: str | None) -> list[str] | None:
    return [t.strip() for t in raw.split(",") if t.strip()] if raw else None


def _dates(args: argparse.Namespace) -> tuple[Any, Any]:
    from agentos.errors import ToolError
    from agentos.retrieval.search import date_range

    try:
        return date_range(args.since, args.until, names=("--since", "--until"))
    except ToolError as exc:
        raise AgentOSError(str(exc)) from exc


def _page(page: Any, what: str, query: str) -> None:
    from agentos.retrieval.search import format_page

    print(format_page(page, what, query))


def cmd_archival(args: argparse.Namespace) -> int:
    from agentos.memory.archival import ArchivalTier

    agent = _load(args.name, write=args.action in ("add", "delete"))
    try:
        return _archival(agent, agent.tier(ArchivalTier), args)
    finally:
        agent.close()


def _archival(agent: Any, archival: Any, args: argparse.Namespace) -> int:
    if args.action == "add":
        text = sys.stdin.read() if args.text == "-" else args.text
        done = archival.insert(text, tags=_tags(args.tags), source="cli")
        if done.ids:
            print(f"Stored {len(done.ids)} passage(s): {', '.join(done.ids)}")
        if done.duplicates:
            print(f"Already stored, skipped: {', '.join(dict.fromkeys(done.duplicates))}")
    elif args.action in ("search", "list"):
        start, end = _dates(args)
        query = args.query if args.action == "search" else ""
        page = archival.search(query, page=args.page, page_size=args.size, tags=_tags(args.tags), start=start, end=end)
        _page(page, "passages", query)
    elif args.action == "delete":
        if not archival.delete(args.id):
            raise AgentOSError(f"no archival passage {args.id!r} in agent {args.name!r}.")
        print(f"Deleted {args.id}; {archival.count()} passage(s) left.")
    return 0


def read_value(raw: str) -> str:
    """A value given on the command line: the text itself, `@FILE` for a file's text, or `-` for stdin."""
    if raw == "-":
        return sys.stdin.read()
    if raw.startswith("@"):
        path = raw[1:]
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError as exc:
            raise AgentOSError(f"could not read {path}: {exc.strerror or exc}. Give an existing file after @.") from exc
    return raw


def edit_diff(old: str, new: str) -> list[str]:
    """The lines an edit removed (-) and added (+), without context lines or file headers."""
    import difflib

    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0)
    return [line for line in lines if line[:1] in "+-" and not line.startswith(("---", "+++"))]


def cmd_memory(args: argparse.Namespace) -> int:
    from agentos.formatting import block_header, format_blocks

    agent = _load(args.name, write=args.action == "set")
    try:
        if args.action == "set":
            value = read_value(args.value).rstrip("\n")
            edit = agent.set_block(args.label, value)
            print(f"Set block \"{edit.label}\": {len(edit.old_value):,} -> {len(edit.new_value):,} characters "
                  f"(logged as your edit).")
            print(block_header(agent.block(edit.label)))
        elif args.action == "show":
            print(format_blocks(agent.blocks))
        else:  # log
            edits = [e for e in agent.memory_edits() if args.label in (None, e.label)]
            for edit in edits[-args.last:] if args.last else edits:
                who = "the model" + (f" ({edit.tool_call_id})" if edit.tool_call_id else "") if edit.by == "agent" \
                    else "you (by hand)"
                print(f"{edit.at:%Y-%m-%d %H:%M:%S}  [{edit.label}]  by {who}: {len(edit.old_value):,} -> "
                      f"{len(edit.new_value):,} chars")
                for line in edit_diff(edit.old_value, edit.new_value):
                    print(f"    {line}")
            if not edits:
                print("No memory edits yet.")
    finally:
        agent.close()
    return 0


def cmd_recall(args: argparse.Namespace) -> int:
    from agentos.memory.recall import RecallTier
    from agentos.retrieval.recall_paths import MATCHING_PATHS

    agent = _load(args.name)
    start, end = _dates(args)
    page = agent.tier(RecallTier).search(args.query, page=args.page, page_size=args.size, start=start, end=end,
                                         roles=args.role or None, paths=MATCHING_PATHS)
    _page(page, "messages", args.query)
    return 0


def cmd_reindex(args: argparse.Namespace) -> int:
    agent = _load(args.name, write=True)
    try:
        counts = agent.reindex(args.embedder, progress=progress_bar)
    finally:
        agent.close()
    done = ", ".join(f"{n} {tier}" for tier, n in counts.items())
    print(f"Re-embedded with {args.embedder}: {done}.")
    return 0


def progress_bar(what: str, done: int, total: int) -> None:
    width = 30
    filled = width * done // total if total else width
    sys.stderr.write(f"\r{what:<18} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
    if done >= total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def _filters(p: argparse.ArgumentParser, tags: bool = True) -> None:
    p.add_argument("--since", help="on or after this date (YYYY-MM-DD or ISO time, UTC)")
    p.add_argument("--until", help="on or before this date (YYYY-MM-DD or ISO time, UTC)")
    if tags:
        p.add_argument("--tags", help="comma-separated tags (any of them)")
    p.add_argument("--page", type=int, default=0, help="page number, from 0")
    p.add_argument("--size", type=int, default=10, help="results per page")


def add_memory_commands(sub: Any) -> None:
    """Register `memory`, `archival`, `recall` and `reindex` on the top-level subparsers."""
    p = sub.add_parser("memory", help="show, set or list edits of an agent's core memory blocks",
                       description="show an agent's core memory blocks, set one by hand, or list the edit log")
    p.set_defaults(handler=cmd_memory)
    p.add_argument("name")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    actions.add_parser("show", help="every block with its size and limit")
    s = actions.add_parser("set", help="replace a block's whole value (logged as your edit)")
    s.add_argument("label")
    s.add_argument("value", help="the new text, @FILE to read it from a file, or - to read stdin")
    log = actions.add_parser("log", help="the edit log as diffs, oldest first: when, who (the model or you), which block")
    log.add_argument("label", nargs="?", help="only this block's edits")
    log.add_argument("--last", type=int, default=0, help="only the last N edits")

    p = sub.add_parser("archival", help="add, search, list or delete archival passages",
                       description="add, search, list or delete an agent's archival passages")
    p.set_defaults(handler=cmd_archival)
    p.add_argument("name")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    a = actions.add_parser("add", help="store text (chunked; duplicates skipped)")
    a.add_argument("text", help="the text, or - to read stdin")
    a.add_argument("--tags", help="comma-separated tags")
    s = actions.add_parser("search", help="hybrid search")
    s.add_argument("query")
    _filters(s)
    _filters(actions.add_parser("list", help="list passages, newest first"))
    d = actions.add_parser("delete", help="delete one passage by id")
    d.add_argument("id")

    p = sub.add_parser("recall", help="search an agent's past conversation",
                       description="search an agent's past conversation (recall memory)")
    p.set_defaults(handler=cmd_recall)
    p.add_argument("name")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    s = actions.add_parser("search", help="search messages; an empty query with --since/--until lists by date")
    s.add_argument("query")
    s.add_argument("--role", action="append", choices=["user", "assistant"], help="only this role (repeatable)")
    _filters(s, tags=False)

    p = sub.add_parser("reindex", help="re-embed an agent's memory with another embedder",
                       description="re-embed archival passages and recall messages with another embedder")
    p.set_defaults(handler=cmd_reindex)
    p.add_argument("name")
    p.add_argument("--embedder", required=True, help="none, hash:384, openai/MODEL, ollama/MODEL, st/MODEL")
