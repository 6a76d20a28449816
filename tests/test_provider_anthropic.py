"""The Anthropic provider over the real SDK client and a mock HTTP transport (Messages SSE)."""

from __future__ import annotations

import json

import httpx2
import pytest
from mock_api import (
    Backoffs,
    ChunkStream,
    MockAPI,
    an_end,
    an_error,
    an_event,
    an_sse,
    an_start,
    an_text,
    an_text_reply,
    an_tool,
    an_tool_reply,
    get_weather,
    sse_response,
)

from agentos.agent.agent import Agent
from agentos.errors import (
    AuthenticationError,
    ContextOverflowError,
    ProviderTimeoutError,
    RateLimitError,
    ServerError,
)
from agentos.events import ToolCallFinished, TurnFailed, TurnFinished
from agentos.messages import Message, ToolCall
from agentos.providers.anthropic_provider import AnthropicProvider, to_anthropic_messages
from agentos.providers.base import ModelRequest, StreamDone, StreamText, StreamToolCall, StreamUsage, complete
from agentos.providers.retry import RetryPolicy
from agentos.tools.decorator import tool

pytestmark = pytest.mark.usefixtures("allow_real_providers")


@tool
def get_time(zone: str) -> str:
    """Get the time.

    Args:
        zone: The time zone.
    """
    return "noon"


def make(api: MockAPI, **kw) -> tuple[AnthropicProvider, Backoffs]:
    sleeps = Backoffs(lambda: len(api.requests))
    retry = RetryPolicy(max_retries=2, base_delay=0.5, jitter=0.0, sleep=sleeps)
    provider = AnthropicProvider(kw.pop("model", "claude-sonnet-4-5"), api_key="sk-ant-secret", base_url="http://mock",
                                 http_client=api.client(), retry=retry, **kw)
    return provider, sleeps


def request(*messages: Message, tools=(get_time, get_weather)) -> ModelRequest:
    return ModelRequest("STATIC", "DYNAMIC", list(messages) or [Message.user("hi")], tools=list(tools))


def test_text_usage_and_the_documented_request_with_cache_breakpoints() -> None:
    body = an_sse(an_start(input_tokens=30, cache_read=2000, cache_write=0), {"type": "ping"},
                  an_text(0, "Hel", "lo"), an_end("end_turn", output_tokens=7))
    api = MockAPI(sse_response(body))
    provider, _ = make(api)
    events = list(provider.stream(request()))
    assert [e.text for e in events if isinstance(e, StreamText)] == ["Hel", "lo"]
    usage = next(e.usage for e in events if isinstance(e, StreamUsage))
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (2030, 7, 2000, 0)
    assert events[-1] == StreamDone("end_turn")
    sent = api.requests[0]
    assert str(sent.url) == "http://mock/v1/messages" and "anthropic-version" in sent.headers
    body = api.body()
    assert body["model"] == "claude-sonnet-4-5" and body["stream"] is True and body["max_tokens"] == 8192
    assert body["system"] == [{"type": "text", "text": "STATIC", "cache_control": {"type": "ephemeral"}},
                              {"type": "text", "text": "DYNAMIC"}]
    assert [t["name"] for t in body["tools"]] == ["get_time", "get_weather"]
    assert "cache_control" not in body["tools"][0]
    assert body["tools"][1] == {**get_weather.anthropic_schema(), "cache_control": {"type": "ephemeral"}}
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]


def test_an_ordinary_turn_keeps_the_cached_prefix_byte_identical() -> None:
    api = MockAPI(sse_response(an_text_reply("a")), sse_response(an_text_reply("b")))
    provider, _ = make(api)
    complete(provider, request(Message.user("one")))
    second = ModelRequest("STATIC", "DYNAMIC changed", [Message.user("one"), Message.assistant("a"), Message.user("two")],
                          tools=[get_time, get_weather])
    complete(provider, second)
    first, later = api.body(0), api.body(1)
    assert first["tools"] == later["tools"] and first["system"][0] == later["system"][0]
    usage_event = an_start(input_tokens=10, cache_read=1500, cache_write=300)
    provider, _ = make(MockAPI(sse_response(an_sse(usage_event, an_text(0, "x"), an_end("end_turn")))))
    usage = complete(provider, request()).usage
    assert (usage.cache_read_tokens, usage.cache_write_tokens, usage.input_tokens) == (1500, 300, 1810)


def test_one_tool_call_from_json_fragments() -> None:
    body = an_sse(an_start(), an_tool(0, "toolu_1", "get_weather", '{"ci', 'ty": "Pa', 'ris"}'), an_end("tool_use"))
    result = complete(make(MockAPI(sse_response(body)))[0], request())
    assert result.tool_calls == [ToolCall(id="toolu_1", name="get_weather", arguments='{"city": "Paris"}')]
    assert result.stop_reason == "tool_use"


def test_interleaved_text_and_several_tool_calls() -> None:
    body = an_sse(an_start(), an_text(0, "Checking both."), an_tool(1, "toolu_a", "get_weather", '{"city": "Oslo"}'),
                  an_tool(2, "toolu_b", "get_time"), an_end("tool_use"))
    events = list(make(MockAPI(sse_response(body)))[0].stream(request()))
    kinds = [type(e).__name__ for e in events]
    assert kinds == ["StreamText", "StreamToolCall", "StreamToolCall", "StreamUsage", "StreamDone"]
    calls = [e.call for e in events if isinstance(e, StreamToolCall)]
    assert [(c.id, c.name, json.loads(c.arguments)) for c in calls] == [
        ("toolu_a", "get_weather", {"city": "Oslo"}), ("toolu_b", "get_time", {})]


def test_malformed_tool_json_is_passed_through_raw() -> None:
    body = an_sse(an_start(), an_tool(0, "toolu_1", "get_weather", '{"city": '), an_end("max_tokens"))
    result = complete(make(MockAPI(sse_response(body)))[0], request())
    assert result.tool_calls[0].arguments == '{"city": ' and result.stop_reason == "max_tokens"


def test_401_names_the_variable_and_is_not_retried() -> None:
    api = MockAPI(an_error(401, "authentication_error", "invalid x-api-key"))
    provider, sleeps = make(api)
    with pytest.raises(AuthenticationError, match="ANTHROPIC_API_KEY") as info:
        list(provider.stream(request()))
    assert "sk-ant-secret" not in str(info.value) and sleeps.waits == []


def test_429_with_retry_after_then_success() -> None:
    api = MockAPI(an_error(429, "rate_limit_error", "Number of requests has exceeded your rate limit",
                           {"retry-after": "3"}), sse_response(an_text_reply("ok")))
    provider, sleeps = make(api)
    assert complete(provider, request()).text == "ok" and sleeps.waits == [3.0]


def test_429_retry_after_longer_than_the_cap_is_raised_at_once() -> None:
    api = MockAPI(an_error(429, "rate_limit_error", "slow down", {"retry-after": "3600"}))
    provider, sleeps = make(api)
    with pytest.raises(RateLimitError) as info:
        list(provider.stream(request()))
    assert info.value.retry_after == 3600 and sleeps.waits == []


def test_overloaded_529_and_500_retried_then_success() -> None:
    api = MockAPI(an_error(529, "overloaded_error", "Overloaded"), an_error(500, "api_error", "Internal"),
                  sse_response(an_text_reply("done")))
    provider, sleeps = make(api)
    assert complete(provider, request()).text == "done" and sleeps.waits == [0.5, 1.0]


def test_5xx_exhausted() -> None:
    api = MockAPI(*[an_error(529, "overloaded_error", "Overloaded")] * 3)
    provider, sleeps = make(api)
    with pytest.raises(ServerError):
        list(provider.stream(request()))
    assert len(api.requests) == 3 and len(sleeps.waits) == 2


def test_error_event_inside_the_stream_before_output_is_retried() -> None:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    api = MockAPI(sse_response(an_sse(an_start(), error)), sse_response(an_text_reply("second try")))
    provider, sleeps = make(api)
    assert complete(provider, request()).text == "second try" and sleeps.waits == [0.5]


def test_context_overflow() -> None:
    api = MockAPI(an_error(400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"))
    provider, sleeps = make(api)
    with pytest.raises(ContextOverflowError):
        list(provider.stream(request()))
    assert sleeps.waits == []


def test_timeouts_before_and_during_the_stream() -> None:
    provider, _ = make(MockAPI(httpx2.ConnectTimeout("connect timed out")))
    with pytest.raises(ProviderTimeoutError):
        list(provider.stream(request()))
    stall = ChunkStream([an_event(an_start()), *[an_event(e) for e in an_text(0, "par")[:2]]], then=httpx2.ReadTimeout("stall"))
    provider, sleeps = make(MockAPI(sse_response(stall)))
    events = provider.stream(request())
    assert next(events) == StreamText("par")
    with pytest.raises(ProviderTimeoutError):
        next(events)
    assert sleeps.waits == []


def test_refusal_and_empty_response() -> None:
    refusal = an_sse(an_start(), an_end("refusal", output_tokens=0))
    result = complete(make(MockAPI(sse_response(refusal)))[0], request())
    assert (result.text, result.tool_calls, result.stop_reason) == ("", [], "refusal")
    empty = an_sse(an_start(), an_end("end_turn", output_tokens=0))
    result = complete(make(MockAPI(sse_response(empty)))[0], request())
    assert (result.text, result.stop_reason) == ("", "end_turn")


def test_translation_merges_roles_drops_empty_replies_and_marks_errors() -> None:
    a = ToolCall(id="call-1.x", name="get_weather", arguments='{"city": "Oslo"}')
    b = ToolCall(id="toolu_2", name="get_time", arguments="{not json")
    messages = [
        Message.assistant("earlier reply"), Message.user("hi"), Message.assistant(""), Message.user("again"),
        Message.assistant("", [a, b]), Message.tool_result(a, "sunny"), Message.tool_result(b, "Error: bad", is_error=True),
        Message.system("Memory pressure: 80%"), Message.user("thanks"),
    ]
    out = to_anthropic_messages(messages)
    assert [m["role"] for m in out] == ["user", "assistant", "user", "assistant", "user"]
    assert out[2]["content"] == [{"type": "text", "text": "hi"}, {"type": "text", "text": "again"}]
    assert out[3]["content"] == [
        {"type": "tool_use", "id": "call-1_x", "name": "get_weather", "input": {"city": "Oslo"}},
        {"type": "tool_use", "id": "toolu_2", "name": "get_time", "input": {}}]
    assert out[4]["content"] == [
        {"type": "tool_result", "tool_use_id": "call-1_x", "content": "sunny", "is_error": False},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "Error: bad", "is_error": True},
        {"type": "text", "text": "[system] Memory pressure: 80%"}, {"type": "text", "text": "thanks"}]


def test_closing_the_stream_closes_the_http_response() -> None:
    start = b"".join(an_event(e) for e in [an_start(), an_text(0)[0]])
    body = ChunkStream([start], forever=an_event({"type": "content_block_delta", "index": 0,
                                                  "delta": {"type": "text_delta", "text": "x"}}))
    events = make(MockAPI(sse_response(body)))[0].stream(request())
    for _ in range(3):
        next(events)
    events.close()
    assert body.closed


def test_agent_turn_edits_core_memory_end_to_end() -> None:
    api = MockAPI(sse_response(an_tool_reply("toolu_1", "core_memory_append", '{"label": "human", "content": "Likes tea."}')),
                  sse_response(an_text_reply("Noted.")))
    provider, _ = make(api)
    agent = Agent.create("an", provider=provider)
    events = list(agent.turn("I like tea"))
    assert isinstance(events[-1], TurnFinished) and events[-1].reply.content == "Noted."
    assert "Likes tea." in agent.block("human").value
    second = api.body(1)
    assert second["messages"][-2]["content"][0]["type"] == "tool_use"
    result = second["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_1" and result["is_error"] is False
    assert "Likes tea." in second["system"][1]["text"]
    assert second["system"][0] == api.body(0)["system"][0]  # the static prefix stays cacheable


def test_agent_survives_malformed_json_refusal_and_empty_reply() -> None:
    api = MockAPI(sse_response(an_tool_reply("toolu_1", "core_memory_append", '{"label": ')),
                  sse_response(an_sse(an_start(), an_end("refusal", 0))),
                  sse_response(an_text_reply("Hello again.")))
    provider, _ = make(api)
    agent = Agent.create("an2", provider=provider)
    events = list(agent.turn("remember"))
    finished = next(e for e in events if isinstance(e, ToolCallFinished))
    assert finished.is_error and "not valid JSON" in finished.result
    assert isinstance(events[-1], TurnFinished) and events[-1].reply.content == ""
    events = list(agent.turn("hello?"))
    assert not any(isinstance(e, TurnFailed) for e in events)
    messages = api.body(2)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"] == [{"type": "tool_use", "id": "toolu_1", "name": "core_memory_append", "input": {}}]
    assert messages[2]["content"][0]["is_error"] is True and messages[2]["content"][-1]["text"] == "hello?"


def test_spend_limit_429_is_not_retried() -> None:
    body = {"type": "error", "error": {"type": "rate_limit_error", "message": "Spend limit reached",
                                       "details": {"error_code": "enforced_spend_limit_reached"}}}
    api = MockAPI(httpx2.Response(429, json=body))
    provider, sleeps = make(api)
    with pytest.raises(Exception) as info:
        list(provider.stream(request()))
    assert not isinstance(info.value, RateLimitError) and "billing" in str(info.value) and sleeps.waits == []


def test_overloaded_with_retry_after_waits_as_told() -> None:
    api = MockAPI(an_error(529, "overloaded_error", "Overloaded", {"retry-after": "4"}), sse_response(an_text_reply("ok")))
    provider, sleeps = make(api)
    assert complete(provider, request()).text == "ok" and sleeps.waits == [4.0]
