"""Anthropic Messages (streaming), with prompt-cache breakpoints on the tools and the static system prompt."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from agentos.config import configured_base_url
from agentos.errors import IncompleteStreamError
from agentos.messages import Message, ToolCall, Usage
from agentos.providers import anthropic_sdk
from agentos.providers.base import (
    ModelRequest,
    ProviderEvent,
    StreamDone,
    StreamText,
    StreamToolCall,
    StreamUsage,
    ensure_real_provider_allowed,
)
from agentos.providers.models import SERVERS, ModelInfo, model_info
from agentos.providers.retry import RetryPolicy, stream_with_retries
from agentos.providers.sdk_client import default_timeout, guarded_stream, resolve_key, shared_http_client
from agentos.providers.sdk_errors import client_context
from agentos.providers.wire import Encode, EncodedOnce, EncodedSequence, dumps, json_array, json_object

if TYPE_CHECKING:
    import anthropic

CACHE = {"type": "ephemeral"}
EMPTY_TOOL_RESULT = "(no output)"
EMPTY_TEXT = "(empty)"
CONTINUE_TEXT = "(continuing the conversation)"
DEFAULT_MAX_OUTPUT = 8192

_STOP_REASONS = {"end_turn": "end_turn", "stop_sequence": "end_turn", "tool_use": "tool_use",
                 "max_tokens": "max_tokens", "model_context_window_exceeded": "max_tokens", "refusal": "refusal"}
_BAD_ID_CHARS = re.compile(r"[^A-Za-z0-9_-]")


def _tool_id(call_id: str | None) -> str:
    """Anthropic accepts tool ids of letters, digits, '_' and '-' only (ids from other providers may differ)."""
    return _BAD_ID_CHARS.sub("_", call_id or "") or "call"


def _tool_input(call: ToolCall) -> dict[str, Any]:
    """The call's arguments as an object; malformed or too deeply nested JSON (already answered with a tool
    error) becomes {}."""
    try:
        value = json.loads(call.arguments or "{}")
    except (json.JSONDecodeError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _blocks(m: Message) -> list[dict[str, Any]]:
    if m.role == "assistant":
        blocks: list[dict[str, Any]] = [{"type": "text", "text": m.content}] if m.content.strip() else []
        blocks += [{"type": "tool_use", "id": _tool_id(c.id), "name": c.name, "input": _tool_input(c)} for c in m.tool_calls]
        return blocks
    if m.role == "tool":
        return [{"type": "tool_result", "tool_use_id": _tool_id(m.tool_call_id),
                 "content": m.content or EMPTY_TOOL_RESULT, "is_error": m.is_error}]
    text = m.content if m.content.strip() else EMPTY_TEXT
    return [{"type": "text", "text": f"[system] {text}" if m.role == "system" else text}]


def wire_turns(messages: Sequence[Message], first: bool = True) -> list[tuple[int, str, list[Message]]]:
    """The messages of each alternating user/assistant turn, with the index of each turn's first message.

    Tool results and mid-conversation system notes travel as user turns; consecutive same-role
    messages share a turn, with tool results first (the API wants them to open a user turn); empty
    assistant replies are dropped (the API rejects empty content); the first turn is a user turn
    (a placeholder is added where the history, if `first` says it starts here, starts with a reply).
    """
    turns: list[tuple[int, str, list[Message]]] = []
    for index, m in enumerate(messages):
        role = "assistant" if m.role == "assistant" else "user"
        if role == "assistant" and not m.content.strip() and not m.tool_calls:
            continue
        if turns and turns[-1][1] == role:
            turns[-1][2].append(m)
        else:
            turns.append((index, role, [m]))
    if first and turns and turns[0][1] != "user":
        turns.insert(0, (0, "user", [Message.user(CONTINUE_TEXT)]))
    for _, role, members in turns:
        if role == "user":
            members.sort(key=lambda m: m.role != "tool")
    return turns


def to_anthropic_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Canonical messages as alternating user/assistant turns of content blocks (see `wire_turns`)."""
    return [{"role": role, "content": [b for m in members for b in _blocks(m)]} for _, role, members in wire_turns(messages)]


def _encode_blocks(m: Message) -> bytes:
    return b",".join(dumps(block) for block in _blocks(m))


def _encoded_turns(messages: Sequence[Message], first: bool, encoded: Encode) -> Iterator[tuple[int, bytes]]:
    for start, role, members in wire_turns(messages, first):
        blocks = b",".join(encoded(m) for m in members)
        yield start, b'{"role":"' + role.encode() + b'","content":[' + blocks + b"]}"


def system_blocks(request: ModelRequest) -> list[dict[str, Any]]:
    """The system prompt: the byte-stable static part (a cache breakpoint), then the dynamic part."""
    blocks = []
    if request.system_static.strip():
        blocks.append({"type": "text", "text": request.system_static, "cache_control": CACHE})
    if request.system_dynamic.strip():
        blocks.append({"type": "text", "text": request.system_dynamic})
    return blocks


def tool_schemas(tools: list[Any]) -> list[dict[str, Any]]:
    """The tools, with a cache breakpoint on the last one so the whole list is cached."""
    schemas = [dict(t.anthropic_schema()) for t in tools]
    if schemas:
        schemas[-1]["cache_control"] = CACHE
    return schemas


def _usage(raw: Any, into: dict[str, int]) -> None:
    for field, key in (("input_tokens", "input"), ("output_tokens", "output"),
                       ("cache_read_input_tokens", "read"), ("cache_creation_input_tokens", "write")):
        value = getattr(raw, field, None)
        if value is not None:
            into[key] = value  # message_delta counts are cumulative: the latest wins


def stream_events(events: Iterable[Any]) -> Iterator[ProviderEvent]:
    """Provider events from a stream of raw Messages stream events.

    `input_tokens` of the usage is the whole prompt: uncached + cache reads + cache writes.
    """
    blocks: dict[int, dict[str, Any]] = {}
    counts: dict[str, int] = {}
    stop: str | None = None
    ended = produced = False
    for event in events:
        kind = event.type
        produced = produced or kind in ("content_block_start", "content_block_delta")
        ended = ended or kind == "message_stop"
        if kind == "message_start":
            _usage(event.message.usage, counts)
        elif kind == "content_block_start":
            block = event.content_block
            blocks[event.index] = {"type": block.type, "id": getattr(block, "id", ""), "name": getattr(block, "name", ""),
                                   "json": "", "input": getattr(block, "input", None)}
            if block.type == "text" and getattr(block, "text", ""):
                yield StreamText(block.text)
        elif kind == "content_block_delta":
            delta = event.delta
            if delta.type == "text_delta" and delta.text:
                yield StreamText(delta.text)
            elif delta.type == "input_json_delta":
                blocks.setdefault(event.index, {"type": "tool_use", "id": "", "name": "", "json": "", "input": None})
                blocks[event.index]["json"] += delta.partial_json
        elif kind == "content_block_stop":
            block = blocks.get(event.index)
            if block and block["type"] == "tool_use":
                arguments = block["json"] or (json.dumps(block["input"]) if block["input"] else "{}")
                yield StreamToolCall(ToolCall(id=block["id"], name=block["name"], arguments=arguments))
                block["type"] = "done"
        elif kind == "message_delta":
            stop = event.delta.stop_reason or stop
            _usage(event.usage, counts)
    if stop is None and not ended:
        raise IncompleteStreamError(partial=produced)  # neither a stop reason nor message_stop: cut
    for block in blocks.values():  # a stream cut short (max_tokens) may leave a call open
        if block["type"] == "tool_use":
            yield StreamToolCall(ToolCall(id=block["id"], name=block["name"], arguments=block["json"] or "{}"))
    if counts:
        read, write = counts.get("read", 0), counts.get("write", 0)
        yield StreamUsage(Usage(input_tokens=counts.get("input", 0) + read + write, output_tokens=counts.get("output", 0),
                                cache_read_tokens=read, cache_write_tokens=write))
    yield StreamDone(_STOP_REASONS.get(stop, "other") if stop else "no_finish_reason")


class AnthropicProvider:
    """A Claude model behind the Anthropic Messages API."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        client: anthropic.Anthropic | None = None,
        http_client: Any = None,
        info: ModelInfo | None = None,
        context_window: int | None = None,
        max_output_tokens: int | None = None,
        retry: RetryPolicy | None = None,
        timeout: Any = None,
    ) -> None:
        ensure_real_provider_allowed("anthropic")
        import anthropic

        self.name = "anthropic"
        self.model = model
        self.info = (info or model_info("anthropic", model)).override(context_window=context_window)
        self.context_window = self.info.context_window
        self.max_output_tokens = max_output_tokens or min(self.info.max_output_tokens, DEFAULT_MAX_OUTPUT)
        self.retry = retry or RetryPolicy()
        if client is None:
            base_url = base_url or configured_base_url("anthropic")
            client = anthropic.Anthropic(api_key=resolve_key("anthropic", api_key), base_url=base_url, max_retries=0,
                                         timeout=timeout or default_timeout(),
                                         http_client=http_client or shared_http_client(anthropic))
        self.base_url = base_url
        self._client = client
        self._tools = EncodedOnce(lambda tools: dumps(tool_schemas(tools)))
        self._messages = EncodedSequence(_encoded_turns, _encode_blocks)
        self._options = anthropic_sdk.ready_body_options(client)  # None: this SDK cannot post a ready body
        server = SERVERS["anthropic"]
        self._errors = client_context(server.label, model, server.key_variable, "anthropic", base_url, client)

    def __repr__(self) -> str:
        return f"AnthropicProvider(anthropic/{self.model})"

    def request_params(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments of `messages.create` for a request, in the order the SDK sends them."""
        params: dict[str, Any] = {
            "max_tokens": request.max_output_tokens or self.max_output_tokens,
            "messages": to_anthropic_messages(request.messages),
            "model": self.model,
            "stream": True,
            "system": system_blocks(request),
        }
        if request.tools:
            params["tools"] = tool_schemas(request.tools)
        return params

    def request_body(self, request: ModelRequest) -> bytes:
        """The body `messages.create(**request_params(request))` sends, byte for byte, built from messages
        encoded once and the tool list encoded once."""
        fields = [("max_tokens", dumps(request.max_output_tokens or self.max_output_tokens)),
                  ("messages", json_array(self._messages.items(request.messages))), ("model", dumps(self.model)),
                  ("stream", b"true"), ("system", dumps(system_blocks(request)))]
        if request.tools:
            fields.append(("tools", self._tools.get(request.tools)))
        return json_object(fields)

    def stream(self, request: ModelRequest) -> Iterator[ProviderEvent]:
        """Stream one call, retrying rate limits and server errors that happen before any output."""
        import anthropic

        create = self._open_stream(request)

        def attempt() -> Iterator[ProviderEvent]:
            return guarded_stream(create, stream_events, anthropic, self._errors)

        yield from stream_with_retries(attempt, self.retry)

    def _open_stream(self, request: ModelRequest) -> Callable[[], Any]:
        """What opens the SDK's stream for `request`: a post of the ready body, or `create` where the SDK
        cannot take one."""
        client, options = self._client, self._options
        if options is None:
            params = self.request_params(request)
            return lambda: anthropic_sdk.create_stream(client, params)
        body = self.request_body(request)
        return lambda: anthropic_sdk.post_ready_body(client, body, options)
