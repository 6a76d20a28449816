"""An agent's memory over HTTP: core blocks (list, get, set) and their edit log, the audit log, archival passages
(insert, list, search, delete) and recall search."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter, Query

from agentos.agent.agent import Agent
from agentos.errors import AgentOSError, ToolError
from agentos.memory.archival import ArchivalTier
from agentos.memory.recall import RecallTier
from agentos.memory.secret_gate import removed_between
from agentos.retrieval.recall_paths import MATCHING_PATHS
from agentos.server.errors import InputError, NotFoundError
from agentos.server.schemas import BlockSet, PassageIn, block_json, edit_json, page_json
from agentos.server.scope import ScopeDep
from agentos.times import date_range, moment_or_ago

router = APIRouter(prefix="/api/agents", tags=["memory"])

SINCE = Query(None, description="on or after this date (YYYY-MM-DD or ISO time, UTC)")
UNTIL = Query(None, description="on or before this date (YYYY-MM-DD or ISO time, UTC)")
PAGE = Query(0, ge=0, description="page number, from 0")
ROLES = Query(None, description="only these roles: user, assistant (repeatable)")
SIZE = Query(10, ge=1, le=100, description="results per page")


def dates(since: str | None, until: str | None) -> tuple[datetime | None, datetime | None]:
    """The date bounds of a search; a 422 naming the bound that is wrong."""
    try:
        return date_range(since, until, names=("since", "until"))
    except ToolError as exc:
        text = str(exc)
        field = min(("since", "until"), key=lambda f: text.find(f) if f in text else len(text))
        raise InputError(text, field) from None


def _tags(raw: str | None) -> list[str] | None:
    return [t.strip() for t in raw.split(",") if t.strip()] if raw else None


def _require_block(agent: Agent, label: str) -> None:
    labels = [block.label for block in agent.blocks]
    if label not in labels:
        raise NotFoundError(f'agent "{agent.name}" has no block "{label}": its blocks are {", ".join(labels)}.')


# -- core blocks ---------------------------------------------------------------------------------


@router.get("/{name}/blocks", summary="The core memory blocks, in display order")
def blocks(name: str, s: ScopeDep) -> dict[str, Any]:
    with s.reading(name) as agent:
        agent.note_read("core memory", len(agent.blocks))
        return {"blocks": [block_json(b) for b in agent.blocks]}


@router.get("/{name}/blocks/{label}", summary="One core memory block")
def block(name: str, label: str, s: ScopeDep) -> dict[str, Any]:
    with s.reading(name) as agent:
        _require_block(agent, label)
        agent.note_read("core memory", 1, target=label)
        return block_json(agent.block(label))


@router.put("/{name}/blocks/{label}", summary="Set a block's whole value (logged as your edit)")
async def set_block(name: str, label: str, body: BlockSet, s: ScopeDep) -> dict[str, Any]:
    def change(agent: Agent) -> dict[str, Any]:
        _require_block(agent, label)
        value = body.value.rstrip("\n")
        edit = agent.set_block(label, value)
        removed = removed_between(value, edit.new_value)  # named only when the secret gate removed some
        return {"block": block_json(agent.block(label)), "edit": edit_json(edit),
                **({"secrets_removed": removed} if removed else {})}
    return await s.writing(name, change)


@router.get("/{name}/memory-edits", summary="The block edit log, oldest first: when, who, old and new value")
def memory_edits(name: str, s: ScopeDep, label: str | None = Query(None, description="only this block's edits"),
                 last: int = Query(0, ge=0, description="only the last N edits (0: all)")) -> dict[str, Any]:
    with s.reading(name) as agent:
        edits = [e for e in agent.memory_edits() if label in (None, e.label)]
        if label is not None and not edits and label not in [b.label for b in agent.blocks]:
            _require_block(agent, label)
        agent.note_read("memory edits", len(edits[-last:] if last else edits), target=label or "")
    return {"edits": [edit_json(e) for e in (edits[-last:] if last else edits)]}


@router.get("/{name}/audit", summary="The audit log, oldest first: who read or changed the agent's memory, when, "
            "what part and how much (never what it says)")
def audit(name: str, s: ScopeDep, since: str | None = Query(None, description="a date, an ISO time, or a duration "
                                                                          "back from now (30m, 2h, 3d, 1w)"),
          limit: int = Query(0, ge=0, description="only the last N entries (0: all)")) -> dict[str, Any]:
    try:
        when = moment_or_ago(since, "since")
    except AgentOSError as exc:
        raise InputError(str(exc), "since") from None
    with s.reading(name) as agent:
        entries = agent.store.audit.entries(agent.id, since=when, limit=limit or None)
    return {"entries": [e.json() for e in entries]}


# -- archival ------------------------------------------------------------------------------------


@router.post("/{name}/archival", status_code=201, summary="Store text in archival memory (chunked; duplicates skipped)")
async def archival_insert(name: str, body: PassageIn, s: ScopeDep) -> dict[str, Any]:
    def insert(agent: Agent) -> dict[str, Any]:
        done = agent.tier(ArchivalTier).insert(body.text, tags=body.tags or None, source="api")
        return {"ids": done.ids, "duplicates": list(dict.fromkeys(done.duplicates)),
                **({"secrets_removed": done.secrets} if done.secrets else {})}
    return await s.writing(name, insert)


@router.get("/{name}/archival", summary="Archival passages, newest first, a page at a time")
def archival_list(name: str, s: ScopeDep, since: str | None = SINCE, until: str | None = UNTIL,
                  tags: str | None = Query(None, description="comma-separated tags (any of them)"), page: int = PAGE,
                  size: int = SIZE) -> dict[str, Any]:
    return archival_search(name, s, "", since, until, tags, page, size)


@router.get("/{name}/archival/search", summary="Archival passages ranked by keywords (and meaning)")
def archival_search(name: str, s: ScopeDep, query: str = Query(..., max_length=10_000), since: str | None = SINCE,
                    until: str | None = UNTIL, tags: str | None = Query(None, description="comma-separated tags"),
                    page: int = PAGE, size: int = SIZE) -> dict[str, Any]:
    start, end = dates(since, until)
    with s.reading(name) as agent:
        found = agent.tier(ArchivalTier).search(query, page=page, page_size=size, tags=_tags(tags), start=start,
                                                end=end)
        return page_json(found)


@router.delete("/{name}/archival/{passage_id}", summary="Delete one archival passage")
async def archival_delete(name: str, passage_id: str, s: ScopeDep) -> dict[str, Any]:
    def delete(agent: Agent) -> dict[str, Any]:
        archival = agent.tier(ArchivalTier)
        if not archival.delete(passage_id):
            raise NotFoundError(f"no archival passage {passage_id!r} in agent {name!r}.")
        return {"deleted": passage_id, "left": archival.count()}
    return await s.writing(name, delete)


# -- recall --------------------------------------------------------------------------------------


@router.get("/{name}/recall/search", summary="Search the past conversation (every message, in context or not)")
def recall_search(name: str, s: ScopeDep, query: str = Query("", max_length=10_000),
                  role: list[str] | None = ROLES,
                  since: str | None = SINCE, until: str | None = UNTIL, page: int = PAGE, size: int = SIZE) -> dict[str, Any]:
    start, end = dates(since, until)
    wrong = [r for r in role or [] if r not in ("user", "assistant")]
    if wrong:
        raise InputError(f"role {wrong[0]!r} is not one of user, assistant.", "role")
    with s.reading(name) as agent:
        found = agent.tier(RecallTier).search(query, page=page, page_size=size, start=start, end=end,
                                              roles=role or None, paths=MATCHING_PATHS)
        return page_json(found)
