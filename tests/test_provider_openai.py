"""The OpenAI provider over the real SDK client and a mock HTTP transport (Chat Completions SSE)."""

from __future__ import annotations

import json

import httpx2
import pytest
from mock_api import (
    Backoffs,
    ChunkStream,
    MockAPI,
    get_weather,
    oa_delta,
    oa_error,
    oa_event,
    oa_sse,
    oa_text_reply,
    oa_tool,
    oa_tool_reply,
    oa_usage,
    sse_response,
)

from agentos.agent.agent import Agent
from agentos.errors import (
    AuthenticationError,
    ContextOverflowError,
    ProviderError,
    ProviderTimeoutError,
    RateLimitError,
    ServerError,
)
from agentos.events import ToolCallFinished, TurnFailed, TurnFinished
from agentos.messages import Message, ToolCall
from agentos.providers.base import ModelRequest, StreamDone, StreamText, StreamToolCall, StreamUsage, complete
from agentos.providers.openai_provider import OpenAIProvider, to_openai_messages
from agentos.providers.retry import RetryPolicy

pytestmark = pytest.mark.usefixtures("allow_real_providers")


def make(api: MockAPI, *, family: str = "openai", model: str = "gpt-4.1-mini", **kw) -> tuple[OpenAIProvider, Backoffs]:
    sleeps = Backoffs(lambda: len(api.requests))
    retry = RetryPolicy(max_retries=2, base_delay=1.0, jitter=0.0, sleep=sleeps)
    provider = OpenAIProvider(model, family=family, api_key=kw.pop("api_key", "sk-test-secret"),
                              base_url=kw.pop("base_url", "http://mock/v1"),
                              http_client=api.client(), retry=retry, **kw)
    return provider, sleeps


def request(*messages: Message, tools=(get_weather,)) -> ModelRequest:
    return ModelRequest("STATIC", "DYNAMIC", list(messages) or [Message.user("hi")], tools=list(tools))


def test_text_streams_in_pieces_with_usage_and_the_documented_request() -> None:
    api = MockAPI(sse_response(oa_sse(oa_delta({"role": "assistant", "content": ""}), oa_delta({"content": "Hel"}),
                                      oa_delta({"content": "lo"}), oa_delta({}, "stop"), oa_usage(120, 2, cached=100))))
    provider, _ = make(api)
    events = list(provider.stream(request(Message.user("hi"))))
    assert [e.text for e in events if isinstance(e, StreamText)] == ["Hel", "lo"]
    usage = next(e.usage for e in events if isinstance(e, StreamUsage))
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == (120, 2, 100)
    assert events[-1] == StreamDone("end_turn")
    sent = api.requests[0]
    assert str(sent.url) == "http://mock/v1/chat/completions"
    assert sent.headers["authorization"] == "Bearer sk-test-secret"
    body = api.body()
    assert body["model"] == "gpt-4.1-mini" and body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"] == [{"role": "system", "content": "STATIC\n\nDYNAMIC"}, {"role": "user", "content": "hi"}]
    assert body["tools"] == [get_weather.openai_schema()]


def test_one_tool_call_is_assembled_from_fragments() -> None:
    body = oa_sse(oa_delta({"role": "assistant", "tool_calls": [oa_tool(0, id="call_1", name="get_weather")]}),
                  oa_delta({"tool_calls": [oa_tool(0, args='{"ci')]}), oa_delta({"tool_calls": [oa_tool(0, args='ty": ')]}),
                  oa_delta({"tool_calls": [oa_tool(0, args='"Paris"}')]}), oa_delta({}, "tool_calls"), oa_usage(10, 5))
    provider, _ = make(MockAPI(sse_response(body)))
    result = complete(provider, request())
    assert result.tool_calls == [ToolCall(id="call_1", name="get_weather", arguments='{"city": "Paris"}')]
    assert result.stop_reason == "tool_use" and result.text == ""


def test_several_tool_calls_interleaved_by_index_and_with_text() -> None:
    body = oa_sse(
        oa_delta({"role": "assistant", "content": "Let me check "}),
        oa_delta({"tool_calls": [oa_tool(0, id="call_a", name="get_weather", args='{"city"')]}),
        oa_delta({"tool_calls": [oa_tool(1, id="call_b", name="get_weather", args='{"city": ')]}),
        oa_delta({"content": "both."}),
        oa_delta({"tool_calls": [oa_tool(0, args=': "Oslo"}')]}),
        oa_delta({"tool_calls": [oa_tool(1, args='"Rome"}')]}),
        oa_delta({}, "tool_calls"), oa_usage(10, 5))
    events = list(make(MockAPI(sse_response(body)))[0].stream(request()))
    assert "".join(e.text for e in events if isinstance(e, StreamText)) == "Let me check both."
    calls = [e.call for e in events if isinstance(e, StreamToolCall)]
    assert [(c.id, json.loads(c.arguments)) for c in calls] == [("call_a", {"city": "Oslo"}), ("call_b", {"city": "Rome"})]
    assert events[-1].stop_reason == "tool_use"


def test_compatible_server_quirks_no_index_whole_call_and_stop_reason_stop() -> None:
    """Ollama-style: each call whole in one fragment, no index, finish_reason "stop", no usage, no [DONE]."""
    body = oa_sse(oa_delta({"role": "assistant", "tool_calls": [
        oa_tool(None, id="call_x", name="get_weather", args='{"city": "Lima"}'),
        oa_tool(None, id="call_y", name="get_weather", args='{"city": "Quito"}')]}), oa_delta({}, "stop"), done=False)
    api = MockAPI(sse_response(body))
    provider, _ = make(api, family="ollama", model="llama3.1", base_url=None, api_key=None)
    result = complete(provider, request())
    assert [c.id for c in result.tool_calls] == ["call_x", "call_y"] and result.stop_reason == "tool_use"
    assert str(api.requests[0].url) == "http://localhost:11434/v1/chat/completions"
    assert "max_completion_tokens" not in api.body()


def test_malformed_tool_json_is_passed_through_raw() -> None:
    provider, _ = make(MockAPI(sse_response(oa_tool_reply("call_1", "get_weather", '{"city": "Par'))))
    assert complete(provider, request()).tool_calls[0].arguments == '{"city": "Par'


def test_401_is_an_authentication_error_naming_the_variable_and_not_retried() -> None:
    api = MockAPI(oa_error(401, "Incorrect API key provided", "invalid_request_error", "invalid_api_key"))
    provider, sleeps = make(api)
    with pytest.raises(AuthenticationError, match="OPENAI_API_KEY") as info:
        list(provider.stream(request()))
    assert "sk-test-secret" not in str(info.value)
    assert len(api.requests) == 1 and sleeps.waits == []


def test_429_honours_retry_after_then_succeeds() -> None:
    api = MockAPI(oa_error(429, "Rate limit reached", "requests", "rate_limit_exceeded", {"retry-after": "7"}),
                  sse_response(oa_text_reply("ok")))
    provider, sleeps = make(api)
    assert complete(provider, request()).text == "ok"
    assert sleeps.waits == [7.0] and len(api.requests) == 2


def test_429_with_retry_after_ms_and_exhausted_rate_limit() -> None:
    api = MockAPI(*[oa_error(429, "slow", "requests", "rate_limit_exceeded", {"retry-after-ms": "250"})] * 3)
    provider, sleeps = make(api)
    with pytest.raises(RateLimitError) as info:
        list(provider.stream(request()))
    assert info.value.retry_after == 0.25 and sleeps.waits == [0.25, 0.25] and len(api.requests) == 3


def test_insufficient_quota_is_not_retried() -> None:
    api = MockAPI(oa_error(429, "You exceeded your current quota", "insufficient_quota", "insufficient_quota"))
    provider, sleeps = make(api)
    with pytest.raises(ProviderError, match="quota") as info:
        list(provider.stream(request()))
    assert not isinstance(info.value, RateLimitError) and sleeps.waits == []


def test_5xx_is_retried_with_backoff_then_succeeds() -> None:
    api = MockAPI(oa_error(500, "boom", "server_error"), oa_error(503, "busy", "server_error"),
                  sse_response(oa_text_reply("fine")))
    provider, sleeps = make(api)
    assert complete(provider, request()).text == "fine"
    assert sleeps.waits == [1.0, 2.0]


def test_5xx_exhausted_raises_server_error() -> None:
    api = MockAPI(*[oa_error(502, "bad gateway", "server_error")] * 3)
    provider, sleeps = make(api)
    with pytest.raises(ServerError):
        list(provider.stream(request()))
    assert len(api.requests) == 3 and sleeps.waits == [1.0, 2.0]


@pytest.mark.parametrize("reply", [
    oa_error(400, "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 "
                  "tokens.", "invalid_request_error", "context_length_exceeded"),
    oa_error(400, "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens",
             "BadRequestError", None),  # vLLM
    oa_error(400, "the request exceeds the available context size, try increasing it", "exceed_context_size_error"),
])
def test_context_overflow(reply: httpx2.Response) -> None:
    api = MockAPI(reply)
    provider, sleeps = make(api)
    with pytest.raises(ContextOverflowError):
        list(provider.stream(request()))
    assert sleeps.waits == []


def test_timeout_is_a_provider_timeout() -> None:
    api = MockAPI(httpx2.ReadTimeout("timed out"))
    provider, _ = make(api)
    with pytest.raises(ProviderTimeoutError):
        list(provider.stream(request()))


def test_stall_mid_stream_is_a_timeout() -> None:
    stream = ChunkStream([oa_event(oa_delta({"content": "partial"}))], then=httpx2.ReadTimeout("stalled"))
    provider, sleeps = make(MockAPI(sse_response(stream)))
    events = provider.stream(request())
    assert next(events) == StreamText("partial")
    with pytest.raises(ProviderTimeoutError):
        next(events)
    assert sleeps.waits == []


def test_unreachable_local_server_says_how_to_start_it() -> None:
    api = MockAPI(*[httpx2.ConnectError("connection refused")] * 3)
    provider, sleeps = make(api, family="ollama", model="llama3.1", base_url=None, api_key=None)
    with pytest.raises(ServerError, match="ollama serve"):
        list(provider.stream(request()))
    assert len(sleeps.waits) == 2


def test_error_event_before_output_is_retried_but_not_after_output() -> None:
    error = b'data: {"error": {"message": "The server had an error", "type": "server_error", "code": null}}\n\n'
    api = MockAPI(sse_response(error), sse_response(oa_text_reply("again")))
    provider, sleeps = make(api)
    assert complete(provider, request()).text == "again" and sleeps.waits == [1.0]
    late = oa_event(oa_delta({"content": "half"})) + error
    api = MockAPI(sse_response(late))
    provider, sleeps = make(api)
    with pytest.raises(ServerError):
        list(provider.stream(request()))
    assert len(api.requests) == 1 and sleeps.waits == []


def test_refusal_and_content_filter() -> None:
    refusal = oa_sse(oa_delta({"role": "assistant", "refusal": "I can't help with that."}), oa_delta({}, "stop"))
    result = complete(make(MockAPI(sse_response(refusal)))[0], request())
    assert (result.text, result.stop_reason) == ("I can't help with that.", "refusal")
    filtered = oa_sse(oa_delta({"role": "assistant", "content": ""}), oa_delta({}, "content_filter"))
    assert complete(make(MockAPI(sse_response(filtered)))[0], request()).stop_reason == "refusal"
    cut = oa_sse(oa_delta({"content": "and so"}), oa_delta({}, "length"))
    assert complete(make(MockAPI(sse_response(cut)))[0], request()).stop_reason == "max_tokens"


def test_empty_response_is_an_empty_end_turn() -> None:
    result = complete(make(MockAPI(sse_response(oa_sse(oa_delta({}, "stop")))))[0], request())
    assert (result.text, result.tool_calls, result.stop_reason) == ("", [], "end_turn")


def test_translation_skips_empty_replies_and_joins_user_messages() -> None:
    call = ToolCall(id="call_1", name="get_weather", arguments='{"city": "Oslo"}')
    messages = [Message.user("a"), Message.assistant(""), Message.user("b"), Message.assistant("", [call]),
                Message.tool_result(call, "", is_error=False)]
    out = to_openai_messages(request(*messages))
    assert [m["role"] for m in out] == ["system", "user", "assistant", "tool"]
    assert out[1]["content"] == "a\n\nb"
    assert out[2] == {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}]}
    assert out[3] == {"role": "tool", "tool_call_id": "call_1", "content": "(no output)"}


def test_max_output_tokens_parameter_name() -> None:
    api = MockAPI(sse_response(oa_text_reply("x")), sse_response(oa_text_reply("y")))
    provider, _ = make(api)
    req = request()
    req.max_output_tokens = 99
    complete(provider, req)
    assert api.body()["max_completion_tokens"] == 99
    compat, _ = make(api, family="vllm", model="Qwen/Qwen2.5-7B-Instruct")
    complete(compat, req)
    assert api.body()["max_tokens"] == 99


def test_closing_the_stream_closes_the_http_response() -> None:
    body = ChunkStream([], forever=oa_event(oa_delta({"content": "x"})))
    provider, _ = make(MockAPI(sse_response(body)))
    events = provider.stream(request())
    for _ in range(3):
        next(events)
    events.close()  # what closing the turn generator (Ctrl-C in the REPL) does
    assert body.closed


def test_agent_turn_edits_core_memory_end_to_end() -> None:
    api = MockAPI(sse_response(oa_tool_reply("call_1", "core_memory_append",
                                             '{"label": "human", "content": "Likes tea."}')),
                  sse_response(oa_text_reply("Noted: you like tea.")))
    provider, _ = make(api)
    agent = Agent.create("oa", provider=provider)
    events = list(agent.turn("I like tea"))
    assert isinstance(events[-1], TurnFinished) and events[-1].reply.content == "Noted: you like tea."
    assert "Likes tea." in agent.block("human").value
    second = api.body(1)["messages"]
    assert second[-2]["tool_calls"][0]["function"]["name"] == "core_memory_append"
    assert second[-1]["role"] == "tool" and second[-1]["tool_call_id"] == "call_1"
    assert "Likes tea." in second[0]["content"]  # the system prompt shows the edited block


def test_agent_survives_malformed_tool_json_and_an_empty_reply() -> None:
    api = MockAPI(sse_response(oa_tool_reply("call_1", "core_memory_append", '{"label": "human", "content": ')),
                  sse_response(oa_sse(oa_delta({}, "stop"))),
                  sse_response(oa_text_reply("Still here.")))
    provider, _ = make(api)
    agent = Agent.create("oa2", provider=provider)
    events = list(agent.turn("remember me"))
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert finished[0].is_error and "not valid JSON" in finished[0].result
    assert isinstance(events[-1], TurnFinished) and events[-1].reply.content == ""
    events = list(agent.turn("hello?"))
    assert not any(isinstance(e, TurnFailed) for e in events)
    roles = [m["role"] for m in api.body(2)["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "user"]  # the empty reply is not sent


def test_provider_failure_ends_the_turn_cleanly() -> None:
    api = MockAPI(oa_error(401, "bad key", "invalid_request_error", "invalid_api_key"))
    provider, _ = make(api)
    agent = Agent.create("oa3", provider=provider)
    events = list(agent.turn("hi"))
    assert isinstance(events[-1], TurnFailed) and events[-1].kind == "AuthenticationError"


def test_closing_the_turn_closes_the_http_response_and_keeps_the_agent_consistent() -> None:
    body = ChunkStream([], forever=oa_event(oa_delta({"content": "x"})))
    api = MockAPI(sse_response(body), sse_response(oa_text_reply("after")))
    provider, _ = make(api)
    agent = Agent.create("oa4", provider=provider)
    turn = agent.turn("talk forever")
    for _ in range(3):
        next(turn)
    turn.close()  # Ctrl-C in the REPL
    assert body.closed
    events = list(agent.turn("again"))
    assert isinstance(events[-1], TurnFinished) and events[-1].reply.content == "after"


def test_usage_only_chunk_with_null_choices() -> None:
    """vLLM ends with a usage chunk whose `choices` is null."""
    body = oa_sse(oa_delta({"content": "ok"}), oa_delta({}, "stop"),
                  {"choices": None, "usage": {"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10}})
    result = complete(make(MockAPI(sse_response(body)), family="vllm", model="m")[0], request())
    assert (result.text, result.usage.input_tokens, result.usage.cache_read_tokens) == ("ok", 9, 0)


def test_a_garbled_stream_is_a_provider_error() -> None:
    provider, sleeps = make(MockAPI(sse_response(b"data: {not json\n\n")), family="llamacpp", model="m")
    with pytest.raises(ProviderError, match="cannot read"):
        list(provider.stream(request()))


def test_a_server_reusing_index_zero_for_each_call() -> None:
    body = oa_sse(oa_delta({"tool_calls": [oa_tool(0, id="call_a", name="get_weather", args='{"city": ')]}),
                  oa_delta({"tool_calls": [oa_tool(0, args='"Oslo"}')]}),
                  oa_delta({"tool_calls": [oa_tool(0, id="call_b", name="get_time", args='{"zone": ')]}),
                  oa_delta({"tool_calls": [oa_tool(0, args='"UTC"}')]}), oa_delta({}, "tool_calls"))
    calls = complete(make(MockAPI(sse_response(body)))[0], request()).tool_calls
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("call_a", "get_weather", '{"city": "Oslo"}'), ("call_b", "get_time", '{"zone": "UTC"}')]
