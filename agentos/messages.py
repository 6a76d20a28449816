"""Provider-neutral conversation messages: what the agent stores and what providers translate."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, Field

from agentos.text import ValidText

Role = Literal["system", "user", "assistant", "tool"]


def new_id(prefix: str = "msg") -> str:
    """A short unique id with a readable prefix."""
    return f"{prefix}-{uuid.uuid4().hex[:20]}"


def utc_now() -> datetime:
    """The current time, timezone-aware in UTC."""
    return datetime.now(UTC)


class ToolCall(BaseModel):
    """A request by the model to run one tool; `arguments` is the raw JSON text the model sent."""

    id: ValidText
    name: ValidText
    arguments: ValidText = "{}"


class Message(BaseModel):
    """One message of a conversation.

    An assistant message may carry text and tool calls; a tool message carries the result of
    exactly one call (`tool_call_id`) and says whether it failed (`is_error`).
    """

    id: str = Field(default_factory=new_id)
    role: Role
    content: ValidText = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: ValidText | None = None
    name: ValidText | None = None
    is_error: bool = False
    created_at: datetime = Field(default_factory=utc_now)

    @classmethod
    def user(cls, text: str) -> Message:
        return cls(role="user", content=text)

    @classmethod
    def system(cls, text: str) -> Message:
        return cls(role="system", content=text)

    @classmethod
    def assistant(cls, text: str = "", tool_calls: list[ToolCall] | None = None) -> Message:
        return cls(role="assistant", content=text, tool_calls=tool_calls or [])

    @classmethod
    def tool_result(cls, call: ToolCall, text: str, *, is_error: bool = False) -> Message:
        return cls(role="tool", content=text, tool_call_id=call.id, name=call.name, is_error=is_error)


class Usage(BaseModel):
    """Token usage of one model call as the provider reported it."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
        )
