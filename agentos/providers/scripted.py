"""The scripted provider: a model that answers from a list of steps or a function, for tests and demos."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Union

from agentos.errors import ScriptExhaustedError
from agentos.messages import ToolCall, Usage, new_id
from agentos.providers.base import ModelRequest, ProviderEvent, StreamDone, StreamText, StreamToolCall, StreamUsage

CHARS_PER_TOKEN = 4


@dataclass
class Step:
    """One scripted model response: optional text and any number of tool calls.

    Tool calls are given as `(name, arguments)` pairs, where arguments is a dict or the raw
    JSON text (so tests can send malformed JSON), or as `ToolCall` objects.
    """

    text: str = ""
    tool_calls: list[Any] = field(default_factory=list)
    usage: Usage | None = None
    stop_reason: str | None = None  # how the answer ends (default: tool_use or end_turn); e.g. "max_tokens"

    def calls(self) -> list[ToolCall]:
        out = []
        for item in self.tool_calls:
            if isinstance(item, ToolCall):
                out.append(item)
                continue
            name, arguments = item
            raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
            out.append(ToolCall(id=new_id("call"), name=name, arguments=raw))
        return out


ScriptItem = Union[Step, str, BaseException]
ScriptFunction = Callable[[ModelRequest], ScriptItem]


def estimate_tokens(request: ModelRequest) -> int:
    """A rough prompt size (characters / 4), so scripted runs report plausible usage."""
    chars = len(request.system) + sum(len(m.content) + sum(len(c.arguments) for c in m.tool_calls) for m in request.messages)
    chars += sum(len(json.dumps(t.parameters)) + len(t.description) for t in request.tools)
    return chars // CHARS_PER_TOKEN + 1


class ScriptedProvider:
    """A provider driven by a script: a list of steps, or a function of the request.

    Every request is recorded in `requests`. A string step is plain text; an exception step
    is raised, to rehearse provider failures. Running out of steps is a clear error.
    """

    name = "scripted"

    def __init__(
        self,
        steps: Iterable[ScriptItem] | ScriptFunction | None = None,
        *,
        model: str = "script",
        context_window: int = 128_000,
        chunk_size: int = 16,
    ) -> None:
        self.model = model
        self.context_window = context_window
        self.chunk_size = chunk_size
        self.requests: list[ModelRequest] = []
        self._function: ScriptFunction | None = steps if callable(steps) else None
        self._steps: list[ScriptItem] = [] if callable(steps) or steps is None else list(steps)
        self._position = 0

    @property
    def remaining(self) -> int:
        """Steps not yet used (0 for a function-driven script)."""
        return len(self._steps) - self._position

    def add(self, *steps: ScriptItem) -> None:
        """Append steps to the script."""
        self._steps.extend(steps)

    def _next(self, request: ModelRequest) -> ScriptItem:
        if self._function is not None:
            return self._function(request)
        if self._position >= len(self._steps):
            raise ScriptExhaustedError(
                f"the scripted provider ran out of steps: it was called {len(self.requests)} times "
                f"but its script has {len(self._steps)} steps"
            )
        item = self._steps[self._position]
        self._position += 1
        return item

    def stream(self, request: ModelRequest) -> Iterator[ProviderEvent]:
        self.requests.append(request)
        item = self._next(request)
        if isinstance(item, BaseException):
            raise item
        step = Step(text=item) if isinstance(item, str) else item
        for start in range(0, len(step.text), self.chunk_size):
            yield StreamText(step.text[start : start + self.chunk_size])
        calls = step.calls()
        for call in calls:
            yield StreamToolCall(call)
        usage = step.usage or Usage(
            input_tokens=estimate_tokens(request),
            output_tokens=(len(step.text) + sum(len(c.arguments) for c in calls)) // CHARS_PER_TOKEN + 1,
        )
        yield StreamUsage(usage)
        yield StreamDone(step.stop_reason or ("tool_use" if calls else "end_turn"))
