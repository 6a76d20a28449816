"""Chat Completions replies read into provider events: a stream of chunks, or one whole completion (a server that
answered without streaming), with tool-call fragments joined and the stop reason normalised."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from agentos.errors import IncompleteStreamError
from agentos.messages import ToolCall, Usage, new_id
from agentos.providers import openai_sdk
from agentos.providers.base import ProviderEvent, StreamDone, StreamText, StreamToolCall, StreamUsage

_STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "content_filter": "refusal",
                 "tool_calls": "tool_use", "function_call": "tool_use"}
@dataclass
class _Slot:
    id: str = ""
    name: str = ""
    arguments: str = ""


class ToolCallAssembler:
    """Joins streamed tool-call fragments into whole calls, tolerating servers that omit `index` or reuse it."""

    def __init__(self) -> None:
        self.slots: dict[int, _Slot] = {}
        self._alias: dict[int, int] = {}  # wire index -> slot, when a server reuses an index for a new call

    def add(self, fragment: Any) -> None:
        slot = self.slots.setdefault(self._slot_key(fragment), _Slot())
        if fragment.id:
            slot.id = fragment.id
        function = fragment.function
        if function is not None:
            if function.name and function.name != slot.name:
                slot.name = function.name if not slot.name else slot.name + function.name
            if function.arguments:
                slot.arguments += function.arguments

    def _slot_key(self, fragment: Any) -> int:
        if fragment.id:
            known = next((key for key, s in self.slots.items() if s.id == fragment.id), None)
            if known is not None:
                return known
        following = max(self.slots) + 1 if self.slots else 0
        if fragment.index is None:  # no index: a new id starts a call, anything else continues the last
            return following if fragment.id or not self.slots else following - 1
        key = self._alias.get(fragment.index, fragment.index)
        if fragment.id and key in self.slots and self.slots[key].id:
            key = self._alias[fragment.index] = following
        return key

    def calls(self) -> list[ToolCall]:
        return [
            ToolCall(id=s.id or new_id("call"), name=s.name, arguments=s.arguments or "{}")
            for _, s in sorted(self.slots.items())
        ]


def openai_usage(usage: Any) -> Usage:
    """Usage of a chunk's `usage` object; `input_tokens` is the whole prompt, cached part included."""
    details = getattr(usage, "prompt_tokens_details", None)
    return Usage(
        input_tokens=getattr(usage, "prompt_tokens", 0) or 0,
        output_tokens=getattr(usage, "completion_tokens", 0) or 0,
        cache_read_tokens=getattr(details, "cached_tokens", 0) or 0,
        cache_write_tokens=getattr(details, "cache_write_tokens", 0) or 0,
    )


def whole_completion_events(body: dict[str, Any], max_tokens: int | None = None) -> Iterator[ProviderEvent]:
    """Provider events from a whole `chat.completion` (a server that answered without streaming), read leniently:
    local servers leave out fields or use their own finish reasons. `max_tokens` is the request's output cap."""
    choices = body.get("choices") or []
    choice: dict[str, Any] = choices[0] if choices and isinstance(choices[0], dict) else {}
    message: dict[str, Any] = choice["message"] if isinstance(choice.get("message"), dict) else {}
    calls = []
    for raw in message.get("tool_calls") or []:
        function = raw.get("function") if isinstance(raw, dict) else None
        if isinstance(function, dict) and function.get("name"):
            arguments = function.get("arguments")
            calls.append(ToolCall(id=str(raw.get("id") or new_id("call")), name=str(function["name"]),
                                  arguments=arguments if isinstance(arguments, str) else json.dumps(arguments or {})))
    if isinstance(message.get("content"), str) and message["content"]:
        yield StreamText(message["content"])
    for call in calls:
        yield StreamToolCall(call)
    usage = body.get("usage")
    written: int | None = None
    if isinstance(usage, dict):
        details = usage.get("prompt_tokens_details") or {}
        written = int(usage.get("completion_tokens") or 0)
        yield StreamUsage(Usage(input_tokens=int(usage.get("prompt_tokens") or 0), output_tokens=written,
                                cache_read_tokens=int(details.get("cached_tokens") or 0)))
    finish = choice.get("finish_reason")
    reason = normalise_stop(str(finish) if finish else "stop", has_calls=bool(calls))
    yield StreamDone(window_filled(reason, max_tokens, written))


def unstreamed_events(response: Any, max_tokens: int | None = None) -> Iterator[ProviderEvent]:
    """Provider events from the HTTP response to a request that was not streamed; one without a completion in it
    (an error page behind a 200) is no reply."""
    body = response.json()
    if not isinstance(body, dict) or not isinstance(body.get("choices"), list) or not body["choices"]:
        raise IncompleteStreamError(partial=False)
    yield from whole_completion_events(body, max_tokens)


def stream_events(chunks: Iterable[Any], max_tokens: int | None = None) -> Iterator[ProviderEvent]:
    """Provider events from a stream of ChatCompletionChunk objects (or from one whole completion, when the server
    answered with JSON instead of a stream); `max_tokens` is the request's output cap."""
    body = openai_sdk.whole_reply(chunks)
    if isinstance(body, dict) and body.get("choices") is not None:
        yield from whole_completion_events(body, max_tokens)
        return
    calls = ToolCallAssembler()
    finish: str | None = None
    usage: Any = None
    refused = False
    produced = False
    pieces = 0  # chunks that carried output: each carries at least one token
    for chunk in chunks:
        if getattr(chunk, "usage", None) is not None:
            usage = chunk.usage
        for choice in chunk.choices or []:
            delta = choice.delta
            if delta is not None:
                carried = bool(delta.content or delta.tool_calls or getattr(delta, "refusal", None))
                produced, pieces = produced or carried, pieces + carried
                if delta.content:
                    yield StreamText(delta.content)
                if getattr(delta, "refusal", None):
                    refused = True
                    yield StreamText(delta.refusal)
                for fragment in delta.tool_calls or []:
                    calls.add(fragment)
            if choice.finish_reason:
                finish = choice.finish_reason
    if finish is None and not openai_sdk.end_marker_seen(chunks):
        raise IncompleteStreamError(partial=produced)  # neither a finish reason nor the end marker: cut
    assembled = calls.calls()
    for call in assembled:
        yield StreamToolCall(call)
    written = pieces
    if usage is not None:
        reported = openai_usage(usage)
        written = reported.output_tokens or pieces
        yield StreamUsage(reported)
    yield StreamDone(window_filled(normalise_stop(finish, has_calls=bool(assembled), refused=refused), max_tokens,
                                   written))


def normalise_stop(finish: str | None, *, has_calls: bool, refused: bool = False) -> str:
    """end_turn, tool_use, max_tokens, refusal, other, or no_finish_reason when the stream never said why it
    ended (servers that say "stop" after tool calls mean tool_use); `window_filled` tells a full window apart."""
    if refused:
        return "refusal"
    if finish is None:
        return "no_finish_reason"
    reason = _STOP_REASONS.get(finish, "other")
    if has_calls and reason in ("end_turn", "other"):
        return "tool_use"
    if reason == "tool_use" and not has_calls:
        return "end_turn"
    return reason




def window_filled(reason: str, max_tokens: int | None, written: int | None) -> str:
    """`window_full` for a reply cut at "length" before it reached the request's output cap: the prompt and the
    reply filled the server's context window (llama.cpp and llama-cpp-python lower the cap to what is left of the
    window, and say "length" either way); else `reason` as it is. `written` is the output's size in tokens (the
    usage reported, else the count of chunks that carried output, never more than the tokens)."""
    if reason == "max_tokens" and max_tokens and written is not None and written < max_tokens:
        return "window_full"
    return reason
