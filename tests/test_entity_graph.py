"""The entity graph tier: links written with steps, discarded with them, rebuilt by reindex, ranked with one- and
two-hop expansion, and never failing a search."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from agentos import Agent
from agentos.agent.agent import open_store
from agentos.agent.state import AgentSettings
from agentos.errors import StorageError
from agentos.memory.entity_graph import EntityGraphTier, entities_table_name, links_table_name
from agentos.memory.recall import RecallTier
from agentos.messages import Message
from agentos.portable.archive import export_agent, import_agent
from agentos.providers import ScriptedProvider, Step

GRAPH_ON = {"paths": ["keyword", "graph"]}
T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
CHAIN = [  # each names something the next one names too
    "My sister Beatrix lives in Porto.",
    "Beatrix works at the Bank of Portugal.",
    "The Bank of Portugal sponsors the Lisbon Marathon.",
    "I ran the Lisbon Marathon with Tom.",
    "We had soup for lunch.",
]


def graph_agent(name: str = "sam", replies: list[Any] | None = None, **settings: Any) -> Agent:
    return Agent.create(name, provider=ScriptedProvider(replies or []),
                        settings=AgentSettings(embedder="none", search=settings.get("search", GRAPH_ON)))


def graph(agent: Agent) -> EntityGraphTier:
    return agent.tier(EntityGraphTier)


def link_rows(agent: Agent) -> list[dict[str, Any]]:
    table = agent.store.db.existing(links_table_name(agent.id))
    if table is None:
        return []
    table.checkout_latest()
    return list(table.to_arrow().to_pylist())


def say_all(agent: Agent, texts: list[str], name: str | None = None) -> list[Message]:
    """Save messages as finished steps would, a minute apart."""
    messages = [Message(id=f"m{i}", role="user", content=t, name=name, created_at=T0 + timedelta(minutes=i))
                for i, t in enumerate(texts)]
    agent.add_history(messages)
    return messages


def test_links_are_written_with_each_step_and_tool_traffic_is_left_out() -> None:
    replies = [Step(tool_calls=[("conversation_search", {"query": "Porto"})]), "Your sister Beatrix lives in Porto."]
    agent = graph_agent(replies=replies)
    list(agent.turn("My sister Beatrix moved to Porto."))
    rows = link_rows(agent)
    by_role = {(r["role"], r["entity_key"]) for r in rows}
    assert by_role == {("user", "user"), ("user", "user:sister"), ("user", "beatrix"), ("user", "porto"),
                       ("assistant", "user:sister"), ("assistant", "beatrix"), ("assistant", "porto")}
    assert len({r["message_id"] for r in rows}) == 2  # the question and the reply; not the tool call or its result
    assert not graph(agent).tools() and not graph(agent).metadata(None)  # type: ignore[arg-type]


def test_the_graph_is_off_by_default_and_writes_nothing() -> None:
    agent = Agent.create("plain", provider=ScriptedProvider(["Noted."]), settings=AgentSettings(embedder="none"))
    list(agent.turn("My sister Beatrix lives in Porto."))
    assert not graph(agent).in_use and not link_rows(agent)
    assert graph(agent).ranked_messages("Beatrix") == [] and graph(agent).last_error is None
    assert "graph" not in agent.reindex("none")


def test_direct_matches_rank_by_entities_matched_then_rarity_then_recency() -> None:
    agent = graph_agent()
    say_all(agent, ["Oslo and Bergen in one trip.", "Oslo again.", "Bergen once.", "Bergen twice.", "Bergen thrice."])
    assert graph(agent).ranked_messages("Oslo or Bergen?", hops=0) == ["m0", "m1", "m4", "m3", "m2"]


def test_my_sister_is_found_for_a_named_user_and_expansion_follows_one_and_two_hops() -> None:
    agent = graph_agent()
    say_all(agent, CHAIN, name="Ann")
    tier = graph(agent)
    assert tier.ranked_messages("Where does my sister live?", hops=0) == ["m0"]  # "my": the user, who is Ann
    assert tier.ranked_messages("Where does Ann's sister live?", hops=0) == ["m0"]
    assert tier.ranked_messages("Where does the user's sister live?", hops=1) == ["m0", "m1"]  # via Beatrix
    assert tier.ranked_messages("Where does my sister live?") == ["m0", "m1", "m2"]  # then via the Bank of Portugal
    assert tier.ranked_messages("Where does my sister live?", limit=2) == ["m0", "m1"]
    assert tier.ranked_messages("what about beatrix") == ["m1", "m0", "m2", "m3"]  # any case; m3 via the Marathon
    assert tier.ranked_messages("soup") == [] and tier.ranked_messages("") == []
    assert tier.ranked_messages("What did I say?") == []  # only the speaker, who is named everywhere: nothing


def test_an_unnamed_users_sister_is_user_sister() -> None:
    agent = graph_agent()
    say_all(agent, CHAIN)
    assert {r["entity_key"] for r in link_rows(agent)} >= {"user", "user:sister"}
    assert graph(agent).ranked_messages("my sister", hops=0) == ["m0"]


def test_a_rewind_discards_the_links_of_the_messages_it_takes_back() -> None:
    agent = graph_agent(replies=["Noted.", "Noted too."])
    list(agent.turn("Beatrix lives in Porto."))
    list(agent.turn("Beatrix loves Lisbon."))
    assert len(graph(agent).ranked_messages("Beatrix", hops=0)) == 2
    agent.rewind(1)
    kept = {r["entity_key"] for r in link_rows(agent)}
    assert "lisbon" not in kept and "porto" in kept
    assert len(graph(agent).ranked_messages("Beatrix", hops=0)) == 1


def test_discard_removes_a_steps_links_and_the_graph_reads_again() -> None:
    agent = graph_agent()
    messages = say_all(agent, CHAIN[:2])
    tier = graph(agent)
    assert tier.ranked_messages("Beatrix", hops=0) == ["m1", "m0"]
    tier.discard([messages[1].id])
    assert tier.ranked_messages("Beatrix", hops=0) == ["m0"]
    assert {r["message_id"] for r in link_rows(agent)} == {"m0"}


def test_reindex_builds_the_graph_of_an_agent_that_had_none() -> None:
    agent = graph_agent(search={"paths": ["keyword"]})
    say_all(agent, CHAIN, name="Ann")
    assert not link_rows(agent)
    agent.update_settings(search=GRAPH_ON)
    seen: list[tuple[str, int, int]] = []
    assert agent.reindex("none", progress=lambda *p: seen.append(p))["graph"] == len(CHAIN)
    assert ("entity graph", len(CHAIN), len(CHAIN)) in seen
    assert graph(agent).ranked_messages("Where does my sister live?") == ["m0", "m1", "m2"]
    before = link_rows(agent)
    assert agent.reindex("none")["graph"] == len(CHAIN)  # again: the same links, not twice as many
    assert sorted(map(str, link_rows(agent))) == sorted(map(str, before))


def test_the_entities_summary_is_written_on_close_and_repaired_when_stale() -> None:
    agent = graph_agent()
    say_all(agent, CHAIN, name="Ann")
    agent.close()
    summary = agent.store.db.existing(entities_table_name(agent.id))
    rows = {r["key"]: r for r in summary.to_arrow().to_pylist()}
    assert rows["ann"]["aliases"] == ["user"] and rows["ann"]["kind"] == "speaker" and rows["ann"]["mentions"] == 2
    assert rows["beatrix"]["mentions"] == 2 and rows["beatrix"]["first_seen"] == T0
    assert rows["ann:sister"]["name"] == "My sister"
    agent.store.db.drop(entities_table_name(agent.id))  # as if a crash came before the summary was written
    again = Agent.load("sam", provider=ScriptedProvider([]))
    assert again.store.db.count_rows(entities_table_name(again.id)) == len(rows)
    assert [e["key"] for e in graph(again).entities()][:2] == ["ann", "bank of portugal"]


def test_a_reader_sees_the_graph_and_reads_it_again_when_it_changes() -> None:
    writer = graph_agent()
    say_all(writer, CHAIN[:2])
    reader = Agent.load("sam", read_only=True)
    assert graph(reader).ranked_messages("Beatrix", hops=0) == ["m1", "m0"]
    writer.add_history([Message(id="m9", role="user", content="Beatrix again.", created_at=T0 + timedelta(hours=1))])
    assert graph(reader).ranked_messages("Beatrix", hops=0) == ["m9", "m1", "m0"]


def test_a_storage_failure_gives_no_list_and_search_still_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    agent = graph_agent()
    say_all(agent, CHAIN)
    tier = graph(agent)
    tier._graph = None  # read again at the next search

    def broken(name: str) -> None:
        raise StorageError("could not read the entity graph: disk on fire")

    monkeypatch.setattr(agent.store.db, "existing", broken)
    assert tier.ranked_messages("Beatrix") == []
    assert tier.last_error is not None and "disk on fire" in tier.last_error
    page = agent.tier(RecallTier).search("Beatrix", paths=["keyword", "graph"])
    assert {h.id for h in page.hits} == {"m0", "m1"}  # by keywords alone
    monkeypatch.undo()
    assert tier.ranked_messages("Beatrix", hops=0) == ["m1", "m0"] and tier.last_error is None
    page = agent.tier(RecallTier).search("Beatrix", paths=["keyword", "graph"])
    assert {h.id for h in page.hits} == {"m0", "m1", "m2", "m3"}  # and the graph's hops


def test_deleting_the_agent_removes_the_graph() -> None:
    agent = graph_agent()
    say_all(agent, CHAIN[:1])
    agent.close()
    Agent.delete("sam")
    assert agent.store.db.count_rows(links_table_name(agent.id)) is None
    assert agent.store.db.count_rows(entities_table_name(agent.id)) is None


def test_the_graph_travels_with_an_export(tmp_path: Path) -> None:
    agent = graph_agent()
    say_all(agent, CHAIN, name="Ann")
    agent.close()
    path = tmp_path / "sam.agentos"
    report = export_agent(open_store(tmp_path / "home"), "sam", path)
    assert report.rows["entity links"] == len(link_rows(agent))
    import_agent(open_store(tmp_path / "other"), path, name="copy")
    copy = Agent.load("copy", home=tmp_path / "other", provider=ScriptedProvider([]))
    assert graph(copy).ranked_messages("Where does my sister live?") == ["m0", "m1", "m2"]
