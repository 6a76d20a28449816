"""A reply cut at the output limit, a refusal, or a stream that ends without saying it finished is
reported as such: an event, the turn's stop reason, and a notice in the CLI and the TUI. A stream cut
before its end, or a response with no events, is an error (retried when nothing had arrived)."""

from __future__ import annotations

import io

import httpx2
from mock_api import Backoffs, MockAPI, an_sse, an_start, an_text, an_text_reply, oa_delta, oa_sse, oa_text_reply, sse_response

from agentos import Agent
from agentos.chat import Repl
from agentos.events import ReplyIncomplete, TurnFailed, TurnFinished
from agentos.providers import ScriptedProvider, Step
from agentos.providers.anthropic_provider import AnthropicProvider
from agentos.providers.openai_provider import OpenAIProvider
from agentos.providers.retry import RetryPolicy
from tests.helpers import of_type, typed, types


def test_a_reply_cut_at_max_tokens_is_reported_and_kept() -> None:
    agent = Agent.create("sam", provider=ScriptedProvider([Step("The answer is", stop_reason="max_tokens")]))
    events = list(agent.turn("tell me everything"))
    assert types(events)[-4:] == ["usage", "reply_incomplete", "step_saved", "turn_finished"]
    cut = of_type(events, "reply_incomplete")[0]
    assert isinstance(cut, ReplyIncomplete) and cut.reason == "max_tokens"
    assert cut.detail == "the reply was cut off: the model reached its output limit (max_tokens)"
    finished = events[-1]
    assert isinstance(finished, TurnFinished) and finished.stop_reason == "max_tokens"
    assert finished.reply.content == "The answer is"  # what arrived is kept, not passed off as complete


def test_a_complete_reply_has_no_notice() -> None:
    events = list(Agent.create("sam", provider=ScriptedProvider(["All done."])).turn("hi"))
    assert not of_type(events, "reply_incomplete") and events[-1].stop_reason == "end_turn"  # type: ignore[union-attr]


def openai_agent(api: MockAPI, sleeps: Backoffs | None = None, name: str = "oa") -> Agent:
    retry = RetryPolicy(max_retries=2, base_delay=1.0, jitter=0.0, sleep=sleeps or Backoffs(lambda: len(api.requests)))
    provider = OpenAIProvider("gpt-4.1-mini", api_key="sk-test", base_url="http://mock/v1", http_client=api.client(),
                              retry=retry)
    return Agent.create(name, provider=provider)


def test_an_openai_stream_cut_mid_reply_is_an_error_not_a_reply(allow_real_providers: None) -> None:
    cut = oa_sse(oa_delta({"role": "assistant", "content": "Half a"}), oa_delta({"content": " sentence"}), done=False)
    agent = openai_agent(MockAPI(sse_response(cut)))
    events = list(agent.turn("hi"))
    failed = events[-1]
    assert isinstance(failed, TurnFailed) and failed.kind == "IncompleteStreamError"
    assert failed.error == ("OpenAI at http://mock/v1 stopped mid-reply: the stream ended before the reply was "
                            "finished (the connection was probably cut). Try again.")
    [cut_off] = [e for e in events if e.type == "reply_incomplete"]
    assert cut_off.reason == "disconnected"  # said once, by the failure: the notice does not repeat the error
    assert "stopped mid-reply" not in cut_off.detail and "kept" in cut_off.detail  # type: ignore[attr-defined]
    # the question and the half reply are kept, the half reply marked as such: it never passes for a whole one
    assert [m.content for m in agent.state.context] == [
        "hi", "Half a sentence\n[cut off: the connection was lost before this reply ended]"]


def test_a_200_with_no_events_is_retried_then_an_error(allow_real_providers: None) -> None:
    error_page = httpx2.Response(200, json={"error": {"message": "upstream failed"}})
    api = MockAPI(error_page, sse_response(b""), sse_response(oa_text_reply("Hello.")))
    sleeps = Backoffs(lambda: len(api.requests))
    events = list(openai_agent(api, sleeps).turn("hi"))
    assert events[-1].type == "turn_finished" and events[-1].reply.content == "Hello."  # type: ignore[union-attr]
    assert sleeps.waits == [1.0, 2.0]  # two empty answers, retried with backoff
    assert [(e.reason, e.attempt) for e in of_type(events, "retrying") if e.remaining == e.wait] == [  # type: ignore[attr-defined]
        ("the server sent no reply", 1), ("the server sent no reply", 2)]
    agent = openai_agent(MockAPI(*(sse_response(b"") for _ in range(3))), name="oa2")
    failed = list(agent.turn("hi"))[-1]
    assert isinstance(failed, TurnFailed) and failed.error == (
        "OpenAI at http://mock/v1 sent no reply: the response ended without a single event (an error page, a proxy, "
        "or a server that does not stream). Check the server and its address.")


def test_a_stream_that_ends_properly_but_without_a_finish_reason_is_incomplete(allow_real_providers: None) -> None:
    ended = oa_sse(oa_delta({"role": "assistant", "content": "Half a"}), oa_delta({"content": " sentence"}), done=True)
    events = list(openai_agent(MockAPI(sse_response(ended))).turn("hi"))
    assert [e.reason for e in of_type(events, "reply_incomplete")] == ["no_finish_reason"]  # type: ignore[attr-defined]
    assert events[-1].stop_reason == "no_finish_reason"  # type: ignore[union-attr]


def test_an_anthropic_refusal_is_reported_and_a_cut_stream_is_an_error(allow_real_providers: None) -> None:
    api = MockAPI(sse_response(an_text_reply("I can't help with that.", stop="refusal")),
                  sse_response(an_sse(an_start(), an_text(0, "cut"))))  # no message_delta, no message_stop
    provider = AnthropicProvider("claude-sonnet-4-5", api_key="sk-ant", base_url="http://mock", http_client=api.client())
    agent = Agent.create("an", provider=provider)
    refused = of_type(list(agent.turn("do something bad")), "reply_incomplete")
    assert [e.reason for e in refused] == ["refusal"]  # type: ignore[attr-defined]
    assert refused[0].detail == "the model refused to answer"  # type: ignore[attr-defined]
    failed = list(agent.turn("again"))[-1]
    assert isinstance(failed, TurnFailed) and failed.error.startswith("Anthropic at http://mock stopped mid-reply:")


def test_the_repl_says_the_reply_was_cut() -> None:
    agent = Agent.create("sam", provider=ScriptedProvider([Step("Once upon a", stop_reason="max_tokens")]))
    read = typed("tell me a story")

    out = io.StringIO()
    Repl(agent, read=read, out=out).run()
    assert "sam> Once upon a\n  ! the reply was cut off: the model reached its output limit (max_tokens)\n" in out.getvalue()
