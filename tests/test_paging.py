"""The pager inside a real agent (LanceDB in a temp home): alert, eviction, summaries, failure paths."""

from __future__ import annotations

import io
import time
from typing import Any

from agentos.agent.agent import Agent
from agentos.agent.context import repair_context
from agentos.agent.state import AgentSettings, PagerSettings
from agentos.chat import Repl
from agentos.cli import main as cli_main
from agentos.errors import ContextOverflowError, ServerError
from agentos.events import MessagesEvicted, Notice, TurnFailed, TurnFinished, UsageReported
from agentos.messages import Usage
from agentos.providers import ModelRequest, ScriptedProvider, Step
from agentos.tools import tool

ALERT = "[System alert: memory pressure]"
WINDOW = 2600


class Summarizer(ScriptedProvider):
    """Writes 'S<n>: ...' summaries and remembers what it was asked."""

    def __init__(self, behaviour: Any = None) -> None:
        super().__init__(self._reply, context_window=WINDOW)
        self.behaviour = behaviour

    def _reply(self, request: ModelRequest) -> Any:
        if self.behaviour is not None:
            return self.behaviour(request)
        return f"S{len(self.requests)}: the user talked about numbered topics."


def make_agent(name: str = "pg", window: int = WINDOW, summarizer: Any = None, reply: Any = "ok",
               tools: tuple = (), tool_output_limit: int = 4000, **pager: Any) -> Agent:
    provider = ScriptedProvider(lambda request: reply(request) if callable(reply) else reply, context_window=window)
    # paging is about the window, not search: BM25 alone keeps these long conversations quick (vectors: elsewhere)
    settings = AgentSettings(pager=PagerSettings(**pager), tool_output_limit=tool_output_limit, embedder="none")
    agent = Agent.create(name, provider=provider, settings=settings, tools=tools)
    agent.roles.use("summary", summarizer if summarizer is not None else Summarizer())
    return agent


def talk(agent: Agent, turns: int, size: int = 300, start: int = 0) -> list[Any]:
    events: list[Any] = []
    for i in range(start, start + turns):
        events.extend(agent.turn(f"topic {i}: " + "words " * (size // 6)))
    return events


def requests(agent: Agent) -> list[ModelRequest]:
    return agent.provider.requests  # type: ignore[attr-defined, no-any-return]


def test_alert_once_per_pressure_episode_as_a_message() -> None:
    agent = make_agent(evict_at=0.99, target=0.5)
    events = talk(agent, 14)
    alerts = [m for m in agent.context if m.content.startswith(ALERT)]
    notices = [e for e in events if isinstance(e, Notice) and "memory pressure" in e.text]
    assert len(alerts) == 1 and len(notices) == 1
    assert alerts[0].role == "user" and "Save anything that matters" in alerts[0].content
    assert not any(isinstance(e, MessagesEvicted) for e in events)
    statics = {r.system_static for r in requests(agent)}
    assert len(statics) == 1  # the static system prompt stays byte-stable
    assert ALERT not in next(iter(statics))


def test_a_new_episode_alerts_again_after_eviction() -> None:
    agent = make_agent()
    events = talk(agent, 40)
    evictions = [e for e in events if isinstance(e, MessagesEvicted)]
    alerts = [e for e in events if isinstance(e, Notice) and "memory pressure" in e.text]
    assert len(evictions) >= 2
    assert 2 <= len(alerts) <= len(evictions) + 1  # one per episode, not one per call


def test_eviction_keeps_the_context_under_the_window_and_the_history_in_recall() -> None:
    agent = make_agent()
    events = talk(agent, 40)
    evictions = [e for e in events if isinstance(e, MessagesEvicted)]
    assert evictions and all(e.summarized and e.tokens_after < e.tokens_before for e in evictions)
    assert all(e.tokens_after <= int(WINDOW * 0.6) for e in evictions)
    reported = [e.usage.input_tokens for e in events if isinstance(e, UsageReported)]
    assert max(reported) <= WINDOW * 0.9
    assert all(isinstance(e, TurnFinished) for e in events if isinstance(e, (TurnFinished, TurnFailed)))
    # the evicted messages are still in recall, and the prompt's metadata counts them
    assert agent.store.count_messages(agent.id) == agent.state.message_count
    hidden = agent.state.message_count - len(agent.context)
    assert hidden > 0
    request = agent.build_request()
    assert f"Recall memory: {hidden:,} older messages are out of your context; find them with conversation_search." \
        in request.system_dynamic
    # the summary sits right after the system prompt
    first = request.messages[0]
    assert first.role == "user" and agent.state.summary in first.content and f"{hidden} older messages" in first.content


def test_summaries_are_recursive_and_persisted() -> None:
    summarizer = Summarizer()
    agent = make_agent(summarizer=summarizer)
    talk(agent, 40)
    assert len(summarizer.requests) >= 2
    second = summarizer.requests[1].messages[0].content
    assert "<previous_summary>\nS1: the user talked about numbered topics.\n</previous_summary>" in second
    assert agent.state.summary == f"S{len(summarizer.requests)}: the user talked about numbered topics."
    agent.close()
    loaded = Agent.load("pg", provider=ScriptedProvider(["fine"], context_window=WINDOW))
    assert loaded.state.summary == agent.state.summary
    assert [m.id for m in loaded.context] == [m.id for m in agent.context]
    assert loaded.build_request().messages[0].content == agent.build_request().messages[0].content
    # the calibration to the provider's counts survives too, so a reload does not over-count
    assert loaded.context_breakdown()["total"] == agent.context_breakdown()["total"]


def test_tool_calls_are_never_separated_from_their_results() -> None:
    @tool
    def lookup(key: str) -> str:
        """Look something up.

        Args:
            key: What to look up.
        """
        return "value " * 40

    def reply(request: ModelRequest) -> Step:
        if request.messages[-1].role == "user":
            return Step("", tool_calls=[("lookup", {"key": "a"}), ("lookup", {"key": "b"})])
        return Step("done")

    agent = make_agent(reply=reply, tools=(lookup,))
    events = talk(agent, 25)
    assert any(isinstance(e, MessagesEvicted) for e in events)
    for request in requests(agent):
        body = [m for m in request.messages if m.id != "summary"]
        assert repair_context(body) == body  # every call has its results, every result its call
        assert body[0].role != "tool"


def test_the_last_three_messages_are_never_evicted() -> None:
    agent = make_agent()
    talk(agent, 12)
    last = [m.id for m in agent.context[-3:]]
    events = agent.compact()
    assert isinstance(events[0], MessagesEvicted) and events[0].count > 0
    assert [m.id for m in agent.context] == last
    assert agent.state.summary.startswith("S1")


def _fallback(agent: Agent) -> MessagesEvicted:
    talk(agent, 10)
    events = agent.compact()
    assert isinstance(events[0], MessagesEvicted)
    assert "were removed from context without a summary" in agent.state.summary
    assert len(agent.context) == 3
    finished = list(agent.turn("still there?"))
    assert isinstance(finished[-1], TurnFinished)  # usable afterwards
    return events[0]


def test_summarizer_failure_evicts_with_a_marker() -> None:
    event = _fallback(make_agent(summarizer=Summarizer(lambda r: ServerError("summarizer down"))))
    assert not event.summarized and "summarizer failed (ServerError: summarizer down)" in event.note


def test_summarizer_timeout_evicts_with_a_marker() -> None:
    def slow(request: ModelRequest) -> str:
        time.sleep(1.0)
        return "late"

    event = _fallback(make_agent(summarizer=Summarizer(slow), summary_timeout_s=0.05))
    assert not event.summarized and "timed out" in event.note


def test_summary_that_is_too_long_evicts_with_a_marker() -> None:
    event = _fallback(make_agent(summarizer=Summarizer(lambda r: "blah " * 2000)))
    assert not event.summarized and "too long" in event.note


def test_empty_summary_evicts_with_a_marker() -> None:
    event = _fallback(make_agent(summarizer=Summarizer(lambda r: "   ")))
    assert not event.summarized and "empty" in event.note


def test_repeated_failures_merge_into_one_bounded_marker() -> None:
    agent = make_agent(summarizer=Summarizer(lambda r: ServerError("down")))
    talk(agent, 6)
    agent.compact()
    first = agent.state.summary
    talk(agent, 6, start=6)
    agent.compact()
    assert agent.state.summary.count("earlier messages were removed") == 1
    assert int(agent.state.summary.split()[0][1:]) > int(first.split()[0][1:])


def test_previous_summary_survives_a_failed_summary() -> None:
    calls = {"n": 0}

    def flaky(request: ModelRequest) -> Any:
        calls["n"] += 1
        return "S-first: the user likes tea." if calls["n"] == 1 else ServerError("down")

    agent = make_agent(summarizer=Summarizer(flaky))
    talk(agent, 6)
    agent.compact()
    talk(agent, 6, start=6)
    agent.compact()
    assert agent.state.summary.startswith("S-first: the user likes tea.\n[")


def test_a_giant_tool_result_is_truncated_and_kept_whole_in_recall() -> None:
    @tool
    def dump() -> str:
        """Return a huge document."""
        return "line of a huge document\n" * 2000

    def reply(request: ModelRequest) -> Step:
        last = request.messages[-1]
        return Step("", tool_calls=[("dump", {})]) if last.role == "user" and "dump" in last.content else Step("ok")

    agent = make_agent(reply=reply, tools=(dump,), tool_output_limit=100_000)
    events = list(agent.turn("please dump"))
    assert isinstance(events[-1], TurnFinished)
    evictions = [e for e in events if isinstance(e, MessagesEvicted)]
    assert evictions and "truncated 1 oversized message" in evictions[0].note
    result = next(m for m in agent.context if m.role == "tool")
    assert "[truncated by the pager" in result.content
    assert max(e.usage.input_tokens for e in events if isinstance(e, UsageReported)) <= WINDOW
    agent.close()
    stored = agent.store.get_messages(agent.id, [result.id])[0]
    assert len(stored.content) == len("line of a huge document\n" * 2000)
    assert isinstance(list(agent.turn("and now?"))[-1], TurnFinished)


def test_overflow_error_compacts_and_retries() -> None:
    agent = make_agent()
    talk(agent, 6)
    overflow = ContextOverflowError("prompt is too long")
    agent.roles.use("main", ScriptedProvider([overflow, overflow, "recovered"], context_window=WINDOW))
    events = list(agent.turn("hello"))
    assert isinstance(events[-1], TurnFinished) and events[-1].reply.content == "recovered"
    retries = [e for e in events if isinstance(e, Notice) and "rejected the request as too long" in e.text]
    assert len(retries) == 2
    assert any(isinstance(e, MessagesEvicted) for e in events)
    sizes = [len(r.messages) for r in agent.provider.requests]
    assert sizes[-1] < sizes[0]


def test_an_overflow_on_the_first_call_never_cuts_the_question_or_blanks_recent_messages() -> None:
    """The provider rejects the turn's first call: older messages are evicted, the new question goes whole."""
    agent = make_agent(window=8000)
    talk(agent, 3, size=600)
    question = "And what was the name of the third topic? " * 8
    overflow = ContextOverflowError("context length exceeded")
    agent.roles.use("main", ScriptedProvider([overflow, "the third"], context_window=8000))
    events = list(agent.turn(question))
    assert isinstance(events[-1], TurnFinished) and events[-1].reply.content == "the third"
    retried = agent.provider.requests[-1]
    assert retried.messages[-1].content == question
    assert all(len(m.content) >= 48 for m in retried.messages if m.role == "user")  # nothing cut to nothing
    assert len(retried.messages) < len(agent.provider.requests[0].messages)  # older messages went instead
    assert agent.state.context[-2].content == question  # and the kept copy is whole too


def test_overflow_retries_are_bounded_and_the_agent_stays_usable() -> None:
    agent = make_agent(overflow_retries=2)
    talk(agent, 4)
    overflow = ContextOverflowError("prompt is too long")
    agent.roles.use("main", ScriptedProvider([overflow] * 3 + ["back"], context_window=WINDOW))
    events = list(agent.turn("hello"))
    assert isinstance(events[-1], TurnFailed) and events[-1].kind == "ContextOverflowError"
    assert len(agent.provider.requests) == 3
    assert isinstance(list(agent.turn("again"))[-1], TurnFinished)


def test_a_system_prompt_over_the_window_fails_clearly_at_the_start() -> None:
    provider = ScriptedProvider(["hi"], context_window=WINDOW)
    agent = Agent.create("big", provider=provider, persona="I am verbose. " * 800)
    events = list(agent.turn("hello"))
    assert len(events) == 1 and isinstance(events[0], TurnFailed)
    assert events[0].steps == 0 and "system prompt alone takes" in events[0].error
    assert f"context window of {WINDOW:,} tokens" in events[0].error
    assert agent.context == () and provider.requests == []
    agent.update_settings(context_window=32_000)
    assert isinstance(list(agent.turn("hello"))[-1], TurnFinished)


def test_pressure_is_measured_on_reported_input_tokens_not_output() -> None:
    big_output = Step("ok", usage=Usage(input_tokens=100, output_tokens=50_000))
    agent = make_agent()
    agent.roles.use("main", ScriptedProvider(lambda r: big_output, context_window=WINDOW))
    events = talk(agent, 3, size=60)
    assert not any(isinstance(e, (Notice, MessagesEvicted)) for e in events)
    big_input = Step("ok", usage=Usage(input_tokens=int(WINDOW * 0.95), output_tokens=5))
    agent.roles.use("main", ScriptedProvider(lambda r: big_input, context_window=WINDOW))
    events = talk(agent, 3, size=60, start=3)
    assert any(isinstance(e, MessagesEvicted) for e in events)  # ground truth says 95%: evict


def test_breakdown_has_every_part() -> None:
    agent = make_agent()
    talk(agent, 12)
    agent.compact()
    b = agent.context_breakdown()
    assert b["window"] == WINDOW and b["summary"] > 0 and b["message_count"] == 3
    assert b["total"] == b["system"] + b["memory"] + b["tools"] + b["summary"] + b["messages"] + b["correction"]
    assert b["last_reported"] == agent.last_usage.input_tokens  # type: ignore[union-attr]


def test_repl_summarize_and_context_commands() -> None:
    agent = make_agent()
    talk(agent, 8)
    lines = iter(["/context", "/summarize", "/summarize", "/exit"])
    out = io.StringIO()
    Repl(agent, read=lambda prompt: next(lines), out=out).run()
    text = out.getvalue()
    assert "system instructions" in text and "tool schemas" in text
    assert "old messages moved out of context, summarized" in text
    assert "nothing to compact" in text


def test_cli_compact_and_show(capsys: Any) -> None:
    agent = Agent.create("clidemo", model="scripted/demo")
    for text in ["my name is Ada", "what is my name?", "hello", "hello again"]:
        list(agent.turn(text))
    agent.close()
    assert cli_main(["show", "clidemo"]) == 0
    shown = capsys.readouterr().out
    assert "Context:" in shown and "of 8,192 tokens" in shown and "messages (10)" in shown
    assert cli_main(["compact", "clidemo"]) == 0
    assert "old messages moved out of context, summarized" in capsys.readouterr().out
    assert cli_main(["show", "clidemo"]) == 0
    assert "messages (3)" in capsys.readouterr().out
    loaded = Agent.load("clidemo")
    assert len(loaded.context) == 3 and loaded.state.summary.startswith("The user said: my name is Ada")


def test_the_summarizer_request_is_bounded_by_its_own_window() -> None:
    small = Summarizer()
    small.context_window = 600
    agent = make_agent(summarizer=small)
    talk(agent, 12)
    agent.compact()
    prompt = small.requests[0].messages[0].content
    assert "messages omitted ...]" in prompt and "topic 0:" in prompt
    assert len(prompt) // 4 < 600
    assert small.requests[0].tools == [] and small.requests[0].max_output_tokens


def test_a_separate_summary_model_can_be_configured() -> None:
    agent = Agent.create("cheap", provider=ScriptedProvider(["x"]),
                         settings=AgentSettings(pager=PagerSettings(summary_model="scripted/demo")))
    assert agent.roles.spec("summary") == "scripted/demo" and agent.roles.provider("summary").model == "demo"
    plain = Agent.create("own", provider=ScriptedProvider(["x"]))
    assert plain.roles.provider("summary") is plain.provider


def test_an_eviction_is_saved_even_when_the_turn_then_fails() -> None:
    calls = {"n": 0}

    def reply(request: ModelRequest) -> Any:
        calls["n"] += 1
        if calls["n"] > 12:
            raise ServerError("the model is down")
        return "ok"

    agent = make_agent(reply=reply)
    talk(agent, 12)
    before = len(agent.context)
    events = list(agent.turn("topic 99: " + "words " * 200))
    assert isinstance(events[-1], TurnFailed)
    assert any(isinstance(e, MessagesEvicted) and e.count for e in events)
    reloaded = Agent.load("pg", provider=ScriptedProvider([]))
    assert [m.id for m in reloaded.context] == [m.id for m in agent.context]
    assert len(reloaded.context) < before
    assert reloaded.state.summary == agent.state.summary != ""


def test_a_compaction_that_changes_nothing_is_not_reported_as_one() -> None:
    """Asked to compact after an overflow in a tool loop, with only the question before the call and a tool result
    too short to cut: nothing can go, and the user is told that, not "0 old messages moved out"."""
    from agentos.messages import ToolCall

    @tool
    def lookup(key: str) -> str:
        """Look a key up.

        Args:
            key: The key.
        """
        return "value " * 22  # 132 characters: shorter than a truncation note would make it

    call = Step(tool_calls=[ToolCall(id="c1", name="lookup", arguments='{"key": "k"}')])
    overflow = ContextOverflowError("prompt is too long")
    agent = make_agent(window=WINDOW, tools=(lookup,), overflow_retries=1)
    agent.roles.use("main", ScriptedProvider([call, overflow, overflow], context_window=WINDOW))
    events = list(agent.turn("look it up " * 20))
    assert not [e for e in events if isinstance(e, MessagesEvicted)]
    assert any(isinstance(e, Notice) and e.text.startswith("nothing to compact") for e in events)
    assert isinstance(events[-1], TurnFailed) and events[-1].kind == "ContextOverflowError"


def test_a_local_servers_summary_is_waited_for_past_the_hosted_timeout() -> None:
    """A model on a CPU takes minutes; giving up leaves a single-slot server busy with the summary anyway."""
    def slow(request: ModelRequest) -> str:
        time.sleep(0.3)
        return "S: the user talked about numbered topics."

    local = Summarizer(slow)
    local.name = "llamacpp"
    agent = make_agent(summarizer=local, summary_timeout_s=0.05)
    evictions = [e for e in talk(agent, 30) if isinstance(e, MessagesEvicted)]
    assert evictions and all(e.summarized for e in evictions), evictions[0].note


def test_a_local_server_is_asked_for_the_summary_as_a_continuation_of_the_main_prompt() -> None:
    """A single-slot server keeps one prompt in its cache: the summary continues the main prompt (its system prompt,
    tools and the messages leaving) instead of replacing it with a prompt of its own."""
    local = Summarizer()
    local.name, local.context_window = "llamacpp", 6000  # the agent's own model, on the same server
    agent = make_agent(window=6000, summarizer=local)
    evictions = [e for e in talk(agent, 40, size=600) if isinstance(e, MessagesEvicted)]
    assert evictions and all(e.summarized for e in evictions)
    main = requests(agent)
    for asked in local.requests:
        before = max((r for r in main if r.messages[:len(asked.messages) - 1] == asked.messages[:-1]),
                     key=lambda r: len(r.messages), default=None)
        assert before is not None  # the main request it continues
        assert (asked.system_static, asked.system_dynamic, asked.tools) == (before.system_static,
                                                                           before.system_dynamic, before.tools)
        assert asked.messages[-1].content.startswith("[Memory maintenance, not from the user] The messages above")
    assert "at most" in local.requests[-1].messages[-1].content


def test_a_continuation_answered_with_a_tool_call_falls_back_to_the_summarizer_prompt() -> None:
    def reply(request: ModelRequest) -> str:
        if request.tools:
            return '<tool_call>{"name": "core_memory_append", "arguments": {}}</tool_call>'
        return "S: the user talked about numbered topics."

    local = Summarizer(reply)
    local.name, local.context_window = "llamacpp", 6000  # the agent's own model, on the same server
    agent = make_agent(window=6000, summarizer=local)
    evictions = [e for e in talk(agent, 40, size=600) if isinstance(e, MessagesEvicted)]
    assert evictions and all(e.summarized for e in evictions)
    assert agent.state.summary == "S: the user talked about numbered topics."
    assert [bool(r.tools) for r in local.requests][:2] == [True, False]
