"""Property test of the whole agent: random conversations never leave it stuck or over the window."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentos.agent.agent import Agent
from agentos.agent.context import repair_context
from agentos.agent.paging import MIN_KEPT_CHARS, truncation_note
from agentos.agent.state import AgentSettings
from agentos.errors import ContextOverflowError, ServerError
from agentos.events import TurnFailed, TurnFinished
from agentos.providers import ModelRequest, ScriptedProvider, Step
from agentos.providers.scripted import estimate_tokens
from agentos.tools import tool

WINDOW = 2500
_names = itertools.count()


@tool
def fetch(size: int) -> str:
    """Fetch a document of about `size` characters.

    Args:
        size: How many characters to return.
    """
    return ("data " * (size // 5 + 1))[:size]


def strict_model(plan: list[tuple[int, int]], limit: int) -> Any:
    """A model that rejects requests over `limit` tokens, as a real provider does, and calls tools on request."""

    def reply(request: ModelRequest) -> Any:
        if estimate_tokens(request) > limit:
            return ContextOverflowError("prompt is too long")
        last = request.messages[-1]
        if last.role == "user" and last.content.startswith("call"):
            calls, size = plan[int(last.content.split()[1])]
            return Step("", tool_calls=[("fetch", {"size": size})] * calls)
        return Step("reply " * 10)

    return reply


turns = st.lists(
    st.tuples(st.integers(0, 3), st.integers(0, 30_000), st.integers(20, 4000)), min_size=1, max_size=25
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(turns, st.booleans(), st.sampled_from([1.0, 0.6]))
def test_random_conversations_never_get_stuck(script: list[tuple[int, int, int]], summarizer_fails: bool,
                                              real_share: float) -> None:
    """`real_share` < 1: the model really accepts less than the window the agent was told (overflow errors)."""
    limit = int(WINDOW * real_share)
    plan = [(calls, size) for calls, size, _ in script]
    provider = ScriptedProvider(strict_model(plan, limit), context_window=WINDOW)
    agent = Agent.create(f"prop{next(_names)}", provider=provider, tools=[fetch],
                         settings=AgentSettings(tool_output_limit=40_000, embedder="none"))  # paging, not search
    agent.roles.use("summary", ScriptedProvider(
        lambda r: ServerError("down") if summarizer_fails else "A short summary.", context_window=WINDOW))
    turn_starts = []
    for index, (calls, _, text_size) in enumerate(script):
        text = f"call {index} " + "x" * text_size if calls else f"talk {index}: " + "y" * text_size
        sent = len(provider.requests)
        turn_starts.append(sent)
        events = list(agent.turn(text))
        header = text.split()[0] + " " + text.split()[1]
        for request in provider.requests[sent:]:  # the question is sent whole, or evicted into the summary
            assert all(m.content == text for m in request.messages if m.content.startswith(header + " "))
        if isinstance(events[-1], TurnFailed):
            # only when the smallest request that still carries the question (the system prompt, a short summary
            # of whatever came before, the question) is over the real limit
            # (and this step's calls and results, each cut to the least the pager keeps)
            last = provider.requests[-1]
            at = next(i for i, m in enumerate(last.messages) if m.content == text)
            summary = last.messages[0] if last.messages[0].id == "summary" else None
            shortest = summary if summary is not None and summarizer_fails else agent.prompts.summary_message("A short summary.", 1)
            head = [shortest] if at > 0 else []
            step = [m.model_copy(update={"content": m.content[:MIN_KEPT_CHARS] + truncation_note(MIN_KEPT_CHARS, len(m.content))})
                    if len(m.content) > MIN_KEPT_CHARS else m for m in last.messages[at + 1:]]
            smallest = ModelRequest(last.system_static, last.system_dynamic, [*head, last.messages[at], *step],
                                    tools=last.tools)
            assert events[-1].kind == "ContextOverflowError" and estimate_tokens(smallest) > limit, events[-1]
            continue
        assert isinstance(events[-1], TurnFinished), events[-1]
        assert not any(isinstance(e, TurnFailed) for e in events)
    for request in provider.requests:
        body = [m for m in request.messages if m.id != "summary"]
        assert repair_context(body) == body
    rejected = [estimate_tokens(r) > limit for r in provider.requests]
    for start, end in zip(turn_starts, [*turn_starts[1:], len(rejected)]):  # retries are bounded in each turn
        runs = itertools.groupby(rejected[start:end])
        assert max((len(list(g)) for value, g in runs if value), default=0) <= agent.state.settings.pager.overflow_retries + 1
    if real_share == 1.0:
        assert not any(rejected)  # the pager keeps every request under the real window
    assert agent.store.count_messages(agent.id) == agent.state.message_count
