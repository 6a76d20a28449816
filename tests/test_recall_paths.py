"""Recall search over several ranked paths: query variants, neighbouring turns, weights from settings, and a path
that fails or is missing never failing the search."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agentos.agent.agent import Agent
from agentos.agent.state import AgentSettings, SearchSettings
from agentos.memory.query import content_words, names, variants
from agentos.memory.recall import RecallTier
from agentos.memory.recall_paths import chosen_paths
from agentos.messages import Message
from agentos.providers.scripted import ScriptedProvider

START = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)


def conversation(agent: Agent, turns: list[tuple[str, str]]) -> list[Message]:
    messages = [Message(role=role, content=text, created_at=START + timedelta(minutes=i))  # type: ignore[arg-type]
                for i, (role, text) in enumerate(turns)]
    agent.add_history(messages)
    return messages


def test_question_words_are_dropped_and_names_kept() -> None:
    assert content_words("What did Caroline say about the adoption agency?") == ["Caroline", "adoption", "agency"]
    assert names("When did Melanie paint a sunrise with Caroline's help?") == ["Melanie", "Caroline"]
    assert names("Where is it?") == []  # a question's first word is not a name
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
