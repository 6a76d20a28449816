"""Fact memory as people and the agent use it: versions that supersede, as-of queries, user decisions and undo,
retention ranking, prune, crash repair, rewind, export and read-only access."""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agentos.agent.agent import Agent
from agentos.agent.state import AgentSettings
from agentos.errors import FactError, ReadOnlyAgentError
from agentos.memory.facts.retention import retention
from agentos.memory.facts.rows import Fact, FactChange
from agentos.memory.facts.settings import FactSettings
from agentos.memory.facts.tier import FactTier, fact_search
from agentos.messages import Message, new_id
from agentos.portable.archive import export_agent, import_agent
from agentos.providers.scripted import ScriptedProvider, Step

MARCH = datetime(2024, 3, 1, tzinfo=UTC)
JUNE = datetime(2024, 6, 1, tzinfo=UTC)


def make_agent(name: str = "ada", **facts: object) -> Agent:
    settings = AgentSettings(facts=FactSettings(**facts))  # type: ignore[arg-type]
    return Agent.create(name, provider=ScriptedProvider([]), settings=settings)


def add(tier: FactTier, text: str, *, when: datetime = MARCH, subject: str = "user", confidence: float = 0.9,
        sources: tuple[str, ...] = ()) -> Fact:
    fact = Fact(text=text, subject=subject, confidence=confidence, valid_from=when, source_ids=sources)
    tier.commit([FactChange(kind="add", by="consolidator", group_id=new_id("grp"), fact=fact)])
    stored = tier.get(fact.id)
    assert stored is not None
    return stored


def update(tier: FactTier, old: Fact, text: str, *, when: datetime) -> Fact:
    new = Fact(text=text, subject=old.subject, valid_from=when)
    tier.commit([FactChange(kind="update", by="consolidator", group_id=new_id("grp"), fact=new, old_fact_id=old.id)])
    stored = tier.get(new.id)
    assert stored is not None
    return stored


def texts(facts: list[Fact]) -> list[str]:
    return [f.text for f in facts]


def test_an_update_supersedes_the_old_fact_and_keeps_it(agentos_home: Path) -> None:
    tier = make_agent().tier(FactTier)
    old = add(tier, "Ada lives in Paris")
    new = update(tier, old, "Ada lives in Berlin", when=JUNE)
    assert texts(tier.listing()) == ["Ada lives in Berlin"]
    versions = tier.history(new.id)
    assert texts(versions) == ["Ada lives in Paris", "Ada lives in Berlin"]
    before = versions[0]
    assert before.status == "superseded" and before.valid_to == JUNE and before.superseded_by == new.id
    assert new.supersedes == old.id and new.valid_to is None
    assert tier.history(old.id) == versions  # the chain reads the same from either end


def test_a_chain_of_updates_answers_as_of_any_date(agentos_home: Path) -> None:
    tier = make_agent().tier(FactTier)
    first = add(tier, "Ada works at Acme", when=datetime(2023, 1, 1, tzinfo=UTC))
    second = update(tier, first, "Ada works at Globex", when=datetime(2023, 6, 1, tzinfo=UTC))
    update(tier, second, "Ada works at Initech", when=datetime(2024, 1, 1, tzinfo=UTC))
    at = {day: texts(tier.listing(as_of=datetime(*day, tzinfo=UTC))) for day in [(2022, 12, 1), (2023, 3, 1),
                                                                                  (2023, 9, 1), (2024, 5, 1)]}
    assert at == {(2022, 12, 1): [], (2023, 3, 1): ["Ada works at Acme"], (2023, 9, 1): ["Ada works at Globex"],
                  (2024, 5, 1): ["Ada works at Initech"]}
    assert texts(tier.search("works", as_of=datetime(2023, 9, 1, tzinfo=UTC)).hits) == ["Ada works at Globex"]
    assert len(tier.listing(include_ended=True)) == 3


def test_fact_search_shows_dates_and_sources_and_as_of(agentos_home: Path) -> None:
    agent = make_agent()
    said = Message(role="user", content="I moved to Berlin last week", created_at=JUNE)
    agent.add_history([said])
    tier = agent.tier(FactTier)
    old = add(tier, "Ada lives in Paris")
    new = Fact(text="Ada lives in Berlin", valid_from=JUNE, source_ids=(said.id,))
    tier.commit([FactChange(kind="update", by="consolidator", group_id="g", fact=new, old_fact_id=old.id)])
    shown = fact_search.fn("where does Ada live", agent.tool_context(None))
    assert "Ada lives in Berlin" in shown and "since 2024-06-01" in shown and "Paris" not in shown
    assert '"I moved to Berlin last week"' in shown
    then = fact_search.fn("Ada live", agent.tool_context(None), as_of="2024-04-01")
    assert "Ada lives in Paris" in then and "until 2024-06-01 (superseded)" in then and "Berlin" not in then


def test_a_retraction_and_its_undo(agentos_home: Path) -> None:
    tier = make_agent().tier(FactTier)
    fact = add(tier, "Ada is allergic to cats")
    change = tier.retract(fact.id, "it was a joke")
    assert tier.listing() == []
    kept = tier.get(fact.id)
    assert kept is not None and kept.status == "retracted" and kept.ended_by == change.id
    logged = tier.changes()[-1]
    assert (logged.kind, logged.by, logged.reason) == ("retract", "user", "it was a joke")
    tier.undo(change.id)
    assert texts(tier.listing()) == ["Ada is allergic to cats"]
    with pytest.raises(FactError, match="already undone"):
        tier.undo(change.id)


def test_a_correction_is_a_user_version_and_undo_brings_the_old_one_back(agentos_home: Path) -> None:
    tier = make_agent().tier(FactTier)
    fact = add(tier, "Ada has two cats", sources=("msg-1",))
    change = tier.correct(fact.id, "Ada has three cats")
    current = tier.listing()
    assert texts(current) == ["Ada has three cats"]
    assert current[0].confidence == 1.0 and current[0].source_ids == ("msg-1",)
    assert tier.changes()[-1].by == "user"
    tier.undo(change.id)
    assert texts(tier.listing()) == ["Ada has two cats"]
    undone = tier.get(current[0].id)
    assert undone is not None and undone.status == "undone"
    assert [(f.text, f.status) for f in tier.history(fact.id)] == [("Ada has two cats", "current"),
                                                                   ("Ada has three cats", "undone")]
    assert tier.listing(as_of=datetime.now(UTC)) == tier.listing()  # an undone version was never believed


def test_undo_refuses_when_a_later_change_built_on_it(agentos_home: Path) -> None:
    tier = make_agent().tier(FactTier)
    fact = add(tier, "Ada drinks tea")
    first = tier.correct(fact.id, "Ada drinks green tea")
    assert first.fact is not None
    tier.correct(first.fact.id, "Ada drinks jasmine tea")
    with pytest.raises(FactError, match="undo that first"):
        tier.undo(first.id)
    assert texts(tier.listing()) == ["Ada drinks jasmine tea"]  # nothing changed


def test_unknown_facts_and_changes_are_clear_errors(agentos_home: Path) -> None:
    tier = make_agent().tier(FactTier)
    with pytest.raises(FactError, match="no fact 'fact-nope'"):
        tier.correct("fact-nope", "x y z")
    with pytest.raises(FactError, match="no change 'chg-nope'"):
        tier.undo("chg-nope")
    fact = add(tier, "Ada sings")
    tier.retract(fact.id)
    with pytest.raises(FactError, match="no longer current"):
        tier.retract(fact.id)


def test_retention_ranks_recent_and_often_retrieved_facts_first(agentos_home: Path) -> None:
    now = datetime.now(UTC)
    fresh = Fact(text="a", valid_from=now - timedelta(days=1))
    stale = Fact(text="b", valid_from=now - timedelta(days=200))
    used = replace(stale, retrieved_count=9, last_retrieved_at=now - timedelta(days=20))
    assert retention(fresh, now) > retention(used, now) > retention(stale, now)
    tier = make_agent().tier(FactTier)
    add(tier, "Ada plays chess on Sundays", when=now - timedelta(days=300))
    add(tier, "Ada plays chess on Fridays", when=now - timedelta(days=2))
    ranked = texts(tier.search("Ada plays chess").hits)  # the same words: retention breaks the tie
    assert ranked == ["Ada plays chess on Fridays", "Ada plays chess on Sundays"]


def test_retrievals_are_counted_when_the_agent_closes(agentos_home: Path) -> None:
    agent = make_agent()
    fact = add(agent.tier(FactTier), "Ada likes jazz")
    fact_search.fn("jazz", agent.tool_context(None))
    fact_search.fn("jazz", agent.tool_context(None))
    agent.close()
    again = Agent.load("ada", read_only=True).tier(FactTier).get(fact.id)
    assert again is not None and again.retrieved_count == 2 and again.last_retrieved_at is not None


def test_prune_lists_first_then_invalidates_and_can_be_undone(agentos_home: Path) -> None:
    tier = make_agent().tier(FactTier)
    add(tier, "Ada once liked disco", when=datetime(2020, 1, 1, tzinfo=UTC), confidence=0.4)
    add(tier, "Ada likes jazz", when=datetime.now(UTC), confidence=0.95)
    with pytest.raises(FactError, match="say what to prune"):
        tier.prunable(older_than=None, min_confidence=None)
    doomed = tier.prunable(older_than=datetime(2023, 1, 1, tzinfo=UTC), min_confidence=None)
    assert texts(doomed) == ["Ada once liked disco"]
    assert len(tier.listing()) == 2  # listing what would go changes nothing
    assert texts(tier.prunable(older_than=None, min_confidence=0.5)) == ["Ada once liked disco"]
    changes = tier.prune(doomed, "pruned: older than 2023-01-01")
    assert texts(tier.listing()) == ["Ada likes jazz"]
    pruned = tier.get(doomed[0].id)
    assert pruned is not None and pruned.status == "invalidated"
    tier.undo(changes[0].id)
    assert len(tier.listing()) == 2


def test_a_crash_between_the_log_and_the_facts_is_finished_on_open(agentos_home: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    agent = make_agent()
    tier = agent.tier(FactTier)
    old = add(tier, "Ada lives in Paris")
    new = Fact(text="Ada lives in Berlin", valid_from=JUNE)
    with monkeypatch.context() as patch:
        patch.setattr(FactTier, "_apply", lambda self, facts: (_ for _ in ()).throw(OSError("killed")))
        with pytest.raises(OSError):
            tier.commit([FactChange(kind="update", by="consolidator", group_id="g", fact=new, old_fact_id=old.id)])
    assert texts(tier.listing()) == ["Ada lives in Paris"]  # logged, not yet applied
    add(tier, "Ada likes cake")  # the process goes on: the next change finishes the one left half-written first
    assert sorted(texts(tier.listing())) == ["Ada likes cake", "Ada lives in Berlin"]
    with monkeypatch.context() as patch:
        patch.setattr(FactTier, "_apply", lambda self, facts: (_ for _ in ()).throw(OSError("killed")))
        with pytest.raises(OSError):
            add(tier, "Ada likes jazz")
    agent.close()
    reopened = Agent.load("ada", provider=ScriptedProvider([])).tier(FactTier)  # a crash: finished on open
    assert sorted(texts(reopened.listing())) == ["Ada likes cake", "Ada likes jazz", "Ada lives in Berlin"]
    versions = reopened.history(new.id)
    assert [f.status for f in versions] == ["superseded", "current"]
    assert reopened.repair() == 0  # finished once; nothing to do again


def test_rewind_undoes_what_consolidation_made_of_the_taken_back_messages(agentos_home: Path) -> None:
    agent = Agent.create("ada", provider=ScriptedProvider(["Hello!", "Noted.", "Oh, a cat!"]),
                         settings=AgentSettings(facts=FactSettings(mode="off")))
    list(agent.turn("Hi, I am Ada"))
    list(agent.turn("I have a dog called Rex"))
    extract = Step(tool_calls=[("record_facts", {"facts": [
        {"text": "Ada has a dog called Rex", "confidence": 0.9, "sources": [3]}]})])
    agent.roles.use("facts", ScriptedProvider([extract]))
    report = agent.consolidate()
    tier = agent.tier(FactTier)
    assert texts(tier.listing()) == ["Ada has a dog called Rex"] and tier.watermark() == 3
    agent.rewind(1)  # back to after the first turn: the second is taken back
    assert tier.listing() == []
    assert tier.get(report.changes[0].fact_id or "") is not None  # kept, marked undone
    assert tier.watermark() == 1  # the messages said after the point will be read again
    list(agent.turn("Actually I have a cat called Tom"))
    seen: list[str] = []
    agent.roles.use("facts", ScriptedProvider(lambda r: (seen.append(r.messages[0].content), Step(tool_calls=[
        ("record_facts", {"facts": [{"text": "Ada has a cat called Tom", "sources": [1]}]})]))[1]))
    agent.consolidate()
    assert len(seen) == 1 and "cat called Tom" in seen[0] and "Rex" not in seen[0] and "Noted" not in seen[0]
    assert texts(tier.listing()) == ["Ada has a cat called Tom"] and tier.watermark() == 3


def test_fact_tables_travel_in_an_export(agentos_home: Path, tmp_path: Path) -> None:
    agent = make_agent()
    tier = agent.tier(FactTier)
    old = add(tier, "Ada lives in Paris")
    update(tier, old, "Ada lives in Berlin", when=JUNE)
    agent.close()
    export_agent(agent.store, "ada", tmp_path / "ada.agentos")
    import_agent(agent.store, tmp_path / "ada.agentos", name="ada2")
    copy = Agent.load("ada2", read_only=True).tier(FactTier)
    assert texts(copy.listing()) == ["Ada lives in Berlin"]
    assert len(copy.listing(include_ended=True)) == 2 and len(copy.changes()) == 2


def test_a_reader_sees_facts_and_cannot_change_them(agentos_home: Path) -> None:
    writer = make_agent()
    fact = add(writer.tier(FactTier), "Ada likes tea")
    reader = Agent.load("ada", read_only=True).tier(FactTier)
    assert texts(reader.listing()) == ["Ada likes tea"]
    add(writer.tier(FactTier), "Ada likes cake")
    assert len(reader.listing()) == 2  # a reader reads the latest version
    with pytest.raises(ReadOnlyAgentError):
        reader.retract(fact.id)


def test_an_agent_without_facts_offers_no_fact_tool(agentos_home: Path) -> None:
    agent = make_agent()
    assert "fact_search" not in [t.name for t in agent.tools]
    assert "Fact memory" not in agent.system_prompt()
    agent.update_settings(facts=FactSettings(mode="turn"))
    assert "fact_search" in [t.name for t in agent.tools]
    assert "Fact memory: 0 current facts" in agent.system_prompt()


def test_facts_about_the_user_join_the_prompt_only_within_their_budget(agentos_home: Path) -> None:
    agent = make_agent(mode="turn")
    tier = agent.tier(FactTier)
    now = datetime.now(UTC)
    tier.commit([FactChange(kind="add", by="consolidator", group_id="g", fact=Fact(
        text=f"Ada fact number {i} is about her hobby number {i}", valid_from=now - timedelta(days=i))) for i in range(40)])
    add(tier, "Rex is a dog", subject="Rex")
    assert "Facts about the user" not in agent.system_prompt()  # off by default
    agent.update_settings(facts=agent.settings.facts.model_copy(update={"prompt_tokens": 60}))
    prompt = agent.system_prompt()
    shown = [line for line in prompt.splitlines() if line.startswith("- Ada fact number")]
    assert 0 < len(shown) < 40
    assert shown[0].startswith("- Ada fact number 0 ")  # the freshest first
    assert "Rex is a dog" not in prompt  # facts about the user only


def test_a_letta_file_export_says_it_leaves_the_facts_out(agentos_home: Path, tmp_path: Path) -> None:
    from agentos.portable.letta_export import export_af

    agent = make_agent()
    add(agent.tier(FactTier), "Ada likes tea")
    agent.close()
    report = export_af(agent.store, "ada", tmp_path / "ada.af")
    assert any(line.startswith("fact memory (1 current fact,") for line in report.not_exported)


def test_fact_search_embeds_the_query_beside_its_reads_keeps_the_vector_and_falls_back_to_keywords(
        agentos_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentos.errors import EmbedderError

    agent = Agent.create("ada", provider=ScriptedProvider([]), settings=AgentSettings(embedder="hash:32"))
    tier = agent.tier(FactTier)
    add(tier, "Ada plays the cello")
    embedder = agent.tiers.embedder()
    asked: list[str] = []
    embed_query = type(embedder).embed_query

    def embedded(self: object, queries: list[str]) -> object:
        asked.append(threading.current_thread().name)
        return embed_query(self, queries)  # type: ignore[arg-type]

    monkeypatch.setattr(type(embedder), "embed_query", embedded)
    found = tier.search("cello")
    assert texts(found.hits) == ["Ada plays the cello"] and found.note is None
    assert texts(tier.search("cello").hits) == ["Ada plays the cello"]
    assert asked == ["agentos-query-vector"]  # on a thread of its own, once: the second search reused the vector

    def down(self: object, texts: object) -> None:
        raise EmbedderError("the embedding service is down")

    monkeypatch.setattr(type(embedder), "embed_query", down)
    page = tier.search("plays cello")
    assert texts(page.hits) == ["Ada plays the cello"] and "unavailable" in (page.note or "")
