"""OpenAI Chat Completions (streaming), which also serves OpenAI-compatible servers through a base URL."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from agentos.config import configured_base_url
from agentos.errors import ConfigError, ContextOverflowError, IncompleteStreamError
from agentos.messages import Message
from agentos.providers import openai_sdk
from agentos.providers.base import ModelRequest, ProviderEvent, ensure_real_provider_allowed
from agentos.providers.models import LOCAL_FAMILIES, SERVERS, ModelInfo, model_info
from agentos.providers.openai_stream import stream_events, unstreamed_events
from agentos.providers.retry import RetryPolicy, stream_with_retries
from agentos.providers.sdk_client import default_timeout, guarded_stream, resolve_key, shared_http_client
from agentos.providers.sdk_errors import client_context
from agentos.providers.served_window import ServedWindow, discover, remember, window_in_error
from agentos.providers.wire import Encode, EncodedOnce, EncodedSequence, dumps, json_array, json_object

if TYPE_CHECKING:
    import openai

EMPTY_TOOL_RESULT = "(no output)"


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
        # "auto", what no tool_choice means to OpenAI, said outright: llama-cpp-python's function-calling chat formats
        # (--chat_format chatml-function-calling) leave the tools out of the prompt without it. Not to vLLM (nor to
        # any server, which may be vLLM), which refuses "auto" unless started with --enable-auto-tool-choice.
        self._tool_choice = family not in ("vllm", "openai-compatible")
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

        def fetch(method: str, url: str, body: dict[str, Any] | None, timeout: float) -> Any:
            return openai_sdk.fetch_json(self._client, method, url, body, timeout)

        return discover(self.name, base_url, self.model, fetch, self.context_window)

    def learn_served_window(self, configured: int | None) -> None:
        """Use the window the server serves unless one is `configured`; note where the figure came from, and
        warn (in `window_warning`) when the configured one is larger than what is served, or when none is
        configured and the server's cannot be learnt where it is likely small (llama.cpp's servers)."""
        served = self.served_window()
        if served is None:
            return
        if not served.tokens:
            if configured is None:
                self.window_warning = (
                    f"could not learn the context window {self.model} is served with: {served.advice}. agentos "
                    f"assumes the model catalogue's {self.context_window:,} tokens; if the server serves less "
                    "(llama-cpp-python serves 2,048 unless started with --n_ctx N), longer prompts will fail. "
                    "Set the agent's window to what it serves: --window N, or `agentos window NAME N`.")
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
        if request.tools and self._tool_choice:
            params["tool_choice"] = "auto"
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
        if request.tools and self._tool_choice:
            fields.append(("tool_choice", b'"auto"'))
        if request.tools:
            fields.append(("tools", self._tools.get(request.tools)))
        return json_object(fields)

    def stream(self, request: ModelRequest) -> Iterator[ProviderEvent]:
        """Stream one call, retrying rate limits and server errors that happen before any output."""
        create = self._open_stream(request)
        yield from stream_with_retries(lambda: self._attempt(create, request), self.retry)

    def _attempt(self, create: Callable[[], Any], request: ModelRequest) -> Iterator[ProviderEvent]:
        """One try: the stream; from a local server whose stream ended empty, the same request without streaming.

        llama-cpp-python fails after it has sent the 200 and the stream's headers (a prompt over its window among
        such failures), so its stream ends without an event; asked without streaming, it says what went wrong
        (a 400 naming the window) or answers. A window an overflow error names becomes this provider's."""
        import openai

        try:
            try:
                yield from guarded_stream(create, partial(stream_events, max_tokens=request.max_output_tokens),
                                          openai, self._errors)
            except IncompleteStreamError as exc:
                if exc.partial or self.name not in LOCAL_FAMILIES:
                    raise
                params = {**self.request_params(request), "stream": False}
                params.pop("stream_options", None)
                yield from guarded_stream(lambda: self._post_whole(params),
                                          partial(unstreamed_events, max_tokens=request.max_output_tokens),
                                          openai, self._errors)
        except ContextOverflowError as exc:
            self._learn_from_overflow(exc)
            raise

    def _post_whole(self, params: dict[str, Any]) -> Any:
        """Post a request without streaming, on a new connection if the one it went on was closed unanswered:
        llama-cpp-python closes the connection its failed stream came on (which it said it would keep), just
        after the stream's end, so a request sent at once on it gets no answer."""
        import openai

        try:
            return openai_sdk.post_whole(self._client, params)
        except openai.APIConnectionError as exc:
            if isinstance(exc, openai.APITimeoutError):
                raise
            return openai_sdk.post_whole(self._client, params)  # the pool has let the closed connection go

    def _learn_from_overflow(self, exc: ContextOverflowError) -> None:
        """Take the window a local server's overflow error names as the one it serves (from now on, and for other
        providers of this server and model made in this process)."""
        tokens = window_in_error(f"{exc} {exc.__cause__ or ''}")
        if not tokens or self.name not in LOCAL_FAMILIES or tokens == self.context_window:
            return
        learnt = remember(str(self._client.base_url), self.model, tokens,
                          "served by the server (learnt from its refusal of a request too long)")
        self.context_window, self.window_source = learnt.tokens, learnt.source

    def _open_stream(self, request: ModelRequest) -> Callable[[], Any]:
        """What opens the SDK's stream for `request`: a post of the ready body, or `create` where the SDK
        cannot take one."""
        client, options = self._client, self._options
        if options is None:
            params = self.request_params(request)
            return lambda: openai_sdk.create_stream(client, params)
        body = self.request_body(request)
        return lambda: openai_sdk.post_ready_body(client, body, options)
