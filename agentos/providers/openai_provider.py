"""OpenAI Chat Completions (streaming), which also serves OpenAI-compatible servers through a base URL."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentos.errors import ConfigError
from agentos.messages import ToolCall, Usage, new_id
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
from agentos.providers.sdk_client import default_timeout, guarded_stream, resolve_key
from agentos.providers.sdk_errors import ErrorContext

if TYPE_CHECKING:
    import openai

EMPTY_TOOL_RESULT = "(no output)"

_STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "content_filter": "refusal",
                 "tool_calls": "tool_use", "function_call": "tool_use"}


def to_openai_messages(request: ModelRequest, *, null_content: bool = True) -> list[dict[str, Any]]:
    """Canonical messages in Chat Completions form.

    Empty assistant messages (an empty reply) are left out and consecutive user messages are
    joined, so one odd reply cannot make a strict server reject every later request.
    """
    out: list[dict[str, Any]] = [{"role": "system", "content": request.system}]
    for m in request.messages:
        if m.role == "user":
            if out[-1]["role"] == "user" and isinstance(out[-1]["content"], str):
                out[-1]["content"] += "\n\n" + m.content
            else:
                out.append({"role": "user", "content": m.content})
        elif m.role == "system":
            out.append({"role": "system", "content": m.content})
        elif m.role == "assistant":
            if not m.content and not m.tool_calls:
                continue
            message: dict[str, Any] = {"role": "assistant", "content": m.content or (None if null_content else "")}
            if m.tool_calls:
                message["tool_calls"] = [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                    for c in m.tool_calls
                ]
            out.append(message)
        elif m.role == "tool":
            out.append({"role": "tool", "tool_call_id": m.tool_call_id or "", "content": m.content or EMPTY_TOOL_RESULT})
    return out


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


def stream_events(chunks: Iterable[Any]) -> Iterator[ProviderEvent]:
    """Provider events from a stream of ChatCompletionChunk objects."""
    calls = ToolCallAssembler()
    finish: str | None = None
    usage: Any = None
    refused = False
    for chunk in chunks:
        if getattr(chunk, "usage", None) is not None:
            usage = chunk.usage
        for choice in chunk.choices or []:
            delta = choice.delta
            if delta is not None:
                if delta.content:
                    yield StreamText(delta.content)
                if getattr(delta, "refusal", None):
                    refused = True
                    yield StreamText(delta.refusal)
                for fragment in delta.tool_calls or []:
                    calls.add(fragment)
            if choice.finish_reason:
                finish = choice.finish_reason
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
        server = SERVERS[family]
        self.name = family
        self.model = model
        self.info = (info or model_info(family, model)).override(context_window=context_window)
        self.context_window = self.info.context_window
        self.retry = retry or RetryPolicy()
        self.stream_usage = stream_usage
        if client is None:
            from agentos.config import configured_base_url

            base_url = base_url or configured_base_url(family) or server.base_url
            if family == "openai-compatible" and not base_url:
                raise ConfigError(
                    f"openai-compatible/{model} needs the server's address: use the spec "
                    f"openai-compatible/{model}@http://HOST:PORT/v1, or set base_urls in the agentos config file."
                )
            import openai

            client = openai.OpenAI(api_key=resolve_key(family, api_key), base_url=base_url, max_retries=0,
                                   timeout=timeout or default_timeout(), http_client=http_client)
        self.base_url = base_url
        self._client = client
        self._errors = ErrorContext(server.label, model, server.key_variable, base_url, family)

    def __repr__(self) -> str:
        return f"OpenAIProvider({self.name}/{self.model}, base_url={self.base_url!r})"

    def request_params(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments of `chat.completions.create` for a request."""
        params: dict[str, Any] = {
            "model": self.model,
            "messages": to_openai_messages(request, null_content=self.name == "openai"),
            "stream": True,
        }
        if self.stream_usage:
            params["stream_options"] = {"include_usage": True}
        if request.tools:
            params["tools"] = [t.openai_schema() for t in request.tools]
        if request.max_output_tokens:
            params["max_completion_tokens" if self.name == "openai" else "max_tokens"] = request.max_output_tokens
        return params

    def stream(self, request: ModelRequest) -> Iterator[ProviderEvent]:
        """Stream one call, retrying rate limits and server errors that happen before any output."""
        import openai

        params = self.request_params(request)

        def attempt() -> Iterator[ProviderEvent]:
            return guarded_stream(lambda: self._client.chat.completions.create(**params), stream_events, openai, self._errors)

        yield from stream_with_retries(attempt, self.retry)
