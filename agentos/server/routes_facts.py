"""An agent's fact memory over HTTP: list, search, the change log, and people's decisions (correct, retract), each
logged and undoable as from the CLI."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from fastapi import APIRouter, Query

from agentos.agent.agent import Agent
from agentos.commands.checks import named, require_facts
from agentos.errors import AgentOSError, FactError
from agentos.memory.facts.tier import FactTier
from agentos.server.errors import InputError
from agentos.server.schemas import FactCorrection, FactRetraction, page_json, record_json
from agentos.server.scope import ScopeDep
from agentos.times import moment_or_ago, parse_date

router = APIRouter(prefix="/api/agents", tags=["facts"])

T = TypeVar("T")

AS_OF = Query(None, description="what was believed then (YYYY-MM-DD: the end of that day, or an ISO time, UTC)")
ALL = Query(False, alias="all", description="every version, with its status")
SINCE_WHEN = Query(None, description="a date, an ISO time, or a duration back from now (30m, 2h, 3d, 1w)")
SUBJECT = Query(None, description='only facts about this subject ("user", "agent", or a name)')


def _moment(value: str | None, field: str, *, ago: bool = False) -> datetime | None:
    try:
        return moment_or_ago(value, field) if ago else parse_date(value, field, end=True)
    except AgentOSError as exc:  # a ToolError from a date, an AgentOSError from a duration
        raise InputError(str(exc), field) from None


def _facts(agent: Agent, work: Callable[[FactTier], T]) -> T:
    """`work` on the agent's fact tier, a fact error told with the agent's name in its hint."""
    try:
        return work(agent.tier(FactTier))
    except FactError as exc:
        raise FactError(named(str(exc), agent.name)) from exc


@router.get("/{name}/facts", summary="Current facts, newest first (all: every version; as_of: those believed then)")
def facts(name: str, s: ScopeDep, as_of: str | None = AS_OF, include_ended: bool = ALL,
          subject: str | None = SUBJECT) -> dict[str, Any]:
    when = _moment(as_of, "as_of")
    with s.reading(name) as agent:
        def listing(tier: FactTier) -> dict[str, Any]:
            found = tier.listing(include_ended=include_ended, as_of=when, subject=subject)
            agent.note_read("facts", len(found))
            return {"facts": [record_json(f) for f in found], "in_use": tier.in_use}
        return _facts(agent, listing)


@router.get("/{name}/facts/search", summary="Facts ranked by keywords, meaning and how much they are used")
def search(name: str, s: ScopeDep, query: str = Query("", max_length=10_000), as_of: str | None = AS_OF,
           include_ended: bool = ALL, subject: str | None = SUBJECT, page: int = Query(0, ge=0),
           size: int = Query(10, ge=1, le=100)) -> dict[str, Any]:
    when = _moment(as_of, "as_of")
    with s.reading(name) as agent:
        found = _facts(agent, lambda tier: tier.search(query, as_of=when, include_ended=include_ended,
                                                       subject=subject, page=page, page_size=size, record=False))
        return page_json(found)


@router.get("/{name}/facts/changes", summary="The log of what consolidation and people did, oldest first")
def changes(name: str, s: ScopeDep, since: str | None = SINCE_WHEN) -> dict[str, Any]:
    when = _moment(since, "since", ago=True)
    with s.reading(name) as agent:
        found = _facts(agent, lambda tier: tier.changes(when))
        agent.note_read("fact changes", len(found))
        return {"changes": [record_json(c) for c in found]}


@router.post("/{name}/facts/{fact_id}/correct", summary="Replace a fact with corrected text (your decision; undoable)")
async def correct(name: str, fact_id: str, body: FactCorrection, s: ScopeDep) -> dict[str, Any]:
    def decide(agent: Agent) -> dict[str, Any]:
        def run(tier: FactTier) -> Any:
            require_facts(tier, name)
            return tier.correct(fact_id, body.text, reason=body.reason)
        return record_json(_facts(agent, run))
    return await s.writing(name, decide)


@router.post("/{name}/facts/{fact_id}/retract", summary="Say a fact does not hold (kept as history; undoable)")
async def retract(name: str, fact_id: str, body: FactRetraction, s: ScopeDep) -> dict[str, Any]:
    def decide(agent: Agent) -> dict[str, Any]:
        def run(tier: FactTier) -> Any:
            require_facts(tier, name)
            tier.require(fact_id)
            return tier.retract(fact_id, reason=body.reason)
        return record_json(_facts(agent, run))
    return await s.writing(name, decide)
