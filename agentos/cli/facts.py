"""`agentos facts`: review, correct, prune and consolidate an agent's fact memory. Heavy imports happen inside
commands; every decision goes through the library (FactTier, Agent.consolidate), logged and undoable there."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING

from agentos.agent.agent import Agent
from agentos.cli.facts_text import (
    FIELD_WIDTH,
    Sources,
    _logged,
    _time,
    _title,
    _what,
    change_lines,
    fact_line,
    source_lines,
)
from agentos.commands.checks import named, require_facts
from agentos.errors import AgentOSError, FactError
from agentos.memory.facts.rows import FACT_CHANGES
from agentos.memory.facts.tier import FactTier
from agentos.retrieval.page import page_head
from agentos.times import moment_or_ago, parse_date

if TYPE_CHECKING:
    from agentos.memory.facts.rows import Fact


SOURCE_LIMIT = 300  # characters of a source message shown in `history`


# -- opening the agent ---------------------------------------------------------------------------


@contextmanager
def opened(name: str, *, write: bool) -> Iterator[tuple[Agent, FactTier]]:
    """The agent and its fact tier, read-only or held for writing (without a model); closed at the end."""
    agent = Agent.load(name, read_only=not write, with_model=False)
    try:
        facts = agent.tier(FactTier)
        if write and agent.settings.facts.mode != "off":
            facts.consolidator.stop()  # a command, not a session: no background model calls from it
        yield agent, facts
    except FactError as exc:
        raise AgentOSError(_named(str(exc), name)) from exc
    finally:
        agent.close()


_named = named  # the server names the agent in its hints too
_has_facts = require_facts  # and makes the same check


# -- dates, durations and numbers ----------------------------------------------------------------


def when(value: str | None, flag: str, now: datetime | None = None) -> datetime | None:
    """A moment given as a date (YYYY-MM-DD or ISO time, UTC) or a duration back from now (30m, 2h, 3d, 1w)."""
    return moment_or_ago(value, flag, now)


def _as_of(value: str | None) -> datetime | None:
    """`--as-of`: a date means the end of that day (what was believed on it)."""
    return parse_date(value, "--as-of", end=True)


def _empty(agent: Agent, facts: FactTier, what: str) -> str:
    """What to say when nothing was found, with what to do next."""
    if facts.in_use:
        return f"No {what}."
    return (f'No {what}: fact memory is off for "{agent.name}". Turn it on with: agentos facts {agent.name} on '
            f"(or consolidate what was said so far: agentos facts {agent.name} consolidate)")


# -- reading -------------------------------------------------------------------------------------


def cmd_list(args: argparse.Namespace) -> int:
    """`facts NAME list`: current facts, every version (--all), or those believed on a date (--as-of)."""
    as_of = _as_of(args.as_of)
    with opened(args.name, write=False) as (agent, facts):
        found = facts.listing(include_ended=args.all, as_of=as_of, subject=args.subject)
        scope = {"include_ended": args.all, "as_of": as_of, "subject": args.subject}
        if not found:
            print(_empty(agent, facts, _what(**scope)))
            return 0
        print(f"{_title(agent.name, **scope)} ({len(found)}), newest first:")
        for fact in found:
            print(f"  {fact_line(fact)}")
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    """`facts NAME search QUERY`: facts ranked by keywords, meaning and retention, a page at a time."""
    as_of = _as_of(args.as_of)
    with opened(args.name, write=False) as (agent, facts):
        page = facts.search(args.query, as_of=as_of, include_ended=args.all, subject=args.subject, page=args.page,
                            page_size=args.size, record=False)
        what = _what(include_ended=args.all, as_of=as_of, subject=args.subject)
        print(page_head(page, what, args.query) if page.total or facts.in_use else _empty(agent, facts, what))
        for fact in page.hits:
            print(f"  {fact_line(fact)}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    """`facts NAME show ID`: every field of one fact, and the messages it came from."""
    with opened(args.name, write=False) as (_, facts):
        fact = facts.require(args.id)
        print(fact.id)
        for label, value in _fields(fact, facts):
            print(f"  {label + ':':<{FIELD_WIDTH}} {value}")
        _print_sources(fact, facts.sources([fact]), None, "  ")
    return 0


def _fields(fact: Fact, facts: FactTier) -> list[tuple[str, str]]:
    """Every field of a fact, as (label, value), with the changes that made and ended it."""
    retrieved = f"{fact.retrieved_count} time(s)" + (f", last {_time(fact.last_retrieved_at)} UTC"
                                                     if fact.last_retrieved_at else "")
    rows = [
        ("text", fact.text), ("status", fact.status), ("subject", fact.subject), ("category", fact.category),
        ("confidence", f"{fact.confidence:.2f}"), ("valid from", f"{_time(fact.valid_from)} UTC"),
        ("valid to", f"{_time(fact.valid_to)} UTC" if fact.valid_to else "- (still holds)" if fact.current else "-"),
        ("recorded at", f"{_time(fact.recorded_at)} UTC"), ("supersedes", fact.supersedes or "-"),
        ("superseded by", fact.superseded_by or "-"), ("made by", _logged(facts, fact.change_id)),
        ("ended by", _logged(facts, fact.ended_by)),
    ]
    if fact.last_change and fact.last_change not in (fact.change_id, fact.ended_by):
        rows.append(("last change", _logged(facts, fact.last_change)))
    rows.append(("retrieved", retrieved))
    return rows


def _print_sources(fact: Fact, sources: Sources, limit: int | None, indent: str) -> None:
    """Print the messages a fact came from, under a heading."""
    lines = source_lines(fact, sources, limit)
    if not lines:
        print(f"{indent}{'sources:':<{FIELD_WIDTH}} none recorded")
        return
    print(f"{indent}sources ({len(lines)} message(s)):")
    for line in lines:
        print(f"{indent}  {line}")


def cmd_history(args: argparse.Namespace) -> int:
    """`facts NAME history ID`: every version of a fact, oldest first, with the changes that made and ended each."""
    with opened(args.name, write=False) as (_, facts):
        versions = facts.history(args.id)
        sources = facts.sources(versions)
        print(f"History of {args.id}: {len(versions)} version(s), oldest first (times in UTC).")
        for number, fact in enumerate(versions, 1):
            print(f"[{number}] {fact_line(fact)}")
            _print_version(fact, facts, sources)
    return 0


def _print_version(fact: Fact, facts: FactTier, sources: Sources) -> None:
    """Print how one version was made and ended, and its source messages."""
    made = _logged(facts, fact.change_id) + (f"; supersedes {fact.supersedes}" if fact.supersedes else "")
    print(f"    made:   {made}")
    if fact.ended_by:
        ended = _logged(facts, fact.ended_by)
        print(f"    ended:  {ended}" + (f"; superseded by {fact.superseded_by}" if fact.superseded_by else ""))
    elif fact.current:
        print("    ended:  - (current)")
    if fact.last_change and fact.last_change not in (fact.change_id, fact.ended_by):
        print(f"    since:  {_logged(facts, fact.last_change)}")
    for line in source_lines(fact, sources, SOURCE_LIMIT) or ["none recorded"]:
        print(f"    from:   {line}")


def cmd_changes(args: argparse.Namespace) -> int:
    """`facts NAME changes`: what consolidation and people did, oldest first (progress rows compacted)."""
    since = when(args.since, "--since")
    with opened(args.name, write=False) as (agent, facts):
        log = facts.changes(since)
        count = sum(1 for c in log if c.kind in FACT_CHANGES)
        after = f" since {_time(since)} UTC" if since else ""
        if not log:
            print(_empty(agent, facts, f"changes to facts{after}"))
            return 0
        print(f'{count} change(s) to the facts of "{agent.name}"{after}, oldest first (times in UTC). '
              f"Undo one with: agentos facts {agent.name} undo CHANGE")
        for line in change_lines(log, facts.by_ids(c.old_fact_id for c in log if c.old_fact_id)):
            print(f"  {line}")
    return 0


# -- people's decisions --------------------------------------------------------------------------


def _undo_hint(name: str, change_id: str) -> str:
    """How to take a decision back."""
    return f"Undo it with: agentos facts {name} undo {change_id}"


def cmd_correct(args: argparse.Namespace) -> int:
    """`facts NAME correct ID TEXT`: a new version of the fact, recorded as the user's decision."""
    with opened(args.name, write=True) as (_, facts):
        _has_facts(facts, args.name)
        change = facts.correct(args.id, args.text, reason=args.reason or "")
        print(f'Corrected {args.id}: superseded by {change.fact_id} "{" ".join(args.text.split())}" (change '
              f"{change.id}, your decision).")
        print(_undo_hint(args.name, change.id))
    return 0


def cmd_retract(args: argparse.Namespace) -> int:
    """`facts NAME retract ID`: the fact no longer holds (kept as history), recorded as the user's decision."""
    with opened(args.name, write=True) as (_, facts):
        _has_facts(facts, args.name)
        fact = facts.require(args.id)
        change = facts.retract(args.id, reason=args.reason or "")
        print(f'Retracted {fact.id} "{fact.text}" (change {change.id}, your decision). It is kept as history: '
              f"agentos facts {args.name} list --all")
        print(_undo_hint(args.name, change.id))
    return 0


def cmd_undo(args: argparse.Namespace) -> int:
    """`facts NAME undo CHANGE`: reverse one change (what it made is undone, what it ended holds again)."""
    with opened(args.name, write=True) as (_, facts):
        target = facts.change(args.change)
        if target.kind in FACT_CHANGES:
            _has_facts(facts, args.name)
        change = facts.undo(args.change)  # a skip or a progress row is refused, with what can be done instead
        done = [f"{target.fact_id} is undone"] if target.fact_id else []
        done += [f"{target.old_fact_id} holds again"] if target.old_fact_id else []
        print(f"Undid change {target.id} ({target.kind} by {target.by}): {'; '.join(done) or 'no fact changed'} "
              f"(logged as change {change.id}).")
    return 0


def _criteria(older_than: datetime | None, min_confidence: float | None) -> str:
    """What prune looks for, in words."""
    parts = [f"last used before {_time(older_than)} UTC"] if older_than else []
    parts += [f"with confidence below {min_confidence:g}"] if min_confidence is not None else []
    return " and ".join(parts)


def _confirm(question: str, yes: bool) -> bool:
    """Whether to go on: --yes, else a y/N answer on a terminal (without one, an error)."""
    if yes:
        return True
    if not sys.stdin.isatty():
        raise AgentOSError("refusing to prune without confirmation; pass --yes (or look first with --dry-run).")
    return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")


def cmd_prune(args: argparse.Namespace) -> int:
    """`facts NAME prune`: invalidate current facts unused since a date or not confident enough (undoable)."""
    older_than = when(args.older_than, "--older-than")
    if older_than is None and args.min_confidence is None:
        raise AgentOSError("say what to prune: --older-than WHEN (a date, or a duration such as 90d) and/or "
                           "--min-confidence X (facts less confident than X).")
    criteria = _criteria(older_than, args.min_confidence)
    with opened(args.name, write=not args.dry_run) as (_, facts):
        found = facts.prunable(older_than=older_than, min_confidence=args.min_confidence) if facts.in_use else []
        if not found:
            print(f"No current fact {criteria}: nothing to prune.")
            return 0
        print(f"{len(found)} current fact(s) {criteria} would be invalidated:")
        for fact in found:
            print(f"  {fact_line(fact)}")
        if args.dry_run:
            print("Dry run: nothing changed.")
            return 0
        if not _confirm(f"Invalidate these {len(found)} fact(s)? They are kept as history and can be undone.",
                        args.yes):
            print("Not pruned.")
            return 1
        made = facts.prune(found, reason=f"pruned by the user: {criteria}")
        print(f"Invalidated {len(made)} fact(s), kept as history. Undo one with: agentos facts {args.name} undo "
              f"CHANGE")
        for change in made:
            print(f"  {change.id}  {change.old_fact_id}")
    return 0
