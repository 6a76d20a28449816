"""A reply cut at the output limit, a refusal, or a stream that ends without saying it finished is
reported as such: an event, the turn's stop reason, and a notice in the CLI and the TUI."""

from __future__ import annotations

import io

from mock_api import MockAPI, an_sse, an_start, an_text, an_text_reply, oa_delta, oa_sse, sse_response

from agentos import Agent
from agentos.chat import Repl
from agentos.events import ReplyIncomplete, TurnFinished
from agentos.providers import ScriptedProvider, Step
from agentos.providers.anthropic_provider import AnthropicProvider
from agentos.providers.openai_provider import OpenAIProvider
from tests.helpers import of_type, types


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


def test_an_openai_stream_that_ends_without_a_finish_reason_is_incomplete(allow_real_providers: None) -> None:
    cut = oa_sse(oa_delta({"role": "assistant", "content": "Half a"}), oa_delta({"content": " sentence"}), done=False)
    api = MockAPI(sse_response(cut))
    provider = OpenAIProvider("gpt-4.1-mini", api_key="sk-test", base_url="http://mock/v1", http_client=api.client())
    events = list(Agent.create("oa", provider=provider).turn("hi"))
    assert [e.reason for e in of_type(events, "reply_incomplete")] == ["no_finish_reason"]  # type: ignore[attr-defined]
    assert events[-1].stop_reason == "no_finish_reason"  # type: ignore[union-attr]


def test_an_anthropic_refusal_is_reported(allow_real_providers: None) -> None:
    api = MockAPI(sse_response(an_text_reply("I can't help with that.", stop="refusal")),
                  sse_response(an_sse(an_start(), an_text(0, "cut"))))  # no message_delta, no message_stop
    provider = AnthropicProvider("claude-sonnet-4-5", api_key="sk-ant", base_url="http://mock", http_client=api.client())
    agent = Agent.create("an", provider=provider)
    refused = of_type(list(agent.turn("do something bad")), "reply_incomplete")
    assert [e.reason for e in refused] == ["refusal"]  # type: ignore[attr-defined]
    assert refused[0].detail == "the model refused to answer"  # type: ignore[attr-defined]
    assert [e.reason for e in of_type(list(agent.turn("again")), "reply_incomplete")] == ["no_finish_reason"]  # type: ignore[attr-defined]


def test_the_repl_says_the_reply_was_cut() -> None:
    agent = Agent.create("sam", provider=ScriptedProvider([Step("Once upon a", stop_reason="max_tokens")]))
    lines = iter(["tell me a story"])

    def read(prompt: str) -> str:
        try:
            return next(lines)
        except StopIteration:
            raise EOFError from None

    out = io.StringIO()
    Repl(agent, read=read, out=out).run()
    assert "sam> Once upon a\n  ! the reply was cut off: the model reached its output limit (max_tokens)\n" in out.getvalue()
