"""`agentos facts`: review, correct, prune and consolidate an agent's fact memory. Heavy imports happen inside
commands; every decision goes through the library (FactTier, Agent.consolidate), logged and undoable there."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from agentos.cli_facts_text import (
    FIELD_WIDTH,
    Sources,
    _describe_mode,
    _logged,
    _time,
    _title,
    _what,
    change_lines,
    change_text,
    fact_line,
    settings_lines,
    source_lines,
)
from agentos.errors import AgentOSError

if TYPE_CHECKING:
    from agentos.agent.agent import Agent
    from agentos.agent.consolidator import ConsolidationReport
    from agentos.agent.state import FactSettings
    from agentos.memory.fact_rows import Fact
    from agentos.memory.facts import FactPage, FactTier


DURATION = re.compile(r"(\d+)\s*([smhdw])")
UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
MODES = ("turn", "batch", "idle")
SOURCE_LIMIT = 300  # characters of a source message shown in `history`


# -- opening the agent ---------------------------------------------------------------------------


@contextmanager
def _opened(name: str, *, write: bool) -> Iterator[tuple[Agent, FactTier]]:
    """The agent and its fact tier, read-only or held for writing (without a model); closed at the end."""
    from agentos.agent.agent import Agent
    from agentos.errors import FactError
    from agentos.memory.facts import FactTier

    agent = Agent.load(name, read_only=not write, with_model=False)
    try:
        if write and agent.settings.facts.mode != "off":
            agent.consolidator.stop()  # a command, not a session: no background model calls from it
        yield agent, agent.tier(FactTier)
    except FactError as exc:
        raise AgentOSError(_named(str(exc), name)) from exc
    finally:
        agent.close()


def _named(text: str, name: str) -> str:
    """A library message with the agent's name in its hint (`agentos facts AGENT ...`)."""
    return text.replace("agentos facts AGENT ", f"agentos facts {name} ")


def _has_facts(facts: FactTier, name: str) -> None:
    """Refuse to change fact memory an agent does not use (a writer would create its tables for nothing)."""
    if not facts.in_use:
        raise AgentOSError(f'agent "{name}" has no facts yet. Consolidate its conversation with: agentos facts {name} '
                           f"consolidate, or turn fact memory on with: agentos facts {name} on")


# -- dates, durations and numbers ----------------------------------------------------------------


def when(value: str | None, flag: str, now: datetime | None = None) -> datetime | None:
    """A moment given as a date (YYYY-MM-DD or ISO time, UTC) or a duration back from now (30m, 2h, 3d, 1w)."""
    from agentos.retrieval.search import parse_date

    if value is None:
        return None
    text = value.strip().lower()
    match = DURATION.fullmatch(text)
    if match:
        try:
            return (now or datetime.now(UTC)) - timedelta(**{UNITS[match.group(2)]: int(match.group(1))})
        except OverflowError:
            raise AgentOSError(f"{flag} {value!r} reaches back past year 1; give a shorter duration.") from None
    if not re.match(r"\d{4}-", text):
        raise AgentOSError(f"{flag} {value!r} is not a date or a duration: use YYYY-MM-DD, an ISO time "
                           f"(YYYY-MM-DDTHH:MM), or a duration back from now such as 30m, 2h, 3d, 1w.")
    return parse_date(value, flag)


def _as_of(value: str | None) -> datetime | None:
    """`--as-of`: a date means the end of that day (what was believed on it)."""
    from agentos.retrieval.search import parse_date

    return parse_date(value, "--as-of", end=True)


def _page_number(text: str) -> int:
    """An argparse type: a page number, from 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is below 0 (pages start at 0)")
    return value


def _fraction(text: str) -> float:
    """An argparse type: a number from 0 to 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{value:g} is not between 0 and 1")
    return value


def _seconds(text: str) -> float:
    """An argparse type: a number of seconds above zero."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{value:g} must be above zero")
    return value


def _positive(text: str) -> int:
    """An argparse type: a whole number above zero."""
    value = _count(text)
    if value == 0:
        raise argparse.ArgumentTypeError("0 must be above zero")
    return value


def _count(text: str) -> int:
    """An argparse type: a whole number from 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is below 0")
    return value


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
    with _opened(args.name, write=False) as (agent, facts):
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
    with _opened(args.name, write=False) as (agent, facts):
        page = facts.search(args.query, as_of=as_of, include_ended=args.all, subject=args.subject, page=args.page,
                            page_size=args.size, record=False)
        what = _what(include_ended=args.all, as_of=as_of, subject=args.subject)
        print(_search_head(page, what, args.query) if page.total or facts.in_use else _empty(agent, facts, what))
        for fact in page.facts:
            print(f"  {fact_line(fact)}")
    return 0


def _search_head(page: FactPage, what: str, query: str) -> str:
    """The head of a page of search results, with true totals."""
    pages = -(-page.total // page.page_size)
    note = f"\n{page.note}" if page.note else ""
    if not page.total:
        return f"No {what} found" + (f" for {query!r}." if query else ".") + note
    if not page.facts:
        return f"Page {page.page} is past the end: {page.total} {what}, {pages} page(s) (pages start at 0)." + note
    first = page.page * page.page_size
    return (f"Showing {what} {first + 1}-{first + len(page.facts)} of {page.total} (page {page.page} of {pages}; "
            f"pages start at 0):" + note)


def cmd_show(args: argparse.Namespace) -> int:
    """`facts NAME show ID`: every field of one fact, and the messages it came from."""
    with _opened(args.name, write=False) as (_, facts):
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
    with _opened(args.name, write=False) as (_, facts):
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
    from agentos.memory.fact_rows import FACT_CHANGES

    since = when(args.since, "--since")
    with _opened(args.name, write=False) as (agent, facts):
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
    with _opened(args.name, write=True) as (_, facts):
        _has_facts(facts, args.name)
        change = facts.correct(args.id, args.text, reason=args.reason or "")
        print(f'Corrected {args.id}: superseded by {change.fact_id} "{" ".join(args.text.split())}" (change '
              f"{change.id}, your decision).")
        print(_undo_hint(args.name, change.id))
    return 0


def cmd_retract(args: argparse.Namespace) -> int:
    """`facts NAME retract ID`: the fact no longer holds (kept as history), recorded as the user's decision."""
    with _opened(args.name, write=True) as (_, facts):
        _has_facts(facts, args.name)
        fact = facts.require(args.id)
        change = facts.retract(args.id, reason=args.reason or "")
        print(f'Retracted {fact.id} "{fact.text}" (change {change.id}, your decision). It is kept as history: '
              f"agentos facts {args.name} list --all")
        print(_undo_hint(args.name, change.id))
    return 0


def cmd_undo(args: argparse.Namespace) -> int:
    """`facts NAME undo CHANGE`: reverse one change (what it made is undone, what it ended holds again)."""
    with _opened(args.name, write=True) as (_, facts):
        _has_facts(facts, args.name)
        target = facts.change(args.change)
        change = facts.undo(args.change)
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
    with _opened(args.name, write=not args.dry_run) as (_, facts):
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


# -- consolidation and settings ------------------------------------------------------------------


def cmd_consolidate(args: argparse.Namespace) -> int:
    """`facts NAME consolidate`: consolidate every saved message not yet consolidated, now, with progress."""
    with _opened(args.name, write=True) as (agent, facts):
        spec = _fact_model(agent, args.model)
        pending = agent.consolidator.pending(agent.state.message_count)
        if not pending:
            print(f"Nothing to consolidate: every saved message is consolidated ({facts.count_current()} current "
                  f"fact(s)).")
            return 0
        print(f"Consolidating {pending} message(s) with {spec} ...", file=sys.stderr, flush=True)
        report = _consolidate(agent, pending)
        _print_report(agent.name, report)
    return 0


def _fact_model(agent: Agent, spec: str | None) -> str:
    """Set up the model consolidation asks (`spec`, else the facts' model, else the agent's); its spec."""
    from agentos.agent.agent import provider_options
    from agentos.config import configured_window
    from agentos.providers.registry import resolve_model

    used = spec or agent.settings.facts.model or agent.model
    try:
        if spec:
            agent.fact_provider = resolve_model(spec, context_window=configured_window(spec),
                                                **provider_options(agent.settings))
        agent.fact_model()
    except AgentOSError as exc:
        raise AgentOSError(f"consolidation needs a model, and {used} cannot be used: {exc} Give it another with: "
                           f"agentos facts {agent.name} consolidate --model SPEC") from exc
    return used


def _consolidate(agent: Agent, pending: int) -> ConsolidationReport:
    """Run consolidation with a progress bar on stderr; a failure says how far it got (that much is kept)."""
    from agentos.cli_memory import progress_bar

    done = [0]

    def progress(count: int, total: int) -> None:
        """Remember how far it got, and draw the bar."""
        done[0] = count
        progress_bar("consolidating", count, total)

    try:
        return agent.consolidate(progress=progress)
    except AgentOSError as exc:
        if 0 < done[0] < pending:
            sys.stderr.write("\n")
        raise AgentOSError(f"consolidation stopped after {done[0]} of {pending} message(s): {exc} What it did so far "
                           f"is kept; run agentos facts {agent.name} consolidate again to go on.") from exc


def _print_report(name: str, report: ConsolidationReport) -> None:
    """Print what a consolidation run did: the summary, each change, each skipped batch."""
    print(report.summary() + ".")
    for change in report.changes:
        print(f"  {change.id}  {change_text(change, {})}")
    for batch in report.batches:
        if batch.skipped:
            print(f"  skipped {batch.messages} message(s): {batch.skipped}")
    if report.changes:
        print(f"Review them with: agentos facts {name} changes (undo one with: agentos facts {name} undo CHANGE)")


def _set_facts(agent: Agent, changes: dict[str, Any]) -> FactSettings:
    """Change the agent's fact settings (validated) and save them."""
    from pydantic import ValidationError

    from agentos.agent.state import FactSettings

    try:
        settings = FactSettings.model_validate({**agent.settings.facts.model_dump(), **changes})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise AgentOSError(f"invalid fact settings: {problems}") from exc
    agent.update_settings(facts=settings)
    agent.save()
    return settings


def _model_spec(spec: str) -> str | None:
    """`--model`: a spec checked before it is saved, or None for `default` (the agent's own model)."""
    if spec.strip().lower() == "default":
        return None
    from agentos.providers.local_servers import check_model
    from agentos.providers.models import parse_spec

    parse_spec(spec)
    note = check_model(spec)
    if note:
        print(f"warning: {note}", file=sys.stderr)
    return spec.strip()


def cmd_on(args: argparse.Namespace) -> int:
    """`facts NAME on`: consolidate in the background (after every turn unless --mode says otherwise)."""
    changes: dict[str, Any] = {}
    for key, value in (("batch_turns", args.batch), ("idle_seconds", args.idle), ("prompt_tokens", args.prompt_tokens)):
        if value is not None:
            changes[key] = value
    if args.model is not None:
        changes["model"] = _model_spec(args.model)
    with _opened(args.name, write=True) as (agent, _):
        current = agent.settings.facts.mode
        changes["mode"] = args.mode or (current if current != "off" else "turn")
        settings = _set_facts(agent, changes)
        print(f'Fact memory of "{agent.name}" is on: {_describe_mode(settings)}.')
        print("\n".join(settings_lines(settings, agent.model)))
        print(f"Consolidate what was said so far now with: agentos facts {agent.name} consolidate")
    return 0


def cmd_off(args: argparse.Namespace) -> int:
    """`facts NAME off`: stop consolidating; the facts are kept and still found."""
    with _opened(args.name, write=True) as (agent, facts):
        settings = _set_facts(agent, {"mode": "off"})
        print(f'Fact memory of "{agent.name}" is off: {_describe_mode(settings)}; its {facts.count_current()} '
              f"current fact(s) are kept" + (" and fact_search still finds them." if facts.in_use else "."))
        print("\n".join(settings_lines(settings, agent.model)))
    return 0


# -- the parser ----------------------------------------------------------------------------------

ACTIONS: dict[str, Callable[[argparse.Namespace], int]] = {
    "list": cmd_list, "search": cmd_search, "show": cmd_show, "history": cmd_history, "changes": cmd_changes,
    "correct": cmd_correct, "retract": cmd_retract, "undo": cmd_undo, "prune": cmd_prune,
    "consolidate": cmd_consolidate, "on": cmd_on, "off": cmd_off,
}


def cmd_facts(args: argparse.Namespace) -> int:
    """Run one `agentos facts NAME ACTION`."""
    return ACTIONS[args.action](args)


def _when_of(p: argparse.ArgumentParser) -> None:
    """`--as-of` or `--all` (not both) and `--subject`, for list and search."""
    group = p.add_mutually_exclusive_group()
    group.add_argument("--as-of", metavar="DATE", help="what was believed then (YYYY-MM-DD: the end of that day, or an "
                                                       "ISO time, UTC)")
    group.add_argument("--all", action="store_true", help="every version, with its status")
    p.add_argument("--subject", help='only facts about this subject ("user", "agent", or a name)')


def _reading_actions(actions: Any) -> None:
    """Register list, search, show, history and changes."""
    _when_of(actions.add_parser("list", help="current facts, newest first (--all: every version; --as-of: then)"))
    s = actions.add_parser("search", help="facts ranked by keywords, meaning and how much they are used")
    s.add_argument("query", help='what to look for; "" lists the newest')
    _when_of(s)
    s.add_argument("--page", type=_page_number, default=0, help="page number, from 0")
    s.add_argument("--size", type=_positive, default=10, help="results per page")
    actions.add_parser("show", help="every field of one fact, and the messages it came from").add_argument("id")
    actions.add_parser("history", help="every version of a fact, oldest first, with the changes that made and "
                                       "ended each").add_argument("id")
    c = actions.add_parser("changes", help="the log of what consolidation and people did, oldest first")
    c.add_argument("--since", metavar="WHEN", help="only changes since then: YYYY-MM-DD, an ISO time, or a duration "
                                                   "back from now (30m, 2h, 3d, 1w)")


def _deciding_actions(actions: Any) -> None:
    """Register correct, retract, undo and prune."""
    c = actions.add_parser("correct", help="replace a fact with corrected text (your decision; undoable)")
    c.add_argument("id")
    c.add_argument("text", help="the fact as it should read")
    c.add_argument("--reason", help="why (kept in the change log)")
    r = actions.add_parser("retract", help="say a fact does not hold (kept as history; undoable)")
    r.add_argument("id")
    r.add_argument("--reason", help="why (kept in the change log)")
    actions.add_parser("undo", help="reverse one change from `changes`").add_argument("change")
    p = actions.add_parser("prune", help="invalidate facts unused for long or not confident enough (undoable)")
    p.add_argument("--older-than", metavar="WHEN", help="last used before then: a date, or a duration such as 90d")
    p.add_argument("--min-confidence", type=_fraction, metavar="X", help="less confident than X (0 to 1)")
    p.add_argument("--dry-run", action="store_true", help="only list what would be invalidated")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")


def _setting_actions(actions: Any) -> None:
    """Register consolidate, on and off."""
    c = actions.add_parser("consolidate", help="consolidate the conversation into facts now, in the foreground")
    c.add_argument("--model", metavar="SPEC", help="use this model for this run (default: the facts' model, else "
                                                   "the agent's)")
    on = actions.add_parser("on", help="consolidate in the background (default: after every turn)")
    on.add_argument("--mode", choices=MODES, help="turn: after every turn (the default when off); batch: once "
                                                  "--batch turns wait; idle: once idle --idle seconds")
    on.add_argument("--batch", type=_positive, metavar="N", help="turns per batch (mode batch)")
    on.add_argument("--idle", type=_seconds, metavar="SECONDS", help="idle time before consolidating (mode idle)")
    on.add_argument("--model", metavar="SPEC", help="a (cheaper) model for consolidation; `default`: the agent's own "
                                                    "(as it starts)")
    on.add_argument("--prompt-tokens", type=_count, metavar="N",
                    help="put the most used facts about the user in the prompt, in this many tokens (0: none)")
    actions.add_parser("off", help="stop consolidating (facts are kept and still found)")


def add_facts_commands(sub: Any) -> None:
    """Register `facts` on the top-level subparsers."""
    p = sub.add_parser("facts", help="review, correct, prune and consolidate an agent's fact memory",
                       description="an agent's fact memory: facts consolidated from its conversation, every version "
                                   "kept and every change logged (and undoable)")
    p.set_defaults(handler=cmd_facts)
    p.add_argument("name", metavar="NAME", help="the agent")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    _reading_actions(actions)
    _deciding_actions(actions)
    _setting_actions(actions)
