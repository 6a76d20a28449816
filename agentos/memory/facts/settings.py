"""The fact tier's settings: when consolidation runs, with which model, and how strict it is."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class FactSettings(BaseModel):
    """Background consolidation of the conversation into facts (see memory.facts); off until turned on."""

    # off; "turn": after every turn; "batch": once `batch_turns` user turns are waiting; "idle": once the agent has
    # been idle `idle_seconds` (and when it is next opened, for what a closed session left waiting)
    mode: Literal["off", "turn", "batch", "idle"] = "off"
    batch_turns: int = Field(5, ge=1)
    idle_seconds: float = Field(30.0, gt=0)
    model: str | None = None  # a cheaper model spec for extraction and decisions; default: the agent's own
    min_confidence: float = Field(0.5, ge=0, le=1)  # candidates below this are not stored
    similar: int = Field(5, ge=1, le=20)  # current facts each candidate is compared with
    max_repairs: int = Field(2, ge=0, le=5)  # a response that fails validation is sent back this often, then skipped
    batch_messages: int = Field(16, ge=1, le=200)  # messages per extraction call
    prompt_tokens: int = Field(0, ge=0)  # the most relevant facts about the user in the prompt, in this budget (0: off)
