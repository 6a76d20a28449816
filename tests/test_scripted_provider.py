"""The scripted provider: steps, functions, recording, failures."""

from __future__ import annotations

import pytest

from agentos.errors import ScriptExhaustedError, ServerError
from agentos.messages import Message
from agentos.providers import (
    ModelRequest,
    ScriptedProvider,
    Step,
    StreamDone,
    StreamText,
    StreamToolCall,
    StreamUsage,
    complete,
)


def request(text: str = "hi") -> ModelRequest:
    return ModelRequest(system_static="static", system_dynamic="dynamic", messages=[Message.user(text)])


def test_steps_are_played_in_order_and_requests_recorded() -> None:
    provider = ScriptedProvider(["one", Step("two", tool_calls=[("f", {"x": 1})])])
    first = complete(provider, request("a"))
    second = complete(provider, request("b"))
    assert (first.text, first.tool_calls, first.stop_reason) == ("one", [], "end_turn")
    assert second.text == "two" and second.stop_reason == "tool_use"
    assert (second.tool_calls[0].name, second.tool_calls[0].arguments) == ("f", '{"x": 1}')
    assert [r.messages[0].content for r in provider.requests] == ["a", "b"]
    assert provider.remaining == 0


def test_a_function_script_sees_the_request() -> None:
    provider = ScriptedProvider(lambda req: f"you said {req.messages[-1].content}")
    assert complete(provider, request("ping")).text == "you said ping"


def test_running_out_of_steps_is_a_clear_error() -> None:
    provider = ScriptedProvider(["only"])
    complete(provider, request())
    with pytest.raises(ScriptExhaustedError, match="ran out of steps: it was called 2 times but its script has 1 steps"):
        complete(provider, request())


def test_exception_steps_are_raised() -> None:
    provider = ScriptedProvider([ServerError("down")])
    with pytest.raises(ServerError, match="down"):
        complete(provider, request())


def test_stream_event_order_and_usage() -> None:
    provider = ScriptedProvider([Step("hello world", tool_calls=[("f", "{}")])], chunk_size=5)
    events = list(provider.stream(request()))
    kinds = [type(e) for e in events]
    assert kinds == [StreamText, StreamText, StreamText, StreamToolCall, StreamUsage, StreamDone]
    assert "".join(e.text for e in events if isinstance(e, StreamText)) == "hello world"
    assert events[4].usage.input_tokens > 0


def test_real_providers_are_blocked_in_tests() -> None:
    from agentos.errors import RealProviderBlockedError
    from agentos.providers.base import ensure_real_provider_allowed

    with pytest.raises(RealProviderBlockedError, match="inside the test suite"):
        ensure_real_provider_allowed("openai")


def test_opting_in_allows_real_providers(allow_real_providers: None) -> None:
    from agentos.providers.base import ensure_real_provider_allowed

    ensure_real_provider_allowed("openai")
