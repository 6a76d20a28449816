"""The request bodies of the API (validated by FastAPI: a bad one is a 422 naming the field) and the JSON of what
it answers with."""

from __future__ import annotations

import dataclasses
from typing import Any

from pydantic import BaseModel, Field

from agentos.agent.agent import Agent
from agentos.agent.history import RestorePoint
from agentos.agent.state import AgentState
from agentos.blocks import Block, MemoryEdit
from agentos.retrieval.page import Page
from agentos.text import ValidText

MAX_TEXT = 1_000_000  # characters of one message, block value or passage


class BlockIn(BaseModel):
    """A core memory block for a new agent."""

    label: str
    value: ValidText = Field("", max_length=MAX_TEXT)
    description: ValidText = ""
    limit: int = Field(5000, gt=0)
    read_only: bool = False


class AgentIn(BaseModel):
    """A new agent: its name and, optionally, its model, persona and human blocks, more blocks and settings."""

    name: str
    model: str | None = None
    persona: ValidText | None = Field(None, max_length=MAX_TEXT)
    human: ValidText | None = Field(None, max_length=MAX_TEXT)
    blocks: list[BlockIn] = Field(default_factory=list)
    settings: dict[str, Any] = Field(default_factory=dict)


class AgentPatch(BaseModel):
    """Changes to an agent: settings (those named; the rest stay) and its model."""

    settings: dict[str, Any] = Field(default_factory=dict)
    model: str | None = None


class RenameIn(BaseModel):
    new_name: str


class ForkIn(BaseModel):
    new_name: str
    at: int | None = Field(None, ge=0, description="a restore point to copy the agent as it was at")


class RewindIn(BaseModel):
    to: int = Field(ge=0, description="the restore point to go back to (GET .../restore-points)")


class MessageIn(BaseModel):
    text: ValidText = Field(min_length=1, max_length=MAX_TEXT)


class CancelIn(BaseModel):
    turn_id: str | None = None  # None: the running turn and every waiting one


class BlockSet(BaseModel):
    value: ValidText = Field(max_length=MAX_TEXT)


class PassageIn(BaseModel):
    text: ValidText = Field(min_length=1, max_length=MAX_TEXT)
    tags: list[str] = Field(default_factory=list)


class FactCorrection(BaseModel):
    text: ValidText = Field(min_length=1, max_length=10_000)
    reason: str = ""


class FactRetraction(BaseModel):
    reason: str = ""


def agent_summary(state: AgentState) -> dict[str, Any]:
    """What a listing says of an agent."""
    return {"name": state.name, "id": state.id, "model": state.model, "messages": state.recall_count,
            "created_at": state.created_at, "last_active_at": state.last_active_at}


def agent_detail(agent: Agent) -> dict[str, Any]:
    """Everything about an agent but its messages: blocks, settings, counts."""
    state = agent.state.snapshot()
    return {**agent_summary(state), "rev": state.rev, "in_context": len(state.in_context_ids),
            "summary": state.summary, "blocks": [block_json(b) for b in agent.blocks],
            "settings": state.settings.model_dump(mode="json"), "last_memory_edit_at": state.last_memory_edit_at}


def block_json(block: Block) -> dict[str, Any]:
    return {**block.model_dump(mode="json"), "chars": len(block.value)}


def edit_json(edit: MemoryEdit) -> dict[str, Any]:
    return edit.model_dump(mode="json")


def point_json(point: RestorePoint) -> dict[str, Any]:
    return dataclasses.asdict(point)


def page_json(page: Page[Any]) -> dict[str, Any]:
    """A page of hits (messages, passages, facts) with its totals and paging."""
    hits = [dataclasses.asdict(hit) if dataclasses.is_dataclass(hit) and not isinstance(hit, type) else hit
            for hit in page.hits]
    return {"hits": hits, "total": page.total, "page": page.page, "page_size": page.page_size, "pages": page.pages,
            "next_page": page.next_page, "capped": page.capped, "note": page.note, "query": page.query}


def record_json(record: Any) -> dict[str, Any]:
    """A fact or a fact change (dataclasses) as JSON-ready fields."""
    return dataclasses.asdict(record)
