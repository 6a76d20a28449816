"""Skipped batches stay retryable: a batch without a usable answer is logged with its messages, the reason and the
model, read again when asked (`retry_skipped`) and by itself once another model is asked; what it finds then is
consolidated before the messages after it, and the watermark never moves back. Real LanceDB in a temp home."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from agentos.agent.agent import Agent
from agentos.agent.state import AgentSettings
from agentos.errors import FactError
from agentos.memory.facts.rows import FactChange
from agentos.memory.facts.settings import FactSettings
from agentos.memory.facts.tier import FactTier
from agentos.messages import Message, new_id
from agentos.providers.scripted import ScriptedProvider, ScriptItem, Step

BAD = ["not json", "still not json", "{bad"]  # three answers without a usable one: the batch is skipped


def facts_call(*texts: str) -> Step:
    return Step(tool_calls=[("record_facts", {"facts": [{"text": t, "confidence": 0.9, "sources": [1]}
                                                        for t in texts]})])


def model(script: Sequence[ScriptItem], name: str = "weak") -> ScriptedProvider:
    return ScriptedProvider(script, model=name)


def agent_with(script: Sequence[ScriptItem], name: str = "weak") -> Agent:
    agent = Agent.create("ada", provider=ScriptedProvider([]), settings=AgentSettings(facts=FactSettings(max_repairs=2)))
    agent.roles.use("facts", model(script, name))
    return agent


def say(agent: Agent, *texts: str) -> None:
    agent.add_history([Message(role="user", content=t) for t in texts])


def current(agent: Agent) -> list[str]:
    return sorted(f.text for f in agent.tier(FactTier).listing())


def test_a_skipped_batch_is_kept_with_its_messages_reason_and_model(agentos_home: Path) -> None:
    agent = agent_with(BAD)
    say(agent, "I like tea", "I live in Lisbon")
    report = agent.consolidate()
    assert report.batches[0].skipped and current(agent) == []
    tier = agent.tier(FactTier)
    [skip] = tier.skipped()
    assert skip.kind == "skip" and skip.model == "scripted/weak" and "not valid JSON" in skip.reason
    assert len(skip.message_ids) == 2 and skip.through_seq == 1 and tier.watermark() == 1
    agent.close()
    reread = Agent.load("ada", read_only=True).tier(FactTier).skipped()  # the model is stored with the skip
    assert [(s.id, s.model, s.reason) for s in reread] == [(skip.id, "scripted/weak", skip.reason)]
    assert not reread[0].reason.endswith("]")


def test_the_same_model_reads_a_skipped_batch_again_only_when_asked(agentos_home: Path) -> None:
    agent = agent_with(BAD)
    say(agent, "I like tea")
    agent.consolidate()
    tier = agent.tier(FactTier)
    skip = tier.skipped()[0]
    assert agent.consolidate().batches == []  # nothing new, and the weak model is not asked again by itself
    assert tier.consolidator.retryable() == [] and tier.consolidator.retryable(everything=True) == [skip]
    agent.roles.use("facts", model([facts_call("Ada likes tea")]))  # the same model, answering this time
    report = tier.consolidate(retry_skipped=True)
    assert current(agent) == ["Ada likes tea"] and tier.skipped() == []
    assert report.batches[0].retried == skip.id and report.count("add") == 1
    assert "1 skipped batch(es) read again" in report.summary()
    retry = [c for c in tier.changes() if c.kind == "retry"]
    assert [(c.target_change, c.message_ids) for c in retry] == [(skip.id, skip.message_ids)]
    added = tier.listing()[0]
    assert added.source_ids == skip.message_ids and tier.watermark() == 0  # the watermark did not move


def test_another_model_reads_skipped_batches_again_by_itself_before_newer_messages(agentos_home: Path) -> None:
    agent = agent_with(BAD)
    say(agent, "I live in Lisbon")
    agent.consolidate()
    say(agent, "I moved to Porto")
    better = model([facts_call("Ada lives in Lisbon"), facts_call("Ada lives in Porto"),
                    Step(tool_calls=[("decide", {"decisions": [{"candidate": 1, "action": "UPDATE", "fact": "F1"}]})])],
                   name="better")
    agent.roles.use("facts", better)
    report = agent.consolidate()
    assert current(agent) == ["Ada lives in Porto"]  # the older message first: Porto supersedes Lisbon
    assert [b.retried is not None for b in report.batches] == [True, False]
    tier = agent.tier(FactTier)
    history = tier.history(tier.listing()[0].id)
    assert [(f.text, f.status) for f in history] == [("Ada lives in Lisbon", "superseded"),
                                                     ("Ada lives in Porto", "current")]
    assert tier.skipped() == [] and tier.watermark() == 1 and better.remaining == 0


def test_a_batch_skipped_again_is_logged_again_with_the_new_model_and_moves_no_watermark(agentos_home: Path) -> None:
    agent = agent_with(BAD)
    say(agent, "I like tea")
    agent.consolidate()
    say(agent, "I like jazz")
    agent.roles.use("facts", model([*BAD, facts_call("Ada likes jazz")], name="other"))
    report = agent.consolidate()
    assert report.batches[0].skipped and report.batches[0].retried and current(agent) == ["Ada likes jazz"]
    tier = agent.tier(FactTier)
    [again] = tier.skipped()
    assert again.model == "scripted/other" and again.through_seq is None and tier.watermark() == 1
    assert tier.consolidator.retryable() == []  # the model that skipped it last is the one asked now
    add = Step(tool_calls=[("decide", {"decisions": [{"candidate": 1, "action": "ADD"}]})])
    agent.roles.use("facts", model([facts_call("Ada likes tea"), add], name="third"))
    agent.consolidate()
    assert current(agent) == ["Ada likes jazz", "Ada likes tea"] and tier.skipped() == []


def test_a_skip_logged_before_models_were_recorded_is_read_again(agentos_home: Path) -> None:
    agent = agent_with([facts_call("Ada likes tea")])
    said = Message(role="user", content="I like tea")
    agent.add_history([said])
    message_id = said.id
    tier = agent.tier(FactTier)
    tier.commit([FactChange(kind="skip", by="consolidator", group_id=new_id("grp"), message_ids=(message_id,),
                            through_seq=0, reason="no usable answer after 3 tries: the answer holds no JSON")])
    assert tier.skipped()[0].model == "" and tier.consolidator.pending(1) == 0
    agent.consolidate()
    assert current(agent) == ["Ada likes tea"] and tier.skipped() == []


def test_background_consolidation_reads_again_what_another_model_skipped(agentos_home: Path) -> None:
    agent = Agent.create("ada", provider=ScriptedProvider(["ok", "ok"]),
                         settings=AgentSettings(facts=FactSettings(mode="turn", max_repairs=0)))
    agent.roles.use("facts", model(["no json"]))
    list(agent.turn("I like tea"))
    tier = agent.tier(FactTier)
    assert tier.consolidator.wait_idle(30) and [c.kind for c in tier.changes()] == ["skip"]
    agent.roles.use("facts", model([facts_call("Ada likes tea"), facts_call()], name="better"))
    list(agent.turn("hello"))
    assert tier.consolidator.wait_idle(30) and tier.consolidator.last_error is None
    assert current(agent) == ["Ada likes tea"] and tier.skipped() == []


def test_undoing_a_skip_says_how_to_read_it_again(agentos_home: Path) -> None:
    agent = agent_with(BAD)
    say(agent, "I like tea")
    agent.consolidate()
    tier = agent.tier(FactTier)
    skip = tier.skipped()[0]
    with pytest.raises(FactError) as raised:
        tier.undo(skip.id)
    assert "is a skipped batch" in str(raised.value) and "consolidate --retry-skipped" in str(raised.value)
    assert "scripted/weak" in str(raised.value)
    assert tier.skipped() == [skip]  # nothing was written


def test_a_skipped_batch_whose_messages_are_gone_is_settled_without_asking(agentos_home: Path) -> None:
    agent = agent_with([])  # asking the model would exhaust the script
    tier = agent.tier(FactTier)
    tier.commit([FactChange(kind="skip", by="consolidator", group_id=new_id("grp"), message_ids=("msg-gone",),
                            through_seq=-1, reason="no usable answer", model="scripted/weak")])
    report = tier.consolidate(retry_skipped=True)
    assert [(b.messages, b.skipped, b.changes) for b in report.batches] == [(0, None, [])]
    assert tier.skipped() == [] and tier.watermark() == -1
