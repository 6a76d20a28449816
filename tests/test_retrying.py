"""Retries are visible and cancellable: a provider's back-off reaches the turn as Retrying events, the REPL says
so once per retry, and closing the turn during a back-off ends it at once, with no further sleep or request."""

from __future__ import annotations

import io

import pytest
from mock_api import Backoffs, MockAPI, an_error, an_text_reply, oa_error, oa_text_reply, sse_response

from agentos import Agent
from agentos.agent.context import repair_context
from agentos.chat import Repl
from agentos.events import Retrying, TextDelta, TurnFinished
from agentos.formatting import describe_retry
from agentos.providers import ScriptedProvider
from agentos.providers.anthropic_provider import AnthropicProvider
from agentos.providers.openai_provider import OpenAIProvider
from agentos.providers.retry import RetryPolicy
from tests.helpers import typed

pytestmark = pytest.mark.usefixtures("allow_real_providers")


def rate_limited(seconds: str = "1") -> MockAPI:
    """An OpenAI API that answers 429 with a retry-after, then a reply."""
    return MockAPI(oa_error(429, "Rate limit reached", "requests", "rate_limit_exceeded", {"retry-after": seconds}),
                   sse_response(oa_text_reply("ok")))


def openai_agent(api: MockAPI, name: str = "sam") -> tuple[Agent, Backoffs]:
    """An agent on the real OpenAI SDK over `api`, whose back-offs are recorded instead of slept."""
    sleeps = Backoffs(lambda: len(api.requests))
    provider = OpenAIProvider("gpt-4.1-mini", api_key="sk-test", base_url="http://mock/v1", http_client=api.client(),
                              retry=RetryPolicy(max_retries=2, jitter=0.0, sleep=sleeps))
    return Agent.create(name, provider=provider), sleeps


def test_a_rate_limit_reaches_the_turn_as_retrying_events_then_the_reply() -> None:
    api = rate_limited("1")
    agent, sleeps = openai_agent(api)
    events = list(agent.turn("hi"))
    retrying = [e for e in events if isinstance(e, Retrying)]
    assert [e.remaining for e in retrying] == [1.0, 0.75, 0.5, 0.25]
    assert {(e.reason, e.attempt, e.max_retries, e.wait) for e in retrying} == {("rate limited", 1, 2, 1.0)}
    assert "Rate limit reached" in retrying[0].error
    assert events.index(retrying[-1]) < events.index(next(e for e in events if isinstance(e, TextDelta)))
    finished = events[-1]
    assert isinstance(finished, TurnFinished) and finished.reply.content == "ok"  # the retry added no reply text
    assert [m.content for m in agent.context] == ["hi", "ok"]
    assert sleeps.waits == [1.0] and len(api.requests) == 2


def test_closing_the_turn_during_the_back_off_stops_it_and_the_agent_reloads_consistently() -> None:
    api = rate_limited("30")
    agent, sleeps = openai_agent(api, "cancelme")
    turn = agent.turn("hi")
    first = next(e for e in turn if isinstance(e, Retrying))
    assert (first.wait, first.remaining) == (30.0, 30.0)
    turn.close()
    assert sleeps.ticks == [] and len(api.requests) == 1 and len(api.replies) == 1  # no sleep, no second request
    agent.close()
    reloaded = Agent.load("cancelme", provider=ScriptedProvider(["still here"]))
    assert repair_context(list(reloaded.context)) == list(reloaded.context)
    assert [m.content for m in reloaded.context] == ["hi"]
    assert [e.type for e in reloaded.turn("again")][-1] == "turn_finished"


def test_the_anthropic_provider_reports_its_retries_too() -> None:
    api = MockAPI(an_error(429, "rate_limit_error", "Number of requests has exceeded your rate limit",
                           {"retry-after": "0.5"}), sse_response(an_text_reply("ok")))
    sleeps = Backoffs(lambda: len(api.requests))
    provider = AnthropicProvider("claude-sonnet-4-5", api_key="sk-ant-test", base_url="http://mock",
                                 http_client=api.client(), retry=RetryPolicy(max_retries=2, sleep=sleeps))
    events = list(Agent.create("claude", provider=provider).turn("hi"))
    assert [(e.reason, e.attempt, e.remaining) for e in events if isinstance(e, Retrying)] == [
        ("rate limited", 1, 0.5), ("rate limited", 1, 0.25)]
    assert events[-1].type == "turn_finished" and sleeps.waits == [0.5]


def retrying(reason: str = "rate limited", wait: float = 4.0, remaining: float = 4.0) -> Retrying:
    return Retrying(reason=reason, error="x", attempt=1, max_retries=3, wait=wait, remaining=remaining)


def test_describe_retry_rounds_what_is_left_up() -> None:
    assert describe_retry(retrying()) == "rate limited, retrying in 4 s (attempt 1 of 3)"
    assert describe_retry(retrying("the server failed", 4.0, 3.2)) == "the server failed, retrying in 4 s (attempt 1 of 3)"
    assert describe_retry(retrying(wait=1.3, remaining=1.3 - 0.25 * 5)) == "rate limited, retrying in 1 s (attempt 1 of 3)"
    assert describe_retry(retrying(wait=0.0, remaining=0.0)) == "rate limited, retrying now (attempt 1 of 3)"


def test_the_repl_says_once_per_retry_that_it_is_retrying() -> None:
    agent, _ = openai_agent(rate_limited("2"))
    read = typed("hi")

    out = io.StringIO()
    assert Repl(agent, read=read, out=out).run() == 0
    printed = out.getvalue().splitlines()
    assert printed[1:] == ["  ! rate limited, retrying in 2 s (attempt 1 of 2)", "sam> ok", ""]
