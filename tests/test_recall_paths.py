"""Recall search over several ranked paths: query variants, neighbouring turns, weights from settings, and a path
that fails or is missing never failing the search."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agentos.agent.agent import Agent
from agentos.agent.state import AgentSettings, SearchSettings
from agentos.memory.recall import RecallTier
from agentos.messages import Message
from agentos.providers.scripted import ScriptedProvider
from agentos.retrieval.query import content_words, variants
from agentos.retrieval.recall_paths import chosen_paths

START = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)


def conversation(agent: Agent, turns: list[tuple[str, str]]) -> list[Message]:
    messages = [Message(role=role, content=text, created_at=START + timedelta(minutes=i))  # type: ignore[arg-type]
                for i, (role, text) in enumerate(turns)]
    agent.add_history(messages)
    return messages


def test_question_words_are_dropped_and_names_kept() -> None:
    assert content_words("What did Caroline say about the adoption agency?") == ["Caroline", "adoption", "agency"]
    assert variants("What did Caroline research?") == ["Caroline research"]
    assert variants("adoption agency") == []  # nothing to drop: no variant


def test_an_answer_in_the_reply_to_a_matching_turn_is_found_through_its_neighbour(agentos_home: Path) -> None:
    agent = Agent.create("ada", provider=ScriptedProvider([]))
    filler = [("user", f"unrelated chat number {i} about the weather") for i in range(30)]
    turns = [*filler[:15], ("user", "Which city should I pick for the conference?"),
             ("assistant", "Lisbon, because flights are cheap in spring."), *filler[15:]]
    messages = conversation(agent, turns)
    answer = messages[16].id
    recall = agent.tier(RecallTier)
    alone = [h.id for h in recall.search("city for the conference", page_size=3, paths=["keyword"]).hits]
    assert answer not in alone  # the answer shares no word with the question
    with_neighbours = [h.id for h in recall.search("city for the conference", page_size=3,
                                                   paths=["keyword", "neighbours"]).hits]
    assert with_neighbours[0] == messages[15].id and answer in with_neighbours


def test_neighbours_respect_the_search_filters(agentos_home: Path) -> None:
    agent = Agent.create("ada", provider=ScriptedProvider([]))
    messages = conversation(agent, [("user", "tell me about the harbour"), ("assistant", "It is old and busy.")])
    recall = agent.tier(RecallTier)
    hits = [h.id for h in recall.search("harbour", paths=["keyword", "neighbours"], roles=["user"]).hits]
    assert hits == [messages[0].id]  # the assistant's neighbour is not a user message


def test_the_agents_search_settings_choose_the_paths(agentos_home: Path) -> None:
    agent = Agent.create("ada", provider=ScriptedProvider([]),
                         settings=AgentSettings(search=SearchSettings(paths=["keyword", "neighbours"])))
    messages = conversation(agent, [("user", "Which city should I pick for the conference?"),
                                    ("assistant", "Lisbon, because flights are cheap in spring.")])
    hits = [h.id for h in agent.tier(RecallTier).search("conference city").hits]
    assert hits == [messages[0].id, messages[1].id]


def test_unknown_paths_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown search path"):
        chosen_paths(["keyword", "telepathy"], ["keyword"])


def test_a_ranking_tier_that_fails_is_left_out(agentos_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agent = Agent.create("ada", provider=ScriptedProvider([]))
    messages = conversation(agent, [("user", "the harbour at dawn")])
    recall = agent.tier(RecallTier)

    class Broken:
        name = "graph"

        def ranked_messages(self, query: str, limit: int) -> list[str]:
            raise OSError("the graph's table is gone")

    monkeypatch.setattr(recall.ctx, "rankers", lambda: [Broken()])
    hits = recall.search("harbour", paths=["keyword", "graph"]).hits
    assert [h.id for h in hits] == [messages[0].id]


def test_a_time_in_the_question_lifts_the_messages_of_that_range(agentos_home: Path) -> None:
    agent = Agent.create("ada", provider=ScriptedProvider([]))
    old = Message(role="user", content="we planned the garden party", created_at=datetime(2024, 1, 10, tzinfo=UTC))
    new = Message(role="user", content="we planned the garden shed", created_at=datetime(2024, 5, 10, tzinfo=UTC))
    agent.add_history([old, new])
    recall = agent.tier(RecallTier)
    now = datetime(2024, 5, 20, tzinfo=UTC)
    question = "what did we plan for the garden in January"
    assert [h.id for h in recall.search(question, paths=["keyword", "time"], now=now).hits][0] == old.id
    assert len(recall.search(question, paths=["keyword", "time"], now=now).hits) == 2  # a boost, never a filter


def test_a_turn_said_after_the_time_asked_about_that_places_its_story_in_it_is_lifted(agentos_home: Path) -> None:
    agent = Agent.create("ada", provider=ScriptedProvider([]))
    day = datetime(2024, 5, 10, 15, tzinfo=UTC)
    told = Message(role="user", content="Yesterday I went to a concert in the city", created_at=day + timedelta(days=1))
    undated = Message(role="user", content="I love a concert in the city, a concert is the best",
                      created_at=day + timedelta(days=1, minutes=1))
    other_week = Message(role="user", content="Last week I went to a concert in the city",  # 29 April - 5 May
                         created_at=day + timedelta(days=1, minutes=2))
    whole_year = Message(role="user", content="This year I went to a concert in the city",  # too wide to place it
                         created_at=day + timedelta(days=1, minutes=3))
    later = Message(role="user", content="Last week I went to a concert in the city", created_at=day + timedelta(days=40))
    agent.add_history([told, undated, other_week, whole_year, later])
    recall = agent.tier(RecallTier)
    question = "Which concert did Ada see in the city on May 10, 2024?"  # no turn was said that day
    now = later.created_at
    assert [h.id for h in recall.search(question, paths=["keyword"], now=now).hits][0] != told.id
    assert [h.id for h in recall.search(question, paths=["time"], now=now).hits] == [told.id]
    ranked = [h.id for h in recall.search(question, paths=["keyword", "time"], now=now).hits]
    assert ranked[0] == told.id  # said the day after, of the day asked about
    assert len(ranked) == 5  # a boost, never a filter


def test_a_question_that_asks_when_lifts_the_turns_that_say_when(agentos_home: Path) -> None:
    agent = Agent.create("ada", provider=ScriptedProvider([]))
    start = datetime(2024, 5, 10, tzinfo=UTC)
    vague = Message(role="user", content="the pottery class is so much fun, pottery is great", created_at=start)
    dated = Message(role="user", content="I signed up for a pottery class yesterday",
                    created_at=start + timedelta(days=1))
    agent.add_history([vague, dated])
    recall = agent.tier(RecallTier)
    question = "When did Ada sign up for the pottery class?"
    assert [h.id for h in recall.search("pottery class pottery", paths=["keyword"]).hits][0] == vague.id
    assert [h.id for h in recall.search(question, paths=["keyword", "time"]).hits][0] == dated.id


def test_search_answers_with_keywords_when_the_embedder_fails(agentos_home: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from agentos.errors import EmbedderError

    agent = Agent.create("ada", provider=ScriptedProvider([]), settings=AgentSettings(embedder="hash:32"))
    messages = conversation(agent, [("user", "the harbour at dawn")])
    embedder = agent.tiers.embedder()
    monkeypatch.setattr(type(embedder), "embed", lambda self, texts: (_ for _ in ()).throw(EmbedderError("down")))
    if hasattr(type(embedder), "embed_query"):
        monkeypatch.setattr(type(embedder), "embed_query",
                            lambda self, texts: (_ for _ in ()).throw(EmbedderError("down")))
    page = agent.tier(RecallTier).search("harbour", paths=["keyword", "vector", "neighbours"])
    assert [h.id for h in page.hits] == [messages[0].id] and "unavailable" in (page.note or "")


def test_a_hits_score_spreads_most_to_the_replies_after_it() -> None:
    from agentos.retrieval.turn_context import FOLLOWING, PRECEDING, TurnOrder, spread

    order = TurnOrder()
    order.extend((key, "user", START, None) for key in "abcdefg")
    ranked = dict(spread({"c": 1.0}, order))
    assert ranked == pytest.approx({"c": 1.0, "d": FOLLOWING[0], "e": FOLLOWING[1], "f": FOLLOWING[2],
                                    "b": PRECEDING[0], "a": PRECEDING[1]})
    assert [key for key, _ in spread({"c": 1.0}, order)][:2] == ["c", "d"]
    both = dict(spread({"a": 1.0, "c": 1.0}, order))
    assert both["b"] == pytest.approx(FOLLOWING[0] + PRECEDING[0])  # between two hits: a share from each
    assert dict(spread({"zz": 2.0}, order)) == {"zz": 2.0}  # a hit the order does not hold keeps its score


def test_neighbours_are_counted_among_the_turns_tool_traffic_between_them_is_skipped(agentos_home: Path) -> None:
    from agentos.messages import ToolCall

    agent = Agent.create("ada", provider=ScriptedProvider([]))
    call = ToolCall(id="c1", name="archival_search", arguments='{"query": "conference"}')
    turns = [
        Message(role="user", content="Which city should I pick for the conference?", created_at=START),
        Message(role="assistant", content="", tool_calls=[call], created_at=START + timedelta(seconds=1)),
        Message(role="tool", content="no results", tool_call_id="c1", name="archival_search",
                created_at=START + timedelta(seconds=2)),
        Message(role="assistant", content="Lisbon, because flights are cheap in spring.",
                created_at=START + timedelta(seconds=3)),
        *[Message(role="user", content=f"unrelated chat number {i} about the weather",
                  created_at=START + timedelta(minutes=i + 1)) for i in range(12)],
    ]
    agent.add_history(turns)
    hits = [h.id for h in agent.tier(RecallTier).search("city for the conference", page_size=2,
                                                       paths=["keyword", "neighbours"]).hits]
    assert hits == [turns[0].id, turns[3].id]


def test_the_turn_order_catches_up_with_new_turns_and_is_read_again_after_a_rewind(agentos_home: Path) -> None:
    agent = Agent.create("ada", provider=ScriptedProvider([]))
    recall = agent.tier(RecallTier)
    question = conversation(agent, [("user", "Which city should I pick for the conference?")])[0]
    paths = ["keyword", "neighbours"]
    assert [h.id for h in recall.search("conference city", paths=paths).hits] == [question.id]
    answer = conversation(agent, [("assistant", "Lisbon, because flights are cheap in spring.")])[0]
    assert [h.id for h in recall.search("conference city", paths=paths).hits] == [question.id, answer.id]
    recall.discard([answer.id])  # as a rewind does; the seq may be used again
    agent.tier(RecallTier).ctx.db.table("messages").delete(f"id = '{answer.id}'")
    assert [h.id for h in recall.search("conference city", paths=paths).hits] == [question.id]


def test_a_reader_in_another_process_catches_up_with_the_writers_turns(agentos_home: Path) -> None:
    from agentos.storage import Store

    writer = Agent.create("ada", provider=ScriptedProvider([]))
    question = conversation(writer, [("user", "Which city should I pick for the conference?")])[0]
    reader = Agent.load("ada", provider=ScriptedProvider([]), store=Store(writer.store.uri), read_only=True)
    paths = ["keyword", "neighbours"]
    assert [h.id for h in reader.tier(RecallTier).search("conference city", paths=paths).hits] == [question.id]
    answer = conversation(writer, [("assistant", "Lisbon, because flights are cheap in spring.")])[0]
    hits = [h.id for h in reader.tier(RecallTier).search("conference city", paths=paths).hits]
    assert hits == [question.id, answer.id]


def test_facts_join_the_search_with_the_messages_they_came_from(agentos_home: Path) -> None:
    from agentos.memory.facts.rows import Fact, FactChange
    from agentos.memory.facts.tier import FactTier

    agent = Agent.create("ada", provider=ScriptedProvider([]))
    messages = conversation(agent, [("user", "We finally signed the papers for the flat on Rua Augusta!"),
                                    *[("user", f"unrelated chat number {i} about the weather") for i in range(5)]])
    question = "Where does Ada live now?"
    recall = agent.tier(RecallTier)
    assert messages[0].id not in [h.id for h in recall.search(question, paths=["keyword"]).hits]
    fact = Fact(text="Ada lives in a flat on Rua Augusta in Lisbon", valid_from=START, source_ids=(messages[0].id,))
    agent.tier(FactTier).commit([FactChange(kind="add", by="consolidator", group_id="g1", fact=fact)])
    hits = [h.id for h in recall.search(question, paths=["keyword", "facts"]).hits]
    assert hits[0] == messages[0].id


def test_neighbours_outside_a_filter_never_crowd_out_the_matches_inside_it(agentos_home: Path) -> None:
    agent = Agent.create("ada", provider=ScriptedProvider([]))
    turns: list[tuple[str, str]] = []
    for i in range(10):  # strong user hits among assistant replies, which a roles filter leaves out
        turns += [("assistant", f"reply before {i}"), ("user", "zanzibar pancake zanzibar"),
                  *[("assistant", f"answer {j} to {i}") for j in range(3)]]
    turns += [("user", f"pancake mentioned once among many other words, number {i}") for i in range(45)]
    conversation(agent, turns)
    recall = agent.tier(RecallTier)
    alone = recall.search("zanzibar pancake", page_size=100, roles=["user"], paths=["keyword"])
    spread = recall.search("zanzibar pancake", page_size=100, roles=["user"], paths=["keyword", "neighbours"])
    assert spread.total == alone.total == 50 and {h.id for h in spread.hits} == {h.id for h in alone.hits}


def test_a_turn_whose_save_failed_joins_the_order_when_the_retry_commits(agentos_home: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from agentos.errors import StorageError

    agent = Agent.create("ada", provider=ScriptedProvider([]))
    question = conversation(agent, [("user", "Which city should I pick for the conference?")])[0]
    write_step = agent.store.write_step

    def fail_once(*args: object, **kwargs: object) -> object:
        monkeypatch.setattr(agent.store, "write_step", write_step)
        raise StorageError("could not write: the disk is full")

    monkeypatch.setattr(agent.store, "write_step", fail_once)
    answer = Message(role="assistant", content="Lisbon, because flights are cheap in spring.",
                     created_at=START + timedelta(minutes=1))
    with pytest.raises(StorageError):
        agent.add_history([answer])
    recall = agent.tier(RecallTier)
    paths = ["keyword", "neighbours"]
    assert [h.id for h in recall.search("conference city", paths=paths).hits] == [question.id]  # not saved yet
    assert agent.save() is not None
    assert [h.id for h in recall.search("conference city", paths=paths).hits] == [question.id, answer.id]


def test_a_reader_reads_the_order_again_after_the_writer_rewinds(agentos_home: Path) -> None:
    from agentos.storage import Store

    writer = Agent.create("ada", provider=ScriptedProvider([]))
    question = conversation(writer, [("user", "Which city should I pick for the conference?")])[0]
    writer.add_restore_point("after the question")
    conversation(writer, [("assistant", "Maybe Porto, I am not sure."), ("user", "hmm let me think")])
    reader = Agent.load("ada", provider=ScriptedProvider([]), store=Store(writer.store.uri), read_only=True)
    paths = ["keyword", "neighbours"]
    assert len(reader.tier(RecallTier).search("conference city", paths=paths).hits) == 3
    writer.rewind(1)
    answer = conversation(writer, [("assistant", "Lisbon, because flights are cheap in spring.")])[0]
    page = reader.tier(RecallTier).search("conference city", paths=paths)
    assert [h.id for h in page.hits] == [question.id, answer.id] and page.total == 2


def test_copies_of_an_agent_each_show_their_own_neighbour_hits(agentos_home: Path) -> None:
    from agentos.portable.archive import copy_agent

    agent = Agent.create("ada", provider=ScriptedProvider([]))
    question, answer = conversation(agent, [("user", "Which city should I pick for the conference?"),
                                            ("assistant", "Lisbon, because flights are cheap in spring.")])
    agent.close()
    for i in range(6):  # more copies, with the same message ids, than one read by id takes rows per id
        copy_agent(agent.store, "ada", f"copy{i}")
    for name in ["ada", *(f"copy{i}" for i in range(6))]:
        copy = Agent.load(name, provider=ScriptedProvider([]), read_only=True)
        hits = copy.tier(RecallTier).search("conference city", paths=["keyword", "neighbours"]).hits
        assert [h.id for h in hits] == [question.id, answer.id] and "Lisbon" in hits[1].text
