"""`forget` for every front end: an agent and the copies its rewinds kept (they hold what it held), planned for a
preview, then carried out one agent at a time; what cannot be forgotten is said."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

from agentos.agent.agent import Agent
from agentos.agent.forgetting import NOT_FORGOTTEN, ForgetPlan
from agentos.agent.sharing import shared_uses
from agentos.commands.rewinding import backups
from agentos.errors import AgentOSError, ForgetError
from agentos.memory.forget_request import ForgetRequest
from agentos.storage.forget_rows import mark_pending
from agentos.text import plural
from agentos.times import parse_date


@dataclass
class ForgetReport:
    """What was (or, in a dry run, would be) forgotten in one agent, or why it could not be."""

    name: str
    counts: dict[str, int] = field(default_factory=dict)
    previews: dict[str, list[str]] = field(default_factory=dict)
    error: str | None = None

    @classmethod
    def of(cls, name: str, plan: ForgetPlan) -> ForgetReport:
        return cls(name, plan.counts(), plan.previews)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def build_request(*, text: str | None = None, regex: str | None = None, fact_id: str | None = None,
                  before: str | None = None, between: tuple[str, str] | list[str] | None = None,
                  everything: bool = False) -> ForgetRequest:
    """The request the options of `agentos forget` (or the API's fields) name: dates are YYYY-MM-DD or ISO times,
    UTC; `between` includes its end day."""
    if before and between:
        raise ForgetError("give --before or --between, not both.")
    if text is not None and regex is not None:
        raise ForgetError("give --text or --regex, not both.")
    try:
        since, until = None, parse_date(before, "--before")
        if between:
            start, end = between
            since = parse_date(start, "--between's start")
            last = parse_date(end, "--between's end", end=True)
            until = None if last is None else last + timedelta(microseconds=1)
    except AgentOSError as exc:
        raise ForgetError(str(exc)) from None
    return ForgetRequest(text=regex if regex is not None else text, regex=regex is not None, fact_id=fact_id,
                         since=since, until=until, everything=everything)


def others_of(agent: Agent, request: ForgetRequest) -> list[str]:
    """The other agents that hold what `agent` holds: the copies its rewinds kept (`NAME.before-rewind-N`), oldest
    first, then, for text, the agents sharing with it a block that holds the text (their copies and logs hold it)."""
    names = [name for _, name in backups(agent.name, agent.store.agents.directory.names())]
    ids = {b.shared_id for b in agent.blocks if b.shared_id is not None}
    if request.by_content and ids:
        holding = {i for i, row in agent.store.shared.get(ids).items() if request.matches(row.value)}
        names += sorted({name for use in shared_uses(agent.store) if use.row.id in holding for name, _ in use.agents})
    return [n for n in dict.fromkeys(names) if n != agent.name]


def _in_each(agent: Agent, names: list[str], work: Callable[[Agent], ForgetPlan], *,
             read_only: bool) -> list[ForgetReport]:
    """`work` on each agent named (opened from `agent`'s store), a report each; one that cannot be opened (in use
    elsewhere) is reported, and the others go on."""
    reports = []
    for name in names:
        try:
            other = Agent.load(name, store=agent.store, read_only=read_only, with_model=False)
        except AgentOSError as exc:
            hint = "" if read_only else f" Forget it there with: agentos forget {name}"
            reports.append(ForgetReport(name, error=f"{exc}{hint}"))
            continue
        try:
            reports.append(ForgetReport.of(name, work(other)))
        finally:
            other.close()
    return reports


def plan_everywhere(agent: Agent, request: ForgetRequest) -> list[ForgetReport]:
    """What `request` would take from `agent` and from the others holding it (nothing changes)."""
    def plan(one: Agent) -> ForgetPlan:
        return one.forget(request, dry_run=True)
    return [ForgetReport.of(agent.name, plan(agent)), *_in_each(agent, others_of(agent, request), plan,
                                                                read_only=True)]


def forget_everywhere(agent: Agent, request: ForgetRequest) -> list[ForgetReport]:
    """Forget `request` in `agent` (open for writing) and in the others holding it (see `others_of`); one report per
    agent."""
    others = others_of(agent, request)
    ids = agent.store.agents.directory.names()  # names only: no agent's state is read
    for name in others:  # each finishes on its next open if this process dies before reaching it
        mark_pending(agent.store.db, ids[name], request.model_dump_json())
    def forget(one: Agent) -> ForgetPlan:
        return one.forget(request)
    return [ForgetReport.of(agent.name, forget(agent)), *_in_each(agent, others, forget, read_only=False)]

def describe(reports: list[ForgetReport], request: ForgetRequest, *, done: bool) -> list[str]:
    """Lines for people: per agent, what goes from where (with a few examples), then what cannot be forgotten."""
    verb = "Forgot" if done else "Will forget"
    lines = [f"{verb} {request.describe()}:"]
    for report in reports:
        if report.error:
            lines.append(f"  {report.name}: not done: {report.error}")
            continue
        if not report.counts:
            lines.append(f"  {report.name}: nothing found")
            continue
        lines.append(f"  {report.name}:")
        for what, count in report.counts.items():
            lines.append(f"    {what}: {count:,}")
            lines += [f"      {snippet}" for snippet in report.previews.get(what, [])]
    if any(r.total for r in reports):
        lines.append("Not reached by forget: " + "; ".join(NOT_FORGOTTEN) + ".")
    if not done and any(r.total for r in reports):
        lines.append(f"In all: {plural(sum(r.total for r in reports), 'item')} in "
                     f"{plural(sum(1 for r in reports if r.total), 'agent')}.")
    return lines
