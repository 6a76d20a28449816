"""Consolidation with scripted models: each decision, the confidence bar and duplicates, answers that fail validation
(malformed JSON, wrong ids, another agent's ids, empty answers), provider failures, crashes, and the background."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from agentos.agent.agent import Agent
from agentos.agent.state import AgentSettings
from agentos.errors import RateLimitError
from agentos.memory.facts.rows import Fact, FactChange
from agentos.memory.facts.settings import FactSettings
from agentos.memory.facts.tier import FactTier
from agentos.messages import Message
from agentos.providers.base import ModelRequest
from agentos.providers.scripted import ScriptedProvider, ScriptItem, Step


def facts_call(*facts: dict[str, Any]) -> Step:
    return Step(tool_calls=[("record_facts", {"facts": list(facts)})])


def fact(text: str, confidence: float = 0.9, sources: tuple[int, ...] = (1,), **extra: Any) -> dict[str, Any]:
    return {"text": text, "confidence": confidence, "sources": list(sources), **extra}


def decisions(*items: tuple[int, str, str | None]) -> Step:
    return Step(tool_calls=[("decide", {"decisions": [
        {"candidate": n, "action": action, "fact": alias, "reason": "scripted"} for n, action, alias in items]})])


def agent_with(script: list[ScriptItem], name: str = "ada", **settings: Any) -> Agent:
    agent = Agent.create(name, provider=ScriptedProvider([]), settings=AgentSettings(facts=FactSettings(**settings)))
    agent.roles.use("facts", ScriptedProvider(script))
    return agent


def say(agent: Agent, *texts: str) -> None:
    agent.add_history([Message(role="user", content=t) for t in texts])


def current(agent: Agent) -> list[str]:
    return [f.text for f in agent.tier(FactTier).listing()]


def seed(agent: Agent, text: str) -> Fact:
    stored = Fact(text=text)
    agent.tier(FactTier).commit([FactChange(kind="add", by="user", group_id="seed", fact=stored)])
    return stored


def test_add_when_nothing_similar_is_stored_needs_no_decision_call(agentos_home: Path) -> None:
    agent = agent_with([facts_call(fact("Ada likes green tea", category="preference"))])
    say(agent, "I love green tea")
    report = agent.consolidate()
    assert current(agent) == ["Ada likes green tea"]
    stored = agent.tier(FactTier).listing()[0]
    assert stored.category == "preference" and stored.subject == "user" and len(stored.source_ids) == 1
    assert report.count("add") == 1 and report.batches[0].calls == 1
    assert agent.roles.given("facts") is not None and agent.roles.given("facts").remaining == 0  # type: ignore[attr-defined]


def test_update_supersedes_the_fact_the_model_names(agentos_home: Path) -> None:
    agent = agent_with([facts_call(fact("Ada lives in Berlin")), decisions((1, "UPDATE", "F1"))])
    old = seed(agent, "Ada lives in Paris")
    say(agent, "I moved to Berlin")
    agent.consolidate()
    assert current(agent) == ["Ada lives in Berlin"]
    history = agent.tier(FactTier).history(old.id)
    assert [f.text for f in history] == ["Ada lives in Paris", "Ada lives in Berlin"]
    assert history[0].status == "superseded"
    question = agent.roles.given("facts").requests[1].messages[0].content  # type: ignore[attr-defined]
    assert "Candidate 1: Ada lives in Berlin" in question and "F1: Ada lives in Paris" in question
    shown = [e for e in list(agent.idle()) if e.type == "facts_changed"]
    assert shown[0].changes == ["~ Ada lives in Berlin (was: Ada lives in Paris)"]  # type: ignore[union-attr]


def test_delete_invalidates_and_stores_nothing_new(agentos_home: Path) -> None:
    agent = agent_with([facts_call(fact("Ada no longer has a car")), decisions((1, "DELETE", "f1"))])
    old = seed(agent, "Ada has a car")
    say(agent, "I sold my car")
    agent.consolidate()
    assert current(agent) == []
    ended = agent.tier(FactTier).get(old.id)
    assert ended is not None and ended.status == "invalidated" and ended.valid_to is not None
    shown = [e for e in list(agent.idle()) if e.type == "facts_changed"]
    assert shown[0].changes == ["- Ada has a car (no longer true)"]  # type: ignore[union-attr]


def test_none_changes_nothing(agentos_home: Path) -> None:
    agent = agent_with([facts_call(fact("Ada enjoys tea")), decisions((1, "none", None))])
    seed(agent, "Ada likes tea")
    say(agent, "tea is nice")
    report = agent.consolidate()
    assert current(agent) == ["Ada likes tea"] and report.changes == []
    assert agent.tier(FactTier).watermark() == 0  # the message is consolidated all the same


def test_low_confidence_and_exact_duplicates_are_not_stored(agentos_home: Path) -> None:
    agent = agent_with([facts_call(fact("Ada might like opera", confidence=0.2), fact("ada likes  TEA"),
                                   fact("Ada likes cake"), fact("Ada likes cake")), decisions((1, "ADD", None))])
    seed(agent, "Ada likes tea")
    say(agent, "blah")
    agent.consolidate()
    assert sorted(current(agent)) == ["Ada likes cake", "Ada likes tea"]
    question = agent.roles.given("facts").requests[1].messages[0].content  # type: ignore[attr-defined]
    assert "Candidate 1: Ada likes cake" in question and "Candidate 2" not in question  # one candidate was left


def test_each_batch_reads_new_messages_once(agentos_home: Path) -> None:
    seen: list[str] = []

    def extractor(request: ModelRequest) -> Step:
        seen.append(request.messages[0].content)
        return facts_call()

    agent = agent_with([], batch_messages=2)
    agent.roles.use("facts", ScriptedProvider(extractor))
    say(agent, "one", "two", "three")
    agent.consolidate()
    say(agent, "four")
    agent.consolidate()
    agent.consolidate()  # nothing new: no call
    assert [s.count("\n") + 1 for s in seen] == [2, 1, 1]
    assert "four" in seen[-1] and "three" not in seen[-1]


@pytest.mark.parametrize("bad", [
    Step(tool_calls=[("record_facts", "Ada likes tea")]),  # arguments that are not JSON
    Step(text=""),  # an empty answer
    Step(text="Sure! Here are the facts: Ada likes tea."),  # no JSON at all
    Step(tool_calls=[("record_facts", {"facts": [{"txt": "Ada likes tea"}]})]),  # the wrong field
    Step(tool_calls=[("other_tool", {})]),  # a tool that is not offered
])
def test_a_malformed_extraction_is_repaired(agentos_home: Path, bad: Step) -> None:
    agent = agent_with([bad, facts_call(fact("Ada likes tea"))])
    say(agent, "I like tea")
    report = agent.consolidate()
    assert current(agent) == ["Ada likes tea"] and report.batches[0].calls == 2
    repair = agent.roles.given("facts").requests[1].messages  # type: ignore[attr-defined]
    assert repair[-1].role == "user" and "could not be used" in repair[-1].content


def test_json_in_text_with_a_fence_is_read(agentos_home: Path) -> None:
    agent = agent_with(['Here you go:\n```json\n{"facts": [{"text": "Ada likes tea", "confidence": 0.9}]}\n```'])
    say(agent, "I like tea")
    agent.consolidate()
    assert current(agent) == ["Ada likes tea"]


@pytest.mark.parametrize("slip", [
    '{"facts": [{"text": "Ada likes tea", "confidence": 0.9},],}',  # trailing commas
    'Here: {"facts": [{"text": "Ada likes tea", "confidence": 0.9',  # cut off before its closing brackets
    Step(tool_calls=[("record_facts", '{"facts": [{"text": "Ada likes tea", ')]),  # cut-off arguments
])
def test_a_small_models_slips_in_json_are_repaired_without_asking_again(agentos_home: Path, slip: ScriptItem) -> None:
    agent = agent_with([slip])  # one step: asking again would exhaust the script
    say(agent, "I like tea")
    report = agent.consolidate()
    assert current(agent) == ["Ada likes tea"] and report.batches[0].calls == 1


def test_a_batch_with_no_usable_answer_is_skipped_with_a_notice(agentos_home: Path) -> None:
    agent = agent_with(["not json", "still not json", "{bad"], max_repairs=2)
    say(agent, "I like tea")
    report = agent.consolidate()
    assert current(agent) == [] and report.batches[0].skipped
    assert "no usable answer after 3 tries" in (report.batches[0].skipped or "")
    log = agent.tier(FactTier).changes()
    assert log[-1].kind == "skip" and "not valid JSON" in log[-1].reason
    notices = [e for e in list(agent.idle()) if e.type == "facts_notice"]
    assert notices and "skipped 1 message" in notices[0].text  # type: ignore[union-attr]
    say(agent, "I like cake")
    agent.roles.use("facts", ScriptedProvider([facts_call(fact("Ada likes cake"))]))
    agent.consolidate()  # it carries on with the next messages
    assert current(agent) == ["Ada likes cake"]


@pytest.mark.parametrize("bad", [
    lambda stranger: decisions((1, "UPDATE", "F7")),  # an id that was not shown
    lambda stranger: decisions((1, "UPDATE", None)),  # no id at all
    lambda stranger: decisions((1, "DELETE", stranger.id)),  # a real id, from another agent's memory
    lambda stranger: decisions((2, "ADD", None)),  # a candidate that does not exist
    lambda stranger: decisions((1, "ADD", None), (1, "NONE", None)),  # two decisions for one candidate
    lambda stranger: Step(tool_calls=[("decide", {"decisions": []})]),  # no decision for the candidate
    lambda stranger: Step(tool_calls=[("decide", {"decisions": [{"candidate": 1, "action": "MERGE"}]})]),
], ids=["unshown-id", "no-id", "other-agents-id", "no-such-candidate", "two-decisions", "none-given",
        "unknown-action"])
def test_a_bad_decision_is_sent_back_and_the_repaired_one_is_used(agentos_home: Path, bad: Any) -> None:
    other = agent_with([], name="bob")
    stranger = seed(other, "Bob lives in Rome")
    agent = agent_with([facts_call(fact("Ada lives in Berlin")), bad(stranger), decisions((1, "UPDATE", "F1"))])
    seed(agent, "Ada lives in Paris")
    say(agent, "I moved to Berlin")
    report = agent.consolidate()
    assert current(agent) == ["Ada lives in Berlin"] and report.batches[0].calls == 3
    assert [f.text for f in other.tier(FactTier).listing()] == ["Bob lives in Rome"]  # untouched


def test_a_provider_failure_leaves_the_batch_for_later(agentos_home: Path) -> None:
    agent = agent_with([RateLimitError("slow down"), facts_call(fact("Ada likes tea"))])
    say(agent, "I like tea")
    with pytest.raises(RateLimitError):
        agent.consolidate()
    assert agent.tier(FactTier).watermark() == -1 and current(agent) == []
    agent.consolidate()
    assert current(agent) == ["Ada likes tea"]


def test_a_crash_mid_consolidation_resumes_without_reading_a_message_twice(agentos_home: Path) -> None:
    seen: list[str] = []

    def extractor(request: ModelRequest) -> Step:
        text = request.messages[0].content
        seen.append(text)
        if "crash here" in text:
            raise KeyboardInterrupt  # the process dies while the model answers this batch
        return facts_call(fact(text.split(": ", 1)[1][:60]))

    agent = agent_with([], batch_messages=1)
    agent.roles.use("facts", ScriptedProvider(extractor))
    say(agent, "Ada likes tea", "crash here", "Ada likes cake")
    with pytest.raises(KeyboardInterrupt):
        agent.consolidate()
    assert current(agent) == ["Ada likes tea"]
    agent.close()
    again = Agent.load("ada", provider=ScriptedProvider([]))
    again.roles.use("facts", ScriptedProvider(lambda r: (seen.append(r.messages[0].content), facts_call())[1]))
    again.consolidate()
    after = seen[2:]
    assert len(after) == 2 and "crash here" in after[0] and "Ada likes cake" in after[1]
    assert not any("Ada likes tea" in s for s in after)  # the committed batch is not read again


def held_extractor() -> tuple[threading.Event, threading.Event, Any]:
    """An extraction model that says when it is asked, then answers only once released (a slow model)."""
    started, release = threading.Event(), threading.Event()

    def answer(request: ModelRequest) -> Step:
        started.set()
        release.wait(20)
        return facts_call(fact("Ada likes tea"))

    return started, release, answer


def test_consolidation_runs_in_the_background_and_never_delays_a_reply(agentos_home: Path) -> None:
    started, release, slow_extractor = held_extractor()
    agent = Agent.create("ada", provider=ScriptedProvider(["Nice!", "Sure."]),
                         settings=AgentSettings(facts=FactSettings(mode="turn")))
    agent.roles.use("facts", ScriptedProvider(slow_extractor))
    list(agent.turn("I like tea"))
    assert started.wait(10)  # the consolidator is now waiting on its model
    finished = [e for e in agent.turn("What's up?") if e.type == "turn_finished"]
    assert finished  # the next turn ran to its end while consolidation waited
    assert current(agent) == []
    release.set()
    assert agent.tier(FactTier).consolidator.wait_idle(20)
    assert current(agent) == ["Ada likes tea"]
    changed = [e for e in list(agent.idle()) if e.type == "facts_changed"]
    assert changed and changed[0].changes == ["+ Ada likes tea"]  # type: ignore[union-attr]


def test_batch_mode_waits_for_enough_turns(agentos_home: Path) -> None:
    agent = Agent.create("ada", provider=ScriptedProvider(["ok"] * 3),
                         settings=AgentSettings(facts=FactSettings(mode="batch", batch_turns=3)))
    calls: list[int] = []
    agent.roles.use("facts", ScriptedProvider(lambda r: (calls.append(1), facts_call())[1]))
    list(agent.turn("one"))
    list(agent.turn("two"))
    assert agent.tier(FactTier).consolidator.wait_idle(10) and calls == []
    list(agent.turn("three"))
    deadline = time.monotonic() + 10
    while not calls and time.monotonic() < deadline:
        agent.tier(FactTier).consolidator.wait_idle(1)
    assert agent.tier(FactTier).consolidator.wait_idle(10) and len(calls) == 1
    assert agent.tier(FactTier).watermark() == 5


def test_turned_off_it_calls_no_model(agentos_home: Path) -> None:
    agent = Agent.create("ada", provider=ScriptedProvider(["ok"]), settings=AgentSettings())
    agent.roles.use("facts", ScriptedProvider([]))  # would raise if called
    list(agent.turn("I like tea"))
    assert not agent.tier(FactTier).consolidating and agent.tier(FactTier).watermark() == -1


def test_closing_while_the_model_is_slow_writes_nothing_after_the_lease_goes(agentos_home: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    import agentos.memory.facts.consolidator as consolidator

    started, release, stuck = held_extractor()
    agent = Agent.create("ada", provider=ScriptedProvider(["Nice!"]),
                         settings=AgentSettings(facts=FactSettings(mode="turn")))
    agent.roles.use("facts", ScriptedProvider(stuck))
    list(agent.turn("I like tea"))
    assert started.wait(10)
    monkeypatch.setattr(consolidator, "STOP_WAIT_SECONDS", 0.2)
    agent.close()  # gives the agent back while the consolidator still waits on its model
    release.set()
    thread = agent.tier(FactTier).consolidator._thread
    assert thread is not None
    thread.join(20)
    assert not thread.is_alive()
    reopened = Agent.load("ada", read_only=True).tier(FactTier)
    assert reopened.listing() == [] and reopened.watermark() == -1  # the batch will be done again next time


@pytest.mark.usefixtures("allow_real_providers")
@pytest.mark.parametrize("family", ["openai", "anthropic"])
def test_the_real_providers_are_asked_with_the_answer_schema(agentos_home: Path, family: str) -> None:
    import json

    from mock_api import MockAPI, an_tool_reply, oa_text_reply, oa_tool_reply, sse_response

    from agentos.providers.anthropic_provider import AnthropicProvider
    from agentos.providers.openai_provider import OpenAIProvider

    answer = json.dumps({"facts": [{"text": "Ada likes tea", "subject": "User", "category": "Preference",
                                    "confidence": 0.9, "sources": [1]}]})
    if family == "openai":
        api = MockAPI(sse_response(oa_text_reply("{not json")), sse_response(oa_tool_reply("c1", "record_facts", answer)))
        provider: Any = OpenAIProvider("gpt-4.1-mini", api_key="sk-test", base_url="http://mock/v1",
                                       http_client=api.client())
    else:
        api = MockAPI(sse_response(an_tool_reply("t0", "record_facts", "{not json")),
                      sse_response(an_tool_reply("t1", "record_facts", answer)))
        provider = AnthropicProvider("claude-sonnet-4-5", api_key="sk-ant-test", base_url="http://mock",
                                     http_client=api.client())
    agent = agent_with([])
    agent.roles.use("facts", provider)
    say(agent, "I like tea")
    agent.consolidate()
    stored = agent.tier(FactTier).listing()
    assert [(f.text, f.subject, f.category) for f in stored] == [("Ada likes tea", "user", "preference")]
    first = api.body(0)
    tools = first["tools"]
    schema = tools[0]["function"]["parameters"] if family == "openai" else tools[0]["input_schema"]
    assert "$ref" not in json.dumps(schema) and schema["properties"]["facts"]["items"]["required"] == ["text"]
    assert "could not be used" in json.dumps(api.body(1)["messages"][-1])  # the repair went back over HTTP


def test_what_a_session_left_waiting_is_consolidated_after_the_next_turn_not_at_open(agentos_home: Path) -> None:
    agent = Agent.create("ada", provider=ScriptedProvider([]), settings=AgentSettings(facts=FactSettings(mode="turn")))
    say(agent, "I like tea")  # saved, never consolidated (no turn ended)
    agent.close()
    calls: list[str] = []
    again = Agent.load("ada", provider=ScriptedProvider(["Hello!"]))
    again.roles.use("facts", ScriptedProvider(lambda r: (calls.append(r.messages[0].content), facts_call())[1]))
    assert again.tier(FactTier).consolidator._thread is None and calls == []  # opening starts nothing and asks no model
    list(again.turn("hi"))
    assert again.tier(FactTier).consolidator.wait_idle(20)
    assert len(calls) == 1 and "I like tea" in calls[0] and "hi" in calls[0]
    assert again.tier(FactTier).watermark() == 2


def test_with_an_embedder_facts_are_stored_with_vectors_and_survive_a_reindex(agentos_home: Path) -> None:
    agent = Agent.create("ada", provider=ScriptedProvider([]),
                         settings=AgentSettings(embedder="hash:32", facts=FactSettings()))
    agent.roles.use("facts", ScriptedProvider([facts_call(fact("Ada lives in Paris")),
                                            facts_call(fact("Ada lives in Berlin")), decisions((1, "UPDATE", "F1"))]))
    say(agent, "I live in Paris")
    agent.consolidate()
    say(agent, "I moved to Berlin")
    agent.consolidate()
    tier = agent.tier(FactTier)
    assert current(agent) == ["Ada lives in Berlin"]
    rows = tier.table.to_arrow().to_pylist()
    assert len(rows) == 2 and all(len(r["vector"]) == 32 for r in rows)
    agent.tier(FactTier).correct(tier.listing()[0].id, "Ada lives in Munich")  # a stored row keeps its vector
    counts = agent.reindex("hash:64")
    assert counts["facts"] == 3
    again = agent.tier(FactTier)
    assert [f.text for f in again.search("where does Ada live").hits] == ["Ada lives in Munich"]
    assert all(len(r["vector"]) == 64 for r in again.table.to_arrow().to_pylist())


def test_a_lone_surrogate_in_an_answer_is_stored_as_a_replacement_character(agentos_home: Path) -> None:
    agent = agent_with([Step(tool_calls=[("record_facts", '{"facts": [{"text": "Ada likes \\ud800 tea"}]}')])])
    say(agent, "I like tea")
    agent.consolidate()
    assert current(agent) == ["Ada likes \ufffd tea"]


def test_a_batch_too_long_for_the_model_is_split(agentos_home: Path) -> None:
    from agentos.errors import ContextOverflowError

    sizes: list[int] = []

    def small_window(request: ModelRequest) -> Step:
        lines = request.messages[0].content.count("\n") + 1
        sizes.append(lines)
        if lines > 2:
            raise ContextOverflowError("prompt is too long")
        return facts_call()

    agent = agent_with([], batch_messages=8)
    agent.roles.use("facts", ScriptedProvider(small_window))
    say(agent, *[f"message number {i}" for i in range(5)])
    report = agent.consolidate()
    assert sizes[:3] == [5, 2, 2] and sum(b.messages for b in report.batches) == 5
    assert agent.tier(FactTier).watermark() == 4


def test_an_embedder_that_fails_writes_nothing_and_the_batch_is_done_later(agentos_home: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from agentos.errors import EmbedderError

    agent = Agent.create("ada", provider=ScriptedProvider([]),
                         settings=AgentSettings(embedder="hash:32", facts=FactSettings()))
    agent.roles.use("facts", ScriptedProvider([facts_call(fact("Ada likes tea")), facts_call(fact("Ada likes tea"))]))
    say(agent, "I like tea")
    embedder = agent.tiers.embedder()
    with monkeypatch.context() as patch:
        patch.setattr(type(embedder), "embed", lambda self, texts: (_ for _ in ()).throw(EmbedderError("down")))
        with pytest.raises(EmbedderError):
            agent.consolidate()
    tier = agent.tier(FactTier)
    assert tier.watermark() == -1 and tier.changes() == []  # nothing logged: the batch is not lost
    agent.consolidate()
    assert current(agent) == ["Ada likes tea"]


def test_two_candidates_replacing_one_fact_are_both_kept(agentos_home: Path) -> None:
    agent = agent_with([facts_call(fact("Ada lives in Berlin"), fact("Ada works at a Berlin bakery")),
                        decisions((1, "UPDATE", "F1"), (2, "UPDATE", "F2"))])
    seed(agent, "Ada lives and works in Paris")
    say(agent, "I moved to Berlin and work at a bakery")
    agent.consolidate()
    assert sorted(current(agent)) == ["Ada lives in Berlin", "Ada works at a Berlin bakery"]


def test_a_delete_ends_the_fact_when_it_was_said(agentos_home: Path) -> None:
    from datetime import UTC, datetime

    agent = agent_with([facts_call(fact("Ada has a car")), facts_call(fact("Ada sold her car")),
                        decisions((1, "DELETE", "F1"))])
    agent.add_history([Message(role="user", content="I have a car", created_at=datetime(2023, 1, 1, tzinfo=UTC))])
    agent.consolidate()
    agent.add_history([Message(role="user", content="I sold my car", created_at=datetime(2023, 6, 1, tzinfo=UTC))])
    agent.consolidate()
    tier = agent.tier(FactTier)
    assert [f.text for f in tier.listing(as_of=datetime(2023, 3, 1, tzinfo=UTC))] == ["Ada has a car"]
    assert tier.listing(as_of=datetime(2024, 1, 1, tzinfo=UTC)) == []


def test_one_message_too_long_for_the_model_is_skipped_with_a_notice(agentos_home: Path) -> None:
    from agentos.errors import ContextOverflowError

    agent = agent_with([ContextOverflowError("prompt is too long")])
    say(agent, "a very long message")
    report = agent.consolidate()
    assert report.batches[0].skipped and "too long for the model" in (report.batches[0].skipped or "")
    assert agent.tier(FactTier).watermark() == 0


def test_after_a_reindex_background_consolidation_uses_the_new_embedder(agentos_home: Path) -> None:
    agent = Agent.create("ada", provider=ScriptedProvider(["ok", "ok"]),
                         settings=AgentSettings(embedder="hash:32", facts=FactSettings(mode="turn")))
    agent.roles.use("facts", ScriptedProvider([facts_call(fact("Ada likes tea")), facts_call(fact("Ada likes jazz")),
                                            decisions((1, "ADD", None))]))
    list(agent.turn("I like tea"))
    assert agent.tier(FactTier).consolidator.wait_idle(20)
    agent.reindex("hash:64")
    list(agent.turn("I like jazz"))
    assert agent.tier(FactTier).consolidator.wait_idle(20) and agent.tier(FactTier).consolidator.last_error is None
    assert sorted(current(agent)) == ["Ada likes jazz", "Ada likes tea"]
    assert agent.tier(FactTier).count_current() == 2  # the agent's own tier sees the consolidator's writes


def test_after_a_rewind_background_consolidation_reads_the_new_turns(agentos_home: Path) -> None:
    seen: list[str] = []
    agent = Agent.create("ada", provider=ScriptedProvider(["ok"] * 5),
                         settings=AgentSettings(facts=FactSettings(mode="turn")))
    agent.roles.use("facts", ScriptedProvider(lambda r: (seen.append(r.messages[0].content), facts_call())[1]))
    for text in ("one", "two", "three"):
        list(agent.turn(text))
        assert agent.tier(FactTier).consolidator.wait_idle(20)
    agent.rewind(1)
    for text in ("four", "five"):
        list(agent.turn(text))
        assert agent.tier(FactTier).consolidator.wait_idle(20)
    after = "\n".join(seen[-2:])
    assert "four" in after and "five" in after and "two" not in after
    assert agent.tier(FactTier).watermark() == 5
