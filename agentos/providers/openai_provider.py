"""OpenAI Chat Completions (streaming), which also serves OpenAI-compatible servers through a base URL."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentos.config import configured_base_url
from agentos.errors import ConfigError, IncompleteStreamError
from agentos.messages import Message, ToolCall, Usage, new_id
from agentos.providers import openai_sdk
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
from agentos.providers.served_window import DISCOVERY_TIMEOUT_S, ServedWindow, discover
from agentos.providers.wire import Encode, EncodedOnce, EncodedSequence, dumps, json_array, json_object

if TYPE_CHECKING:
    import openai

EMPTY_TOOL_RESULT = "(no output)"

_STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "content_filter": "refusal",
                 "tool_calls": "tool_use", "function_call": "tool_use"}


def _skipped(m: Message) -> bool:
    """An empty assistant message (an empty reply): left out, as strict servers reject it."""
    return m.role == "assistant" and not m.content and not m.tool_calls


def wire_groups(messages: Sequence[Message]) -> Iterator[tuple[int, list[Message]]]:
    """The messages that become one wire message each, with the index of each group's first: every message
    alone, except that a run of user messages is joined (empty replies between them are left out), so one
    odd reply cannot make a strict server reject every later request."""
    run: list[Message] = []
    run_start = 0
    for index, m in enumerate(messages):
        if _skipped(m):
            continue
        if m.role == "user":
            if not run:
                run_start = index
            run.append(m)
            continue
        if run:
            yield run_start, run
            run = []
        yield index, [m]
    if run:
        yield run_start, run


def openai_message(m: Message, *, null_content: bool = True) -> dict[str, Any]:
    """One canonical message in Chat Completions form."""
    if m.role == "assistant":
        message: dict[str, Any] = {"role": "assistant", "content": m.content or (None if null_content else "")}
        if m.tool_calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in m.tool_calls
            ]
        return message
    if m.role == "tool":
        return {"role": "tool", "tool_call_id": m.tool_call_id or "", "content": m.content or EMPTY_TOOL_RESULT}
    return {"role": m.role, "content": m.content}


def _group_message(group: list[Message], null_content: bool) -> dict[str, Any]:
    if len(group) == 1:
        return openai_message(group[0], null_content=null_content)
    return {"role": "user", "content": "\n\n".join(m.content for m in group)}


def to_openai_messages(request: ModelRequest, *, null_content: bool = True) -> list[dict[str, Any]]:
    """Canonical messages in Chat Completions form: the system prompt, then `wire_groups` of the messages."""
    return [{"role": "system", "content": request.system}] + [
        _group_message(group, null_content) for _, group in wire_groups(request.messages)]


class EncodedMessages:
    """`to_openai_messages` as the JSON the SDK would send, each message encoded once, and a call's
    sequence encoded only past the previous call's."""

    def __init__(self, *, null_content: bool) -> None:
        self.null_content = null_content
        self._sequence = EncodedSequence(self._items, self._one)

    def _one(self, m: Message) -> bytes:
        return dumps(openai_message(m, null_content=self.null_content))

    def _items(self, messages: Sequence[Message], first: bool, encoded: Encode) -> Iterator[tuple[int, bytes]]:
        for start, group in wire_groups(messages):
            yield start, encoded(group[0]) if len(group) == 1 else dumps(_group_message(group, self.null_content))

    def encode(self, request: ModelRequest) -> bytes:
        return json_array([dumps({"role": "system", "content": request.system}), *self._sequence.items(request.messages)])


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


def whole_completion_events(body: dict[str, Any]) -> Iterator[ProviderEvent]:
    """Provider events from a whole `chat.completion` (a server that answered a streaming request without
    streaming), read leniently: local servers leave out fields or use their own finish reasons."""
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
    if isinstance(usage, dict):
        details = usage.get("prompt_tokens_details") or {}
        yield StreamUsage(Usage(input_tokens=int(usage.get("prompt_tokens") or 0),
                                output_tokens=int(usage.get("completion_tokens") or 0),
                                cache_read_tokens=int(details.get("cached_tokens") or 0)))
    finish = choice.get("finish_reason")
    yield StreamDone(normalise_stop(str(finish) if finish else "stop", has_calls=bool(calls)))


def stream_events(chunks: Iterable[Any]) -> Iterator[ProviderEvent]:
    """Provider events from a stream of ChatCompletionChunk objects (or from one whole completion, when the server
    answered with JSON instead of a stream)."""
    body = openai_sdk.whole_reply(chunks)
    if isinstance(body, dict) and body.get("choices") is not None:
        yield from whole_completion_events(body)
        return
    calls = ToolCallAssembler()
    finish: str | None = None
    usage: Any = None
    refused = False
    produced = False
    for chunk in chunks:
        if getattr(chunk, "usage", None) is not None:
            usage = chunk.usage
        for choice in chunk.choices or []:
            delta = choice.delta
            if delta is not None:
                produced = produced or bool(delta.content or delta.tool_calls or getattr(delta, "refusal", None))
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
    if usage is not None:
        yield StreamUsage(openai_usage(usage))
    yield StreamDone(normalise_stop(finish, has_calls=bool(assembled), refused=refused))


def normalise_stop(finish: str | None, *, has_calls: bool, refused: bool = False) -> str:
    """end_turn, tool_use, max_tokens, refusal, other, or no_finish_reason when the stream never said why it
    ended (servers that say "stop" after tool calls mean tool_use)."""
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


class OpenAIProvider:
    """A model behind the Chat Completions API: OpenAI itself, or any compatible server (`family`)."""

    def __init__(
        self,
        model: str,
        *,
        family: str = "openai",
        api_key: str | None = None,
        base_url: str | None = None,
        client: openai.OpenAI | None = None,
        http_client: Any = None,
        info: ModelInfo | None = None,
        context_window: int | None = None,
        retry: RetryPolicy | None = None,
        timeout: Any = None,
        stream_usage: bool = True,
    ) -> None:
        ensure_real_provider_allowed(family)
        import openai

        server = SERVERS[family]
        self.name = family
        self.model = model
        self.info = (info or model_info(family, model)).override(context_window=context_window)
        self.context_window = self.info.context_window
        self.retry = retry or RetryPolicy()
        self.stream_usage = stream_usage
        if client is None:
            base_url = base_url or configured_base_url(family) or server.base_url
            if family == "openai-compatible" and not base_url:
                raise ConfigError(
                    f"openai-compatible/{model} needs the server's address: use the spec "
                    f"openai-compatible/{model}@http://HOST:PORT/v1, or set base_urls in the agentos config file."
                )
            client = openai.OpenAI(api_key=resolve_key(family, api_key), base_url=base_url, max_retries=0,
                                   timeout=timeout or default_timeout(),
                                   http_client=http_client or shared_http_client(openai))
        self.base_url = base_url
        self._client = client
        self._errors = client_context(server.label, model, server.key_variable, family, base_url, client)
        self._max_tokens_key = "max_completion_tokens" if family == "openai" else "max_tokens"
        self._tools = EncodedOnce(lambda tools: json_array(dumps(t.openai_schema()) for t in tools))
        self._messages = EncodedMessages(null_content=family == "openai")
        self._options = openai_sdk.ready_body_options(client)  # None: this SDK cannot post a ready body
        self.window_source = "model catalogue"  # or what the server said (`learn_served_window`)
        self.window_advice = ""
        self.window_warning = ""

    def __repr__(self) -> str:
        return f"OpenAIProvider({self.name}/{self.model}, base_url={self.base_url!r})"

    def served_window(self) -> ServedWindow | None:
        """Ask the server which context window it serves this model with (see `served_window.discover`)."""
        base_url = str(self._client.base_url).rstrip("/")

        def fetch(method: str, url: str, body: dict[str, Any] | None) -> Any:
            return openai_sdk.fetch_json(self._client, method, url, body, DISCOVERY_TIMEOUT_S)

        return discover(self.name, base_url, self.model, fetch)

    def learn_served_window(self, configured: int | None) -> None:
        """Use the window the server serves unless one is `configured`; note where the figure came from, and
        warn (in `window_warning`) when the configured one is larger than what is served."""
        served = self.served_window()
        if served is None:
            return
        if configured is None:
            self.context_window, self.window_source = served.tokens, served.source
            self.window_advice = served.advice
        elif configured > served.tokens:
            self.window_warning = (f"this agent's context window is set to {configured:,} tokens, but the server "
                                   f"serves {served.tokens:,} ({served.source}); longer prompts will fail or be cut. "
                                   f"{served.advice + '. ' if served.advice else ''}Or set the agent's window to "
                                   f"{served.tokens:,}.")

    def request_params(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments of `chat.completions.create` for a request, in the order the SDK sends them."""
        params: dict[str, Any] = {
            "model": self.model,
            "stream": True,
            "messages": to_openai_messages(request, null_content=self.name == "openai"),
        }
        if request.max_output_tokens:
            params[self._max_tokens_key] = request.max_output_tokens
        if self.stream_usage:
            params["stream_options"] = {"include_usage": True}
        if request.tools:
            params["tools"] = [t.openai_schema() for t in request.tools]
        return params

    def request_body(self, request: ModelRequest) -> bytes:
        """The body `chat.completions.create(**request_params(request))` sends, byte for byte, built from
        messages encoded once and the tool list encoded once."""
        fields = [("model", dumps(self.model)), ("stream", b"true"),
                  ("messages", self._messages.encode(request))]
        if request.max_output_tokens:
            fields.append((self._max_tokens_key, dumps(request.max_output_tokens)))
        if self.stream_usage:
            fields.append(("stream_options", b'{"include_usage":true}'))
        if request.tools:
            fields.append(("tools", self._tools.get(request.tools)))
        return json_object(fields)

    def stream(self, request: ModelRequest) -> Iterator[ProviderEvent]:
        """Stream one call, retrying rate limits and server errors that happen before any output."""
        import openai

        create = self._open_stream(request)

        def attempt() -> Iterator[ProviderEvent]:
            return guarded_stream(create, stream_events, openai, self._errors)

        yield from stream_with_retries(attempt, self.retry)

    def _open_stream(self, request: ModelRequest) -> Callable[[], Any]:
        """What opens the SDK's stream for `request`: a post of the ready body, or `create` where the SDK
        cannot take one."""
        client, options = self._client, self._options
        if options is None:
            params = self.request_params(request)
            return lambda: openai_sdk.create_stream(client, params)
        body = self.request_body(request)
        return lambda: openai_sdk.post_ready_body(client, body, options)
