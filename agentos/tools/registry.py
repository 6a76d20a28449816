"""Runs tool calls: validates arguments and turns every failure into a short message for the model."""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from agentos.errors import ToolArgumentsError, ToolError
from agentos.messages import ToolCall
from agentos.text import MAX_DEPTH, valid_values
from agentos.tools.context import ToolContext
from agentos.tools.decorator import Tool

# What chat templates call a tool's result (Qwen's `<tool_response>`): a "call" of one of these is the model writing a
# result itself; it is answered with an error telling it to reply, so the user never sees it.
RESULT_NAMES = frozenset({"tool_response", "tool_result", "function_response", "function_result"})

DEFAULT_OUTPUT_LIMIT = 4000
ERROR_LIMIT = 1000


@dataclass
class ToolOutcome:
    """The text the model will see for one call, and whether the call failed."""

    text: str
    is_error: bool = False


def cap_text(text: str, limit: int) -> str:
    """Cut `text` to `limit` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[output truncated: showed {limit:,} of {len(text):,} characters]"


class ToolRegistry:
    """The tools an agent may call, by name."""

    def __init__(self, tools: Iterable[Tool] = (), output_limit: int = DEFAULT_OUTPUT_LIMIT) -> None:
        self.tools: dict[str, Tool] = {}
        self.output_limit = output_limit
        for t in tools:
            self.add(t)

    def add(self, t: Tool) -> None:
        if not isinstance(t, Tool):
            raise TypeError(f"{t!r} is not a tool; decorate it with @tool")
        self.tools[t.name] = t

    def __contains__(self, name: str) -> bool:
        return name in self.tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self.tools.values())

    def __len__(self) -> int:
        return len(self.tools)

    def example(self, name: str, **values: str) -> str:
        """A call of tool `name` as JSON, its required arguments filled with `values` or "..."."""
        params = self.tools[name].parameters
        required = params.get("required", list(params.get("properties", {})))
        return json.dumps({"name": name, "arguments": {k: values.get(k, "...") for k in required}})

    def unknown_tool(self, name: str, context: ToolContext | None = None) -> str:
        """The error for a call of a tool that does not exist: the tools that do, and an example call; a memory
        block's label named as if it were a tool gets the calls that edit that block."""
        available = ", ".join(sorted(self.tools)) or "none"
        if name in RESULT_NAMES:
            return (f'"{name}" is not a tool: results come from the tools themselves, so do not write one. Now '
                    f"reply to the user in plain words (the tools you can call: {available}).")
        try:
            is_block = context is not None and bool(context.memory.block(name))
        except ToolError:
            is_block = False
        if is_block:
            edits = [self.example(t, label=name) for t in ("core_memory_append", "core_memory_replace") if t in self.tools]
            how = " To change it, call: " + " or ".join(edits) + "." if edits else ""
            return f'"{name}" is a memory block, not a tool.{how} Tools you can call: {available}.'
        close = difflib.get_close_matches(name, list(self.tools), n=1, cutoff=0.5)
        suggestion = close[0] if close else next(iter(sorted(self.tools)), None)
        hint = f' Did you mean "{close[0]}"?' if close else ""
        example = f" Call a tool by its name with its arguments, for example: {self.example(suggestion)}." if \
            suggestion else ""
        return f'unknown tool "{name}".{hint} Tools you can call: {available}.{example}'

    def openai_schemas(self) -> list[dict[str, Any]]:
        return [t.openai_schema() for t in self.tools.values()]

    def anthropic_schemas(self) -> list[dict[str, Any]]:
        return [t.anthropic_schema() for t in self.tools.values()]

    def execute(self, call: ToolCall, context: ToolContext) -> ToolOutcome:
        """Run one call. Never raises for anything the model did wrong."""
        t = self.tools.get(call.name)
        if t is None:
            return self._error(self.unknown_tool(call.name, context))
        raw = call.arguments.strip() or "{}"
        try:
            args = valid_values(json.loads(raw))
        except json.JSONDecodeError as exc:
            return self._error(
                f"the arguments for {call.name} are not valid JSON ({exc.msg} at position {exc.pos}). "
                f"Send one JSON object."
            )
        except (RecursionError, ValueError):
            return self._error(
                f"the arguments for {call.name} are nested too deeply (more than {MAX_DEPTH} levels). "
                f"Send a flat JSON object."
            )
        if not isinstance(args, dict):
            return self._error(
                f"the arguments for {call.name} must be a JSON object, not {type(args).__name__}."
            )
        try:
            result = t.invoke(args, context)
        except ToolArgumentsError as exc:
            return self._error(f"invalid arguments for {call.name}: {exc}.")
        except ToolError as exc:
            return self._error(str(exc))
        except Exception as exc:  # noqa: BLE001 - a tool bug must not crash the turn
            return self._error(f"{call.name} failed: {type(exc).__name__}: {exc}")
        return ToolOutcome(cap_text(_to_text(result), self.output_limit))

    @staticmethod
    def _error(message: str) -> ToolOutcome:
        return ToolOutcome(cap_text(f"Error: {message}", ERROR_LIMIT), is_error=True)


def _to_text(result: Any) -> str:
    if result is None:
        return "OK"
    if isinstance(result, str):
        return result
    try:
        return json.dumps(result, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        return str(result)
