"""Forgetting over HTTP: the same request as `agentos forget`, carried out (or, with `dry_run`, only planned) on the
agent behind the turns and changes accepted before it, and on the copies its rewinds kept."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from agentos.agent.agent import Agent
from agentos.agent.forgetting import NOT_FORGOTTEN
from agentos.commands.forgetting import ForgetReport, build_request, forget_everywhere, plan_everywhere
from agentos.server.scope import ScopeDep
from agentos.text import ValidText

router = APIRouter(prefix="/api/agents", tags=["memory"])


class ForgetIn(BaseModel):
    """One of: `text` (or `regex`), `fact_id`, `before` or `between` (dates), `all`; `dry_run` only plans."""

    text: ValidText | None = Field(None, max_length=10_000)
    regex: str | None = Field(None, max_length=500)
    fact_id: str | None = Field(None, max_length=200)
    before: str | None = Field(None, max_length=40)
    between: tuple[str, str] | None = None
    all: bool = False
    dry_run: bool = False


def _report_json(report: ForgetReport) -> dict[str, Any]:
    return {"name": report.name, "counts": report.counts, "previews": report.previews, "error": report.error}


@router.post("/{name}/forget", summary="Forget text, a pattern, a fact, a period or everything, in every tier")
async def forget(name: str, body: ForgetIn, s: ScopeDep) -> dict[str, Any]:
    request = build_request(text=body.text, regex=body.regex, fact_id=body.fact_id, before=body.before,
                            between=body.between, everything=body.all)

    def work(agent: Agent) -> list[ForgetReport]:
        return plan_everywhere(agent, request) if body.dry_run else forget_everywhere(agent, request)

    reports = await s.writing(name, work)
    return {"request": request.describe(), "dry_run": body.dry_run, "agents": [_report_json(r) for r in reports],
            "not_forgotten": list(NOT_FORGOTTEN)}
