"""`agentos memory|archival|recall|reindex`: the memory subcommands. Heavy imports happen inside commands."""

from __future__ import annotations

import argparse
import difflib
import sys
from typing import Any

from agentos.agent.agent import Agent
from agentos.commands.console import progress_bar
from agentos.errors import AgentOSError, ToolError
from agentos.formatting import block_header, who_made
from agentos.memory.archival import ArchivalTier
from agentos.memory.recall import RecallTier
from agentos.memory.secret_gate import describe, removed_between
from agentos.retrieval.page import format_page
from agentos.retrieval.recall_paths import MATCHING_PATHS
from agentos.times import date_range


def _load(name: str, *, write: bool = False) -> Any:
    """The agent, read-only unless the command changes it (then it takes the agent's lease, but no model)."""
    return Agent.load(name, read_only=not write, with_model=False)


def _tags(raw: str | None) -> list[str] | None:
    return [t.strip() for t in raw.split(",") if t.strip()] if raw else None


def _dates(args: argparse.Namespace) -> tuple[Any, Any]:
    try:
        return date_range(args.since, args.until, names=("--since", "--until"))
    except ToolError as exc:
        raise AgentOSError(str(exc)) from exc


def _page(page: Any, what: str, query: str) -> None:
    print(format_page(page, what, query))


def cmd_archival(args: argparse.Namespace) -> int:
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
        if done.secrets:
            print(secrets_line(done.secrets, agent.name))
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


def secrets_line(removed: dict[str, int], name: str) -> str:
    """What the secret gate kept out of what was stored, for people."""
    return (f"The secret gate stored {describe(removed)} as a placeholder; the secret itself was not kept "
            f"(agentos secrets {name} off turns the gate off).")


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
    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0)
    return [line for line in lines if line[:1] in "+-" and not line.startswith(("---", "+++"))]


def cmd_memory_set(args: argparse.Namespace) -> int:
    """`memory NAME set LABEL VALUE`: replace a block's whole value, logged as the user's edit."""
    agent = _load(args.name, write=True)
    try:
        value = read_value(args.value).rstrip("\n")
        edit = agent.set_block(args.label, value)
        print(f"Set block \"{edit.label}\": {len(edit.old_value):,} -> {len(edit.new_value):,} characters "
              f"(logged as your edit).")
        removed = removed_between(value, edit.new_value)
        if removed:
            print(secrets_line(removed, agent.name))
        print(block_header(agent.block(edit.label)))
        cut = next((c for c in agent.prompts.cuts(agent.blocks) if c.label == edit.label), None)
        if cut is not None:
            why = f"over its limit of {cut.limit:,}" if cut.over_limit else "more than the context window has room for"
            print(f"The model still sees it cut to {cut.shown:,} characters: it is {why}. Shorten it further to "
                  f"show all of it.")
        elif len(edit.old_value) > len(edit.new_value) and len(edit.old_value) > agent.block(edit.label).limit:
            print("It fits now: the model sees all of it again.")
    finally:
        agent.close()
    return 0


def cmd_memory_log(args: argparse.Namespace) -> int:
    """`memory NAME log [LABEL]`: the edit log as diffs, oldest first."""
    agent = _load(args.name)
    try:
        edits = [e for e in agent.memory_edits() if args.label in (None, e.label)]
        labels = [block.label for block in agent.blocks]
        if args.label is not None and not edits and args.label not in labels:
            raise AgentOSError(f'agent "{agent.name}" has no block "{args.label}" and no edits of one: its blocks are '
                               f"{', '.join(labels)}.")
        for edit in edits[-args.last:] if args.last else edits:
            print(f"{edit.at:%Y-%m-%d %H:%M:%S}  [{edit.label}]  by {who_made(edit)}: {len(edit.old_value):,} -> "
                  f"{len(edit.new_value):,} chars")
            for line in edit_diff(edit.old_value, edit.new_value):
                print(f"    {line}")
        if not edits:
            print("No memory edits yet." if args.label is None else f'No edits of block "{args.label}" yet.')
    finally:
        agent.close()
    return 0


def cmd_recall(args: argparse.Namespace) -> int:
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
