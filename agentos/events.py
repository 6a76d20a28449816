"""Typed events yielded by a turn: the one stream the CLI, TUI, tests and benchmarks consume."""

from __future__ import annotations

from typing import Any, Literal, Union

from pydantic import BaseModel

from agentos.messages import Message, Usage


class TextDelta(BaseModel):
    """A piece of the assistant's reply text as it streams."""

    type: Literal["text_delta"] = "text_delta"
    text: str


class ToolCallStarted(BaseModel):
    """The loop is about to run a tool the model asked for."""

    type: Literal["tool_call_started"] = "tool_call_started"
    call_id: str
    name: str
    arguments: str


class ToolCallFinished(BaseModel):
    """A tool ran; `result` is what the model will see, `is_error` whether it failed."""

    type: Literal["tool_call_finished"] = "tool_call_finished"
    call_id: str
    name: str
    result: str
    is_error: bool = False


class MemoryEdited(BaseModel):
    """A core memory block changed."""

    type: Literal["memory_edited"] = "memory_edited"
    label: str
    old_value: str
    new_value: str
    tool_call_id: str | None = None


class UsageReported(BaseModel):
    """Token usage of one model call."""

    type: Literal["usage"] = "usage"
    usage: Usage


class MessagesEvicted(BaseModel):
    """The pager moved old messages out of the context (they stay in recall)."""

    type: Literal["messages_evicted"] = "messages_evicted"
    count: int
    tokens_before: int
    tokens_after: int
    summarized: bool
    note: str = ""


class Notice(BaseModel):
    """Something the user should know that is not part of the reply (a retry, a warning)."""

    type: Literal["notice"] = "notice"
    text: str
    data: dict[str, Any] = {}


class SecretsRemoved(BaseModel):
    """The secret gate replaced secrets by placeholders before they were stored or sent to the model again: how many
    of each kind (`kinds`, e.g. {"OpenAI API key": 1}) and where they were ("your message", "core memory"...). What
    this turn streamed (its reply text) is not rewritten; the secrets themselves are never in the event."""

    type: Literal["secrets_removed"] = "secrets_removed"
    kinds: dict[str, int]
    where: list[str]


class Retrying(BaseModel):
    """A model call failed before any output and will be tried again after a wait; sent when the wait begins and
    as it counts down (`remaining` seconds left of `wait`), so the consumer can show it or cancel the turn."""

    type: Literal["retrying"] = "retrying"
    reason: str
    error: str
    attempt: int
    max_retries: int
    wait: float
    remaining: float


class ReplyIncomplete(BaseModel):
    """The model's answer did not end normally: cut at its output limit or by a full context window, refused, a
    stream that ended without saying why, or a connection lost mid-reply. Its text is kept, but it is not a complete reply."""

    type: Literal["reply_incomplete"] = "reply_incomplete"
    reason: Literal["max_tokens", "window_full", "refusal", "no_finish_reason", "other", "disconnected"]
    detail: str


class StepSaved(BaseModel):
    """A step is durable: its messages and the agent's state are committed at revision `rev`."""

    type: Literal["step_saved"] = "step_saved"
    rev: int
    message_ids: list[str]


class TurnFinished(BaseModel):
    """The turn ended with a reply that has no tool calls; `stop_reason` says how the model's last answer ended."""

    type: Literal["turn_finished"] = "turn_finished"
    reply: Message
    steps: int
    usage: Usage
    stop_reason: str = "end_turn"


class TurnFailed(BaseModel):
    """The turn stopped early; the agent is consistent and can take the next turn."""

    type: Literal["turn_failed"] = "turn_failed"
    error: str
    kind: str
    steps: int


class FactsChanged(BaseModel):
    """Background consolidation changed fact memory (yielded by `Agent.idle`, between turns): one line per
    change, e.g. "+ Ada likes green tea"."""

    type: Literal["facts_changed"] = "facts_changed"
    changes: list[str]
    count: int


class FactsNotice(BaseModel):
    """Background consolidation skipped a batch it could not read, or will try again later."""

    type: Literal["facts_notice"] = "facts_notice"
    text: str
    level: Literal["warning", "error"] = "warning"


Event = Union[
    TextDelta,
    ToolCallStarted,
    ToolCallFinished,
    MemoryEdited,
    UsageReported,
    MessagesEvicted,
    Notice,
    SecretsRemoved,
    Retrying,
    ReplyIncomplete,
    StepSaved,
    TurnFinished,
    TurnFailed,
    FactsChanged,
    FactsNotice,
]
