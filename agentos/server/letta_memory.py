"""Letta's core memory and archival memory routes: `core-memory/blocks` (list, retrieve by label, update the value)
and `archival-memory` (insert, list, search, delete), over the native memory routes and the archival tier.

A passage inserted through Letta's API is chunked as agentos chunks archival text, and a chunk already stored is
not stored twice: the passage that holds it is given back instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field

from agentos.agent.agent import Agent
from agentos.blocks import Block
from agentos.errors import ToolError
from agentos.memory.archival import MAX_INSERT_CHARS, ArchivalTier, chunk_text
from agentos.messages import utc_now
from agentos.retrieval.page import Hit
from agentos.server import routes_memory
from agentos.server.letta_common import LettaRoute, NotSupportedError, agent_row
from agentos.server.letta_shapes import agentos_ids, letta_block, letta_passage, search_result
from agentos.server.schemas import MAX_TEXT, BlockSet
from agentos.server.scope import Scope, ScopeDep
from agentos.storage.agent_rows import AgentRow
from agentos.text import ValidText

router = APIRouter(prefix="/v1/agents", tags=["letta"], route_class=LettaRoute)

WINDOW = 500  # passages listed at a time while walking to a cursor
BLOCKS = Query(100, ge=1)
PASSAGES = Query(100, ge=1, le=1000)
TEXT = Query(None, max_length=10_000)
QUERY = Query(..., max_length=10_000)
TAGS = Query(None, description="only passages with these tags (any of them, or all with tag_match_mode=all)")
TOP_K = Query(None, ge=1, description="how many results (default 10, at most 100)")


class LettaBlockUpdate(BaseModel):
    """Letta's BlockUpdate: only `value` can change here; another field may be given only with the value it has."""

    model_config = ConfigDict(extra="allow")
    value: ValidText | None = Field(None, max_length=MAX_TEXT)
    label: str | None = None
    limit: int | None = None
    description: str | None = None
    read_only: bool | None = None


class LettaPassageIn(BaseModel):
    text: ValidText = Field(min_length=1, max_length=MAX_TEXT)
    tags: list[str] | None = None
    created_at: datetime | None = None


def _as_block(native: dict[str, Any]) -> Block:
    """A block from the native routes' JSON of it."""
    return Block(**{key: value for key, value in native.items() if key in Block.model_fields})


def _block(s: Scope, agent_id: str, label: str) -> tuple[AgentRow, Block]:
    """The agent and its block `label` (404 for either missing), through the native route."""
    row = agent_row(s, agent_id)
    return row, _as_block(routes_memory.block(row.name, label, s))


# -- core memory ---------------------------------------------------------------------------------


@router.get("/{agent_id}/core-memory/blocks", summary="The core memory blocks, in display order "
            "(Letta: client.agents.blocks.list)")
def list_blocks(agent_id: str, s: ScopeDep, after: str | None = None, before: str | None = None,
                limit: int = BLOCKS) -> list[dict[str, Any]]:
    row = agent_row(s, agent_id)
    found = [letta_block(row.agent_id, _as_block(b)) for b in routes_memory.blocks(row.name, s)["blocks"]]
    ids = [b["id"] for b in found]
    start = ids.index(after) + 1 if after in ids else 0 if after is None else len(ids)
    end = ids.index(before) if before in ids else len(ids)
    return found[start:end][:limit]


@router.get("/{agent_id}/core-memory/blocks/{block_label}", summary="One block, by label "
            "(Letta: client.agents.blocks.retrieve)")
def retrieve_block(agent_id: str, block_label: str, s: ScopeDep) -> dict[str, Any]:
    row, block = _block(s, agent_id, block_label)
    return letta_block(row.agent_id, block)


@router.patch("/{agent_id}/core-memory/blocks/{block_label}", summary="Set a block's value, logged as your edit "
              "(Letta: client.agents.blocks.update)")
async def update_block(agent_id: str, block_label: str, body: LettaBlockUpdate, s: ScopeDep) -> dict[str, Any]:
    row, current = await s.thread(_block, s, agent_id, block_label)
    given = body.model_dump(exclude_unset=True, exclude={"value"})
    changed = [key for key, value in given.items()
               if key in Block.model_fields and value is not None and value != getattr(current, key)]
    changed += [key for key, value in (body.model_extra or {}).items() if value]
    if changed:
        raise NotSupportedError(f"blocks.update of {', '.join(changed)}", "agentos changes a block's value only")
    if body.value is None:
        return letta_block(row.agent_id, current)
    done = await routes_memory.set_block(row.name, block_label, BlockSet(value=body.value), s)
    return letta_block(row.agent_id, _as_block(done["block"]))


# -- archival memory -----------------------------------------------------------------------------


@router.post("/{agent_id}/archival-memory", summary="Store text in archival memory (Letta: client.agents.passages"
             ".create)")
async def create_passage(agent_id: str, body: LettaPassageIn, s: ScopeDep) -> list[dict[str, Any]]:
    if not body.text.strip():
        raise ToolError("text is empty; give the text to remember.")
    if len(body.text) > MAX_INSERT_CHARS:
        raise ToolError(f"text is {len(body.text):,} characters; insert at most {MAX_INSERT_CHARS:,} at a time.")
    at = body.created_at or utc_now()
    row = await s.thread(agent_row, s, agent_id)

    def insert(agent: Agent) -> list[Hit]:
        archival, hits = agent.tier(ArchivalTier), []
        for chunk in chunk_text(body.text):  # one at a time: each chunk's passage id, new or already stored
            done = archival.insert_many([chunk], tags=body.tags, source="api", created_at=at)
            hits.append(Hit(id=(done.ids or done.duplicates)[0], text=chunk, created_at=at, tags=body.tags or []))
        return hits

    return [letta_passage(hit, row.agent_id) for hit in await s.writing(row.name, insert)]


def _listing(archival: ArchivalTier, oldest_first: bool) -> Iterator[Hit]:
    """Every passage, newest first or oldest first, read a window at a time."""
    first = archival.search("", page=0, page_size=WINDOW)
    pages = range(first.pages) if not oldest_first else range(first.pages - 1, -1, -1)
    for page in pages:
        hits = first.hits if page == 0 else archival.search("", page=page, page_size=WINDOW).hits
        yield from (reversed(hits) if oldest_first else hits)


@router.get("/{agent_id}/archival-memory", summary="Archival passages, oldest first by default, or those matching "
            "`search` (Letta: client.agents.passages.list)")
def list_passages(agent_id: str, s: ScopeDep, after: str | None = None, before: str | None = None,
                  limit: int = PASSAGES, search: str | None = TEXT,
                  ascending: bool = True) -> list[dict[str, Any]]:
    row = agent_row(s, agent_id)
    with s.reading(row.name) as agent:
        archival = agent.tier(ArchivalTier)
        if search:
            return [letta_passage(h, row.agent_id) for h in archival.search(search, page_size=min(limit, 100)).hits]
        after_ids, before_ids = set(agentos_ids(after)) if after else set(), set(agentos_ids(before)) if before else set()
        page: list[Hit] = []
        started = after is None
        for hit in _listing(archival, oldest_first=ascending):
            if hit.id in before_ids:
                break
            if started:
                page.append(hit)
                if len(page) >= limit and before is None:
                    break
            started = started or hit.id in after_ids
        return [letta_passage(h, row.agent_id) for h in page[-limit:]]


@router.get("/{agent_id}/archival-memory/search", summary="Archival passages ranked by keywords and meaning "
            "(Letta: client.agents.passages.search)")
def search_passages(agent_id: str, s: ScopeDep, query: str = QUERY,
                    tags: list[str] | None = TAGS, tag_match_mode: Literal["any", "all"] = "any",
                    top_k: int | None = TOP_K, start_datetime: str | None = None,
                    end_datetime: str | None = None) -> dict[str, Any]:
    start, end = routes_memory.dates(start_datetime, end_datetime)
    row = agent_row(s, agent_id)
    with s.reading(row.name) as agent:
        found = agent.tier(ArchivalTier).search(query, page_size=min(top_k or 10, 100), tags=tags, start=start,
                                                end=end)
    hits = [h for h in found.hits if tag_match_mode == "any" or set(tags or []) <= set(h.tags)]
    return {"count": len(hits), "results": [search_result(h) for h in hits]}


@router.delete("/{agent_id}/archival-memory/{memory_id}", summary="Delete one archival passage "
               "(Letta: client.agents.passages.delete)")
async def delete_passage(agent_id: str, memory_id: str, s: ScopeDep) -> dict[str, Any]:
    row = await s.thread(agent_row, s, agent_id)
    await routes_memory.archival_delete(row.name, agentos_ids(memory_id)[0], s)
    return {"message": f"Memory id={memory_id} successfully deleted"}
