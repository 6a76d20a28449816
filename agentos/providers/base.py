"""The provider interface: one streaming call from a canonical request to provider events."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol, Union

from agentos.errors import RealProviderBlockedError
from agentos.messages import Message, ToolCall, Usage


@dataclass
class ModelRequest:
    """Everything one model call needs, independent of any API.

    The system prompt comes in two parts: `system_static` is byte-stable across turns (so
    providers can cache it) and `system_dynamic` holds memory blocks and metadata.
    """

    system_static: str
    system_dynamic: str
    messages: list[Message]
    tools: list[Any] = field(default_factory=list)  # agentos.tools.Tool
    max_output_tokens: int | None = None

    @property
    def system(self) -> str:
        return f"{self.system_static}\n\n{self.system_dynamic}" if self.system_dynamic else self.system_static


@dataclass
class StreamText:
    """A piece of reply text."""

    text: str


@dataclass
class StreamToolCall:
    """A complete tool call, assembled by the provider from whatever fragments its API sends."""

    call: ToolCall


@dataclass
class StreamUsage:
    """Token usage of the call."""

    usage: Usage


@dataclass
class StreamDone:
    """The stream ended; `stop_reason` is normalised to end_turn, tool_use, max_tokens, window_full (cut because
    the prompt and the reply filled the context window, before the output cap), refusal, other, or
    no_finish_reason (the stream ended without saying why: it may have been cut)."""

    stop_reason: str = "end_turn"


@dataclass
class StreamRetrying:
    """The call failed before any output and will be tried again: said before the back-off and after each tick of it.

    `kind` is the error's class name, `attempt` the retry about to be made (1-based, up to `max_retries`), `wait`
    the whole back-off in seconds and `remaining` what is left of it.
    """

    error: str
    kind: str
    attempt: int
    max_retries: int
    wait: float
    remaining: float


ProviderEvent = Union[StreamText, StreamToolCall, StreamUsage, StreamDone, StreamRetrying]


class Provider(Protocol):
    """A model behind an API. `stream` is the one code path; `complete` drains it."""

    name: str
    model: str
    context_window: int

    def stream(self, request: ModelRequest) -> Iterator[ProviderEvent]: ...


@dataclass
class ModelResponse:
    """A drained stream: the text, tool calls, usage and stop reason of one call."""

    text: str
    tool_calls: list[ToolCall]
    usage: Usage
    stop_reason: str


def complete(provider: Provider, request: ModelRequest) -> ModelResponse:
    """Make one call and collect the whole response."""
    text: list[str] = []
    calls: list[ToolCall] = []
    usage = Usage()
    stop = "no_finish_reason"
    for event in provider.stream(request):
        if isinstance(event, StreamText):
            text.append(event.text)
        elif isinstance(event, StreamToolCall):
            calls.append(event.call)
        elif isinstance(event, StreamUsage):
            usage = usage + event.usage
        elif isinstance(event, StreamDone):
            stop = event.stop_reason
    return ModelResponse("".join(text), calls, usage, stop)


GUARD_VARIABLE = "AGENTOS_BLOCK_REAL_PROVIDERS"


def ensure_real_provider_allowed(name: str) -> None:
    """Raise inside the test suite unless the test opted in to real providers."""
    if os.environ.get(GUARD_VARIABLE) == "1":
        raise RealProviderBlockedError(
            f"the {name} provider was used inside the test suite; use the scripted provider, "
            f"or opt in with the `allow_real_providers` fixture"
        )
