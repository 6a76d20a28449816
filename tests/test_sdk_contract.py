"""What the SDK adapters rely on inside each installed SDK, checked so that an SDK version that changed it fails
here, naming what changed; and the public `create` fallback, used and right, where an SDK cannot take a ready body.
"""

from __future__ import annotations

import importlib
import inspect
import json
from collections.abc import Callable
from types import ModuleType
from typing import Any

import httpx2
import pytest
from mock_api import MockAPI, an_text_reply, get_weather, oa_text_reply, sse_response

from agentos.messages import Message, ToolCall
from agentos.providers import anthropic_sdk, openai_sdk
from agentos.providers.anthropic_provider import AnthropicProvider
from agentos.providers.anthropic_provider import stream_events as anthropic_events
from agentos.providers.base import ModelRequest, StreamDone, StreamText, complete
from agentos.providers.openai_provider import OpenAIProvider
from agentos.providers.openai_provider import stream_events as openai_events

pytestmark = pytest.mark.usefixtures("allow_real_providers")

ADAPTERS: dict[str, ModuleType] = {"openai": openai_sdk, "anthropic": anthropic_sdk}


def installed(name: str) -> ModuleType:
    return pytest.importorskip(name)


def what(sdk: ModuleType) -> str:
    return f"{sdk.__name__} {getattr(sdk, '__version__', '(unknown version)')}"


def request() -> ModelRequest:
    reply = Message.assistant("Checking Zürich.", [ToolCall(id="call_1", name="get_weather", arguments='{"city": "Zürich"}')])
    messages = [Message.user("Wie ist das Wetter in Zürich? 😀"), reply, Message.tool_result(reply.tool_calls[0], "21 °C"),
                Message.assistant("21 °C and sunny."), Message.user("thanks")]
    return ModelRequest("You are helpful.", "<memory_blocks>\nName: Åsa\n</memory_blocks>", messages,
                        tools=[get_weather], max_output_tokens=300)


def openai_provider(api: MockAPI) -> OpenAIProvider:
    return OpenAIProvider("gpt-4.1-mini", api_key="sk-test", base_url="http://mock/v1", http_client=api.client())


def anthropic_provider(api: MockAPI) -> AnthropicProvider:
    return AnthropicProvider("claude-sonnet-4-5", api_key="sk-ant-test", base_url="http://mock", http_client=api.client())


PROVIDERS: dict[str, tuple[Callable[[MockAPI], Any], Callable[[], bytes]]] = {
    "openai": (openai_provider, lambda: oa_text_reply("ok")),
    "anthropic": (anthropic_provider, lambda: an_text_reply("ok")),
}


def sent(api: MockAPI, index: int) -> tuple[str, str, dict[str, str], bytes]:
    r = api.requests[index]
    return r.method, str(r.url), dict(r.headers), r.content


def ready_options(provider: Any) -> Any:
    """The provider's options for posting a ready body; a failure naming the adapter where it has none."""
    adapter = openai_sdk if isinstance(provider, OpenAIProvider) else anthropic_sdk
    assert provider._options is not None, (f"{adapter.__name__}.ready_body_options says the installed SDK cannot "
                                           f"take a ready body; every call would go through `create`")
    return provider._options


# -- the private names, signatures and stream classes each adapter relies on ------------------------------------


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_make_request_options_exists_and_takes_the_keywords_the_adapter_passes(name: str) -> None:
    sdk, adapter = installed(name), ADAPTERS[name]
    try:
        base_client = importlib.import_module(f"{name}._base_client")
    except ImportError as exc:
        pytest.fail(f"{what(sdk)}: {name}._base_client is gone ({exc}); {adapter.__name__} builds its request options "
                    f"from {name}._base_client.make_request_options")
    make = getattr(base_client, "make_request_options", None)
    assert callable(make), (f"{what(sdk)}: {name}._base_client.make_request_options is gone; {adapter.__name__} "
                            f"builds the fast path's request options with it")
    accepted = inspect.signature(make).parameters
    missing = [key for key in adapter.REQUEST_OPTIONS if key not in accepted]
    assert not missing, (f"{what(sdk)}: {name}._base_client.make_request_options no longer takes {missing} "
                         f"(it takes {list(accepted)}); {adapter.__name__}.REQUEST_OPTIONS passes them")
    options = make(**adapter.REQUEST_OPTIONS)
    assert isinstance(options, dict), f"{what(sdk)}: make_request_options now returns {type(options)}, not a dict"


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_the_client_post_takes_a_ready_body_and_a_stream_class(name: str) -> None:
    sdk, adapter = installed(name), ADAPTERS[name]
    client_class = sdk.OpenAI if name == "openai" else sdk.Anthropic
    post = getattr(client_class, "post", None)
    assert callable(post), f"{what(sdk)}: {client_class.__name__}.post is gone; {adapter.__name__} posts ready bodies with it"
    accepted = inspect.signature(post).parameters
    missing = [key for key in adapter.POST_KEYWORDS if key not in accepted]
    assert not missing, (f"{what(sdk)}: {client_class.__name__}.post no longer takes {missing} (it takes "
                         f"{list(accepted)}); {adapter.__name__} posts the ready body with {list(adapter.POST_KEYWORDS)}")


def test_the_openai_stream_class_and_types_the_adapter_subclasses_are_there() -> None:
    sdk = installed("openai")
    chat_types = importlib.import_module("openai.types.chat")
    for type_name in ("ChatCompletion", "ChatCompletionChunk"):
        assert hasattr(chat_types, type_name), f"{what(sdk)}: openai.types.chat.{type_name} is gone (cast_to of the fast path)"
    stream = getattr(sdk, "Stream", None)
    assert stream is not None, f"{what(sdk)}: openai.Stream is gone; the keep-alive stream subclasses it"
    assert callable(getattr(stream, openai_sdk.STREAM_EVENTS_METHOD, None)), (
        f"{what(sdk)}: openai.Stream.{openai_sdk.STREAM_EVENTS_METHOD} is gone; the keep-alive stream wraps it to see "
        f"the end marker")
    assert issubclass(openai_sdk.keep_alive_stream(), stream)


def test_the_anthropic_stream_class_and_types_the_adapter_posts_with_are_there() -> None:
    sdk = installed("anthropic")
    api_types = importlib.import_module("anthropic.types")
    for type_name in ("Message", "RawMessageStreamEvent"):
        assert hasattr(api_types, type_name), f"{what(sdk)}: anthropic.types.{type_name} is gone (the fast path uses it)"
    stream = getattr(sdk, "Stream", None)
    assert stream is not None, f"{what(sdk)}: anthropic.Stream is gone; the fast path reads its reply with it"
    stream[api_types.RawMessageStreamEvent]  # generic: the fast path subscripts it


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_the_adapter_offers_the_fast_path_on_the_installed_sdk(name: str) -> None:
    installed(name)
    ready_options(PROVIDERS[name][0](MockAPI()))


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_the_ready_body_goes_out_exactly_as_create_sends_it(name: str) -> None:
    sdk = installed(name)
    make, reply = PROVIDERS[name]
    api = MockAPI(sse_response(reply()), sse_response(reply()))
    provider = make(api)
    wanted = request()
    adapter = ADAPTERS[name]
    with adapter.create_stream(provider._client, provider.request_params(wanted)) as stream:
        list(stream)
    with adapter.post_ready_body(provider._client, provider.request_body(wanted), ready_options(provider)) as stream:
        list(stream)
    by_create, by_post = sent(api, 0), sent(api, 1)
    for part, label in ((0, "method"), (1, "URL"), (3, "body")):
        assert by_post[part] == by_create[part], f"{what(sdk)}: the fast path's {label} differs from `create`'s"
    differing = {k: (by_post[2].get(k), v) for k, v in by_create[2].items() if by_post[2].get(k) != v}
    extra = sorted(set(by_post[2]) - set(by_create[2]))
    assert not differing and not extra, (f"{what(sdk)}: the fast path's headers differ from `create`'s: "
                                         f"(fast path, create) {differing}, only in the fast path: {extra}")


def test_the_openai_keep_alive_stream_yields_chunks_sees_the_end_marker_and_reads_to_the_end() -> None:
    sdk = installed("openai")
    chunk_type = importlib.import_module("openai.types.chat").ChatCompletionChunk
    api = MockAPI(sse_response(oa_text_reply("Hello")))
    provider = openai_provider(api)
    stream = openai_sdk.post_ready_body(provider._client, provider.request_body(request()), ready_options(provider))
    chunks = list(stream)
    assert chunks and all(isinstance(c, chunk_type) for c in chunks), f"{what(sdk)}: the stream no longer yields chunks"
    assert openai_sdk.end_marker_seen(stream), f"{what(sdk)}: the keep-alive stream never saw `[DONE]`"
    assert stream.response.is_closed, f"{what(sdk)}: the response was not read to its end and closed"
    assert [e for e in openai_events(chunks) if isinstance(e, StreamText)] == [StreamText("Hello")]


def test_an_openai_reply_that_came_as_one_json_document_is_read_whole() -> None:
    installed("openai")
    whole = {"id": "c1", "object": "chat.completion", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "at once"}, "finish_reason": "stop"}]}
    api = MockAPI(httpx2.Response(200, json=whole))
    provider = openai_provider(api)
    stream = openai_sdk.post_ready_body(provider._client, provider.request_body(request()), ready_options(provider))
    assert openai_sdk.whole_reply(stream) == whole
    assert openai_sdk.whole_reply([]) is None and not openai_sdk.end_marker_seen([])


def test_the_anthropic_stream_yields_the_raw_events_the_provider_translates() -> None:
    sdk = installed("anthropic")
    api = MockAPI(sse_response(an_text_reply("Hello")))
    provider = anthropic_provider(api)
    stream = anthropic_sdk.post_ready_body(provider._client, provider.request_body(request()), ready_options(provider))
    events = list(stream)
    kinds = [e.type for e in events]
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop", f"{what(sdk)}: raw stream events changed: {kinds}"
    translated = list(anthropic_events(events))
    assert StreamText("Hello") in translated and translated[-1] == StreamDone("end_turn")


def test_the_openai_adapter_reaches_other_endpoints_for_json() -> None:
    installed("openai")
    api = MockAPI(httpx2.Response(200, json={"data": [{"id": "m"}]}), httpx2.Response(200, json={"ok": True}))
    provider = openai_provider(api)
    assert openai_sdk.fetch_json(provider._client, "GET", "http://mock/v1/models", None, 2.0) == {"data": [{"id": "m"}]}
    assert openai_sdk.fetch_json(provider._client, "POST", "http://mock/api/show", {"model": "m"}, 2.0) == {"ok": True}
    assert api.requests[1].method == "POST" and json.loads(api.requests[1].content) == {"model": "m"}


# -- where the adapter reports the fast path unavailable: `create`, with the same request ---------------------------


def _without_make_request_options(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.delattr(importlib.import_module(f"{name}._base_client"), "make_request_options")


def _with_older_make_request_options(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    def make_request_options(*, extra_query: Any = None) -> dict[str, Any]:  # takes none of the adapter's keywords
        return {}

    monkeypatch.setattr(importlib.import_module(f"{name}._base_client"), "make_request_options", make_request_options)


def _with_a_post_that_takes_no_content(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    sdk = importlib.import_module(name)
    client_class = sdk.OpenAI if name == "openai" else sdk.Anthropic
    original = client_class.post

    def post(self: Any, path: str, *, cast_to: Any, body: Any = None, options: Any = None, files: Any = None,
             stream: bool = False, stream_cls: Any = None) -> Any:
        return original(self, path, cast_to=cast_to, body=body, options=options or {}, files=files, stream=stream,
                        stream_cls=stream_cls)

    monkeypatch.setattr(client_class, "post", post)


SDK_CHANGES = {"make_request_options gone": _without_make_request_options,
               "make_request_options takes other keywords": _with_older_make_request_options,
               "post takes no content": _with_a_post_that_takes_no_content}


@pytest.mark.parametrize("change", sorted(SDK_CHANGES))
@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_an_sdk_that_cannot_take_a_ready_body_is_called_through_create_with_the_same_request(
        name: str, change: str, monkeypatch: pytest.MonkeyPatch) -> None:
    installed(name)
    make, reply = PROVIDERS[name]
    api = MockAPI(*(sse_response(reply()) for _ in range(3)))
    fast = make(api)
    assert complete(fast, request()).text == "ok"

    with pytest.MonkeyPatch.context() as changed:
        SDK_CHANGES[change](changed, name)
        slow = make(api)
        assert slow._options is None, f"{change}: the adapter should report the fast path unavailable"
        resource = slow._client.chat.completions if name == "openai" else slow._client.messages
        created: list[dict[str, Any]] = []
        real_create = resource.create

        def create(**params: Any) -> Any:
            created.append(params)
            return real_create(**params)

        changed.setattr(resource, "create", create)
        response = complete(slow, request())
    assert response.text == "ok" and response.stop_reason == "end_turn"
    assert created == [slow.request_params(request())]
    assert sent(api, 1) == sent(api, 0), "through `create`, the request differs from the fast path's"
    assert make(api)._options is not None  # the SDK as installed offers the fast path again


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_the_fast_path_does_not_call_create(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    installed(name)
    make, reply = PROVIDERS[name]
    api = MockAPI(sse_response(reply()))
    provider = make(api)
    resource = provider._client.chat.completions if name == "openai" else provider._client.messages

    def create(**params: Any) -> Any:
        raise AssertionError("the fast path went through create")

    monkeypatch.setattr(resource, "create", create)
    assert complete(provider, request()).text == "ok"
