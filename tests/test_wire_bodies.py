"""The ready-made request body is what the SDK itself would have sent, byte for byte, headers included."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from mock_api import MockAPI, an_text_reply, get_weather, oa_text_reply, sse_response

from agentos.agent.prompts import SUMMARY_ID
from agentos.messages import Message, ToolCall
from agentos.providers.anthropic_provider import AnthropicProvider
from agentos.providers.base import ModelRequest, complete
from agentos.providers.openai_provider import OpenAIProvider
from agentos.providers.wire import dumps
from agentos.tools import tool

pytestmark = pytest.mark.usefixtures("allow_real_providers")


@tool
def remember_place(place: str, note: str = "") -> str:
    """Remember a place.

    Args:
        place: Where, in any script (東京, Zürich).
        note: Anything else.
    """
    return place


def conversation() -> list[Message]:
    """Tool calls (one with malformed arguments and an id Anthropic would reject), a tool error, an empty
    reply, joined user turns, a system note, and text beyond ASCII: accents, CJK, emoji, quotes, controls."""
    first = ToolCall(id="call_1", name="get_weather", arguments='{"city": "Zürich"}')
    second = ToolCall(id="call.2/x", name="remember_place", arguments='{"place": "東京"')  # cut off by the model
    return [
        Message(id=SUMMARY_ID, role="user", content="Summary: Ada asked about the weather 🌦"),
        Message.user("Wie ist das Wetter in Zürich? Und merk dir 東京."),
        Message.assistant("Let me check \u2014 one moment.", [first, second]),
        Message.tool_result(first, '{"temp": 21, "sky": "sonnig \\u2600"}'),
        Message.tool_result(second, "arguments are not valid JSON: Expecting ',' delimiter", is_error=True),
        Message.assistant(""),  # an empty reply
        Message.user('She said "hi"\ttab\nnew line \\ backslash \x01 control'),
        Message.user("and a second message right after 😀"),
        Message.system("[memory pressure] 80% of the window is in use"),
        Message.assistant("Noted: 东京 and Zürich. \U0001f5fa"),
        Message.user(""),
    ]


def make_request(messages: list[Message]) -> ModelRequest:
    return ModelRequest("You are a helpful agent. Ünïcödé instructions.", "<memory_blocks>\nName: Åsa 😀\n</memory_blocks>",
                        messages, tools=[get_weather, remember_place], max_output_tokens=700)


def sent(api: MockAPI, index: int) -> tuple[str, str, dict[str, str], bytes]:
    request = api.requests[index]
    return request.method, str(request.url), dict(request.headers), request.content


def sdk_then_ready_body(provider: Any, api: MockAPI, sdk_create: Any, request: ModelRequest) -> None:
    """Send `request` once through the SDK's own create, once through the provider; both must be equal."""
    with sdk_create(**provider.request_params(request)) as stream:
        list(stream)
    complete(provider, request)
    assert sent(api, -1) == sent(api, -2)


@pytest.mark.parametrize("family", ["openai", "openai-compatible"])
def test_openai_body_and_headers_are_what_the_sdk_sends(family: str) -> None:
    api = MockAPI(*(sse_response(oa_text_reply("ok")) for _ in range(6)))
    provider = OpenAIProvider("gpt-4.1-mini", family=family, api_key="sk-test", base_url="http://mock/v1",
                              http_client=api.client())
    create = provider._client.chat.completions.create
    messages = conversation()
    sdk_then_ready_body(provider, api, create, make_request(messages))
    assert json.loads(api.requests[-1].content)["messages"][2]["tool_calls"][1]["function"]["arguments"] == '{"place": "東京"'
    assert "東京".encode() in api.requests[-1].content  # UTF-8 on the wire, not \\u escapes, as the SDK sends it

    # Later calls reuse each message's encoding; the pager's truncated copy is encoded anew.
    truncated = messages[3].model_copy(update={"content": '{"temp": 21} [truncated]'})
    later = messages[:3] + [truncated] + messages[4:] + [Message.assistant("Zürich: 21 °C")]
    sdk_then_ready_body(provider, api, create, make_request(later))
    assert b"[truncated]" in api.requests[-1].content and b'"sky"' not in api.requests[-1].content


def test_anthropic_body_and_headers_are_what_the_sdk_sends() -> None:
    api = MockAPI(*(sse_response(an_text_reply("ok")) for _ in range(4)))
    provider = AnthropicProvider("claude-sonnet-4-5", api_key="sk-ant-test", base_url="http://mock", http_client=api.client())
    create = provider._client.messages.create
    messages = conversation()
    sdk_then_ready_body(provider, api, create, make_request(messages))
    body = json.loads(api.requests[-1].content)
    tool_turn = body["messages"][2]["content"]
    # the empty reply is dropped, so the results, the two user messages and the note share one user turn
    assert [b["type"] for b in tool_turn] == ["tool_result", "tool_result", "text", "text", "text"]
    assert tool_turn[1]["is_error"] is True and tool_turn[1]["tool_use_id"] == "call_2_x"

    truncated = messages[1].model_copy(update={"content": "Wie ist das Wetter? [truncated]"})
    later = [messages[0], truncated] + messages[2:] + [Message.assistant("Zürich: 21 °C")]
    sdk_then_ready_body(provider, api, create, make_request(later))
    assert b"[truncated]" in api.requests[-1].content and "Zürich? Und".encode() not in api.requests[-1].content


def test_an_sdk_that_cannot_post_a_ready_body_gets_the_same_request_through_create() -> None:
    api = MockAPI(*(sse_response(oa_text_reply("ok")) for _ in range(2)))
    provider = OpenAIProvider("gpt-4.1-mini", api_key="sk-test", base_url="http://mock/v1", http_client=api.client())
    request = make_request(conversation())
    complete(provider, request)
    provider._options = None  # what `ready_body_options` answers for such an SDK
    complete(provider, request)
    assert sent(api, 0) == sent(api, 1)


def test_one_message_in_two_wire_forms_keeps_each_right() -> None:
    """The same message objects sent to OpenAI and then to a compatible server (null vs empty content)."""
    api = MockAPI(*(sse_response(oa_text_reply("ok")) for _ in range(2)))
    reply = Message.assistant("", [ToolCall(id="c1", name="get_weather", arguments="{}")])
    messages = [Message.user("hi"), reply, Message.tool_result(reply.tool_calls[0], "sunny")]
    for family in ("openai", "openai-compatible"):
        provider = OpenAIProvider("m", family=family, api_key="k", base_url="http://mock/v1", http_client=api.client())
        complete(provider, make_request(messages))
    content = [json.loads(r.content)["messages"][2]["content"] for r in api.requests]
    assert content == [None, ""]


def random_message(rng: random.Random, n: int) -> Message:
    kind = rng.choice(["user", "user", "assistant", "empty", "calls", "tool", "error", "system"])
    text = rng.choice(["hi", "Zürich 東京 😀", 'quote " and \\ slash', "  ", "line\nbreak"]) + f" {n}"
    if kind == "empty":
        return Message.assistant("")
    if kind == "calls":
        return Message.assistant(rng.choice(["", "checking"]), [ToolCall(id=f"c{n}", name="get_weather",
                                                                          arguments=rng.choice(['{"city": "Oslo"}', "{bad"]))])
    if kind in ("tool", "error"):
        return Message(role="tool", content=text, tool_call_id=f"c{n - 1}", name="get_weather", is_error=kind == "error")
    return Message(role=kind, content=text)


@pytest.mark.parametrize("seed", range(3))
def test_bodies_built_from_kept_encodings_equal_fresh_ones_as_the_context_changes(seed: int) -> None:
    """Appends (joining user runs and turns), evictions from the front, truncated copies and a changing summary:
    after each, the body from kept encodings is exactly the JSON of the request's parameters made afresh."""
    rng = random.Random(seed)
    providers = [OpenAIProvider("m", family="openai", api_key="k", base_url="http://mock/v1"),
                 OpenAIProvider("m", family="openai-compatible", api_key="k", base_url="http://mock/v1"),
                 AnthropicProvider("claude-sonnet-4-5", api_key="k", base_url="http://mock")]
    context: list[Message] = []
    summary = ""
    for n in range(150):
        change = rng.random()
        if change < 0.08 and len(context) > 4:
            context = context[rng.randint(1, len(context) - 2):]  # evicted from the front
            summary = f"summary after {n} 📝"
        elif change < 0.14 and context:
            i = rng.randrange(len(context))
            context[i] = context[i].model_copy(update={"content": context[i].content[:3] + " [truncated]"})
        else:
            context.extend(random_message(rng, n) for _ in range(rng.randint(1, 3)))
        head = [Message(id=SUMMARY_ID, role="user", content=summary)] if summary else []
        request = make_request(head + context)
        for provider in providers:
            assert provider.request_body(request) == dumps(provider.request_params(request)), (seed, n, provider)
