"""The persistent state of an agent: everything needed to resume it exactly where it was."""

from __future__ import annotations

import re
from datetime import datetime

from pydantic import BaseModel, Field

from agentos.errors import InvalidNameError
from agentos.memory.blocks import Block
from agentos.messages import new_id, utc_now

STATE_VERSION = 1
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def validate_name(name: str) -> str:
    """Agent names: 1-64 characters, letters, digits, '.', '_' or '-', starting with a letter or digit."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise InvalidNameError(
            f"invalid agent name {name!r}: use 1-64 letters, digits, '.', '_' or '-', "
            f"starting with a letter or digit."
        )
    return name


class AgentSettings(BaseModel):
    """Per-agent settings a user may change."""

    max_steps: int = 20
    tool_output_limit: int = 4000
    prompt_dir: str | None = None
    context_window: int | None = None
    embedder: str = "none"  # recall/archival vectors: none, hash:384, openai/MODEL, ollama/MODEL, st/MODEL


class AgentState(BaseModel):
    """What is saved after every step. Message bodies live in the messages table; this holds ids."""

    version: int = STATE_VERSION
    id: str = Field(default_factory=lambda: new_id("agent"))
    name: str
    model: str
    blocks: list[Block]
    settings: AgentSettings = Field(default_factory=AgentSettings)
    in_context_ids: list[str] = Field(default_factory=list)
    summary: str = ""
    message_count: int = 0
    archival_count: int = 0
    rev: int = 0
    created_at: datetime = Field(default_factory=utc_now)
    last_active_at: datetime = Field(default_factory=utc_now)
    last_memory_edit_at: datetime | None = None
    tool_names: list[str] = Field(default_factory=list)
