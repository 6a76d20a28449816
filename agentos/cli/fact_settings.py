"""`agentos facts NAME consolidate|on|off`: consolidating now, and when fact memory consolidates by itself. Heavy
imports happen inside commands."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from agentos.cli.facts import opened
from agentos.cli.facts_text import _describe_mode, change_text, settings_lines
from agentos.commands.console import progress_bar
from agentos.errors import AgentOSError
from agentos.memory.facts.settings import FactSettings
from agentos.providers.local_servers import check_model
from agentos.providers.models import parse_spec

if TYPE_CHECKING:
    from agentos.agent.agent import Agent
    from agentos.memory.facts.reports import ConsolidationReport
    from agentos.memory.facts.rows import FactChange
    from agentos.memory.facts.settings import FactSettings
    from agentos.memory.facts.tier import FactTier


def cmd_consolidate(args: argparse.Namespace) -> int:
    """`facts NAME consolidate`: consolidate every saved message not yet consolidated, now, with progress; first
    read again the batches another model skipped (with --retry-skipped: every skipped batch)."""
    with opened(args.name, write=True) as (agent, facts):
        spec = _fact_model(agent, args.model)
        pending = facts.consolidator.pending(agent.state.message_count)
        retries = facts.consolidator.retryable(args.retry_skipped)
        if not pending and not retries:
            waiting = facts.skipped()
            print(f"Nothing {'new ' if waiting else ''}to consolidate: every saved message is consolidated "
                  f"({facts.count_current()} current fact(s)).")
            if waiting:
                print(_waiting(agent.name, waiting))
            return 0
        again = sum(len(s.message_ids) for s in retries)
        what = f"{pending} message(s)" + (f" and {len(retries)} skipped batch(es) ({again} message(s)) again"
                                          if retries else "")
        print(f"Consolidating {what} with {spec} ...", file=sys.stderr, flush=True)
        report = _consolidate(agent, facts, pending + again, args.retry_skipped)
        _print_report(agent.name, report)
    return 0


def _waiting(name: str, skipped: list[FactChange]) -> str:
    """The skipped batches that wait to be read again, and how to read them again."""
    messages = sum(len(s.message_ids) for s in skipped)
    models = ", ".join(sorted({s.model or "a model not recorded" for s in skipped}))
    return (f"{len(skipped)} batch(es) ({messages} message(s)) skipped by {models} wait to be read again (the latest: "
            f"{skipped[-1].reason}). Read them again with: agentos facts {name} consolidate --retry-skipped, or with "
            f"another model: agentos facts {name} consolidate --model SPEC")


def _fact_model(agent: Agent, spec: str | None) -> str:
    """Set up the model consolidation asks (`spec`, else the facts' model, else the agent's); its spec."""
    used = spec or agent.roles.spec("facts")
    try:
        if spec:
            agent.roles.use("facts", spec)
        agent.roles.provider("facts")
    except AgentOSError as exc:
        raise AgentOSError(f"consolidation needs a model, and {used} cannot be used: {exc} Give it another with: "
                           f"agentos facts {agent.name} consolidate --model SPEC") from exc
    return used


def _consolidate(agent: Agent, facts: FactTier, pending: int, retry_skipped: bool) -> ConsolidationReport:
    """Run consolidation with a progress bar on stderr; a failure says how far it got (that much is kept)."""
    done = [0]

    def progress(count: int, total: int) -> None:
        """Remember how far it got, and draw the bar."""
        done[0] = count
        progress_bar("consolidating", count, total)

    try:
        return agent.consolidate(progress, retry_skipped=retry_skipped)
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
    if any(b.skipped for b in report.batches):
        print(f"The skipped messages are kept for later: read them again with: agentos facts {name} consolidate "
              f"--retry-skipped (best with another model: add --model SPEC; a new facts model reads them again by "
              f"itself)")


def _set_facts(agent: Agent, changes: dict[str, Any]) -> FactSettings:
    """Change the agent's fact settings (validated) and save them."""
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
    with opened(args.name, write=True) as (agent, _):
        current = agent.settings.facts.mode
        changes["mode"] = args.mode or (current if current != "off" else "turn")
        settings = _set_facts(agent, changes)
        print(f'Fact memory of "{agent.name}" is on: {_describe_mode(settings)}.')
        print("\n".join(settings_lines(settings, agent.model)))
        print(f"Consolidate what was said so far now with: agentos facts {agent.name} consolidate")
    return 0


def cmd_off(args: argparse.Namespace) -> int:
    """`facts NAME off`: stop consolidating; the facts are kept and still found."""
    with opened(args.name, write=True) as (agent, facts):
        settings = _set_facts(agent, {"mode": "off"})
        print(f'Fact memory of "{agent.name}" is off: {_describe_mode(settings)}; its {facts.count_current()} '
              f"current fact(s) are kept" + (" and fact_search still finds them." if facts.in_use else "."))
        print("\n".join(settings_lines(settings, agent.model)))
    return 0
