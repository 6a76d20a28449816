"""Recall search and the speakers a question names: matched against who spoke, out of the queries, nearer in the
vector list, and first in the fused list when lists that do not weigh who spoke are among it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agentos.agent.agent import Agent
from agentos.agent.state import AgentSettings
from agentos.memory.recall import RecallTier
from agentos.messages import Message
from agentos.providers.scripted import ScriptedProvider

START = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)


def said(agent: Agent, turns: list[tuple[str, str, str]]) -> list[Message]:
    """Save turns of (role, speaker, text), a minute apart."""
    messages = [Message(role=role, name=name, content=text,  # type: ignore[arg-type]
                        created_at=START + timedelta(minutes=i)) for i, (role, name, text) in enumerate(turns)]
    agent.add_history(messages)
    return messages


def test_a_named_speaker_is_matched_against_who_spoke_not_as_a_word() -> None:
    from agentos.retrieval.turn_context import named_speakers

    speakers = {"Caroline", "Melanie"}
    assert named_speakers("What did Caroline research?", speakers) == ({"Caroline"}, "What did research?")
    assert named_speakers("Melanie's pottery class", speakers) == ({"Melanie"}, "pottery class")
    assert named_speakers("Caroline and Melanie", speakers)[0] == {"Caroline", "Melanie"}
    assert named_speakers("what did caroline say", speakers) == (set(), "what did caroline say")  # not capitalised
    assert named_speakers("What did Oscar do?", speakers) == (set(), "What did Oscar do?")  # a name, not a speaker
    assert named_speakers("What did Caroline do?", set()) == (set(), "What did Caroline do?")


def test_a_speaker_with_a_full_name_is_named_by_a_word_of_it_no_other_speaker_shares() -> None:
    from agentos.retrieval.turn_context import named_speakers

    speakers = {"Ada Lovelace", "Charles Babbage", "Lord Byron", "Dr Smith", "Dr Jones", "Will Turner"}
    assert named_speakers("What did Ada say about engines?", speakers) == ({"Ada Lovelace"}, "What did say about engines?")
    assert named_speakers("what of Babbage's engine plans", speakers) == ({"Charles Babbage"}, "what of engine plans")
    assert named_speakers("Did Ada Lovelace meet Byron?", speakers)[0] == {"Ada Lovelace", "Lord Byron"}
    assert named_speakers("What did Dr Smith prescribe?", speakers)[0] == {"Dr Smith"}  # "Dr" names no one
    assert named_speakers("Will I see the engine?", speakers) == (set(), "Will I see the engine?")  # the first word
    assert named_speakers("A trip to Rome", {"A", "B"}) == (set(), "A trip to Rome")  # one letter names no one


def test_what_a_named_speaker_said_outranks_others_saying_the_name(agentos_home: Path) -> None:
    agent = Agent.create("ada", provider=ScriptedProvider([]))
    messages = said(agent, [
        ("user", "Evan", "Sam! How was the meeting, Sam?"),
        ("assistant", "Sam", "The meeting was long, but I learned to plan my meals ahead and to walk more every day."),
        ("user", "Evan", "Sam, Sam, what a week for Sam."),
        *[("user", "Evan", f"my car needs new tyres, part {i}") for i in range(8)],
    ])
    recall = agent.tier(RecallTier)
    question = "What did Sam think of the meeting?"
    plain = [h.id for h in recall.search(question, paths=["keyword"]).hits]
    assert plain[0] != messages[1].id  # as a word, "Sam" lifts the short turns that only say it
    assert [h.id for h in recall.search(question, paths=["keyword", "speakers"]).hits][0] == messages[1].id


def test_a_named_speaker_leaves_the_embedded_query_so_turns_that_only_say_the_name_are_not_near(
        agentos_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agent = Agent.create("ada", provider=ScriptedProvider([]))  # the default embedder (bge)
    messages = said(agent, [
        ("user", "Evan", "Sam! Good to see you, Sam."),
        ("assistant", "Sam", "Nice! I liked the kayak trip around the bay best."),
        *[("user", "Evan", f"my car needs new tyres, part {i}") for i in range(8)],
    ])
    embedder = agent.tiers.embedder()
    embedded: list[str] = []
    real = type(embedder).embed_query
    monkeypatch.setattr(type(embedder), "embed_query", lambda self, texts: embedded.extend(texts) or real(self, texts))
    recall = agent.tier(RecallTier)
    question = "What outdoor trip did Sam enjoy most?"
    alone = [h.id for h in recall.search(question, paths=["vector"]).hits]  # without speakers the name is embedded
    assert embedded == [question] and alone == [messages[1].id, messages[0].id]  # the greeting passes the floor
    hits = [h.id for h in recall.search(question, paths=["keyword", "speakers", "vector"]).hits]
    assert embedded[1] == "What outdoor trip did enjoy most?" and hits == [messages[1].id]


def test_the_vector_list_brings_the_named_speakers_turns_nearer_by_a_margin() -> None:
    from agentos.retrieval.turn_context import SPEAKER_NEARER, TurnOrder, vector_ranking

    order = TurnOrder()
    order.extend([("a", "user", START, "Evan"), ("b", "assistant", START, "Sam"), ("c", "assistant", START, "Sam")])
    rows = [{"id": "a", "_distance": 0.30}, {"id": "b", "_distance": 0.30 + SPEAKER_NEARER / 2},
            {"id": "c", "_distance": 0.30 + SPEAKER_NEARER * 2}]
    assert vector_ranking(rows, {"Sam"}, order) == ["b", "a", "c"]  # within the margin, Sam's turn is nearer
    assert vector_ranking(rows, set(), order) == ["a", "b", "c"]
    assert vector_ranking(rows + [{"id": "zz", "_distance": 0.1}], {"Sam"}, order)[0] == "zz"  # not held: as read


def test_the_named_speakers_own_answer_comes_before_the_question_put_to_them(agentos_home: Path) -> None:
    agent = Agent.create("ada", provider=ScriptedProvider([]), settings=AgentSettings(embedder="none"))
    messages = said(agent, [
        ("user", "Evan", "Which kayak trip on the bay did you like best?"),
        ("assistant", "Sam", "The dawn trip, when the water was flat and calm."),
        *[("user", "Evan", f"my car needs new tyres, part {i}") for i in range(8)],
    ])
    recall = agent.tier(RecallTier)
    question = "Which kayak trip on the bay did Sam like best?"
    plain = [h.id for h in recall.search(question, paths=["keyword"]).hits]
    assert plain[:2] == [messages[0].id, messages[1].id]  # by its words, the question put to Sam matches best
    hits = [h.id for h in recall.search(question, paths=["keyword", "speakers", "neighbours"]).hits]
    assert hits[:2] == [messages[1].id, messages[0].id]


def test_the_named_speakers_turns_are_not_put_first_twice_when_every_list_weighs_who_spoke(agentos_home: Path) -> None:
    from agentos.retrieval.search import RRF_K
    from agentos.retrieval.turn_context import SPEAKER_FIRST

    agent = Agent.create("ada", provider=ScriptedProvider([]), settings=AgentSettings(embedder="none"))
    messages = said(agent, [("user", "Evan", "How was the meeting?"),
                            ("assistant", "Sam", "The meeting was long but useful."),
                            *[("user", "Evan", f"my car needs new tyres, part {i}") for i in range(4)]])
    recall = agent.tier(RecallTier)
    question = "What did Sam think of the meeting?"
    alone = recall.search(question, paths=["keyword", "speakers"]).hits  # the keyword list already weighs Sam
    assert alone[0].id == messages[1].id and alone[0].score == pytest.approx(1 / (RRF_K + 1))
    timeless = recall.search(question, paths=["keyword", "speakers", "time"]).hits  # no time named: no time list
    assert timeless[0].id == messages[1].id and timeless[0].score == pytest.approx(1 / (RRF_K + 1))
    spread = recall.search(question, paths=["keyword", "speakers", "neighbours"]).hits
    assert spread[0].id == messages[1].id and spread[0].score > (1 + SPEAKER_FIRST) / (RRF_K + 1)


def test_the_named_speakers_turns_score_more_in_the_fused_list() -> None:
    from agentos.retrieval.turn_context import SPEAKER_FIRST, TurnOrder, speakers_first

    order = TurnOrder()
    order.extend([("a", "user", START, "Evan"), ("b", "assistant", START, "Sam"), ("c", "assistant", START, "Sam")])
    ranked = [("a", 1.0), ("zz", 0.9), ("b", 0.7), ("c", 0.2)]
    first = speakers_first(ranked, {"Sam"}, order)
    assert first == [("b", 0.7 * (1 + SPEAKER_FIRST)), ("a", 1.0), ("zz", 0.9), ("c", 0.2 * (1 + SPEAKER_FIRST))]
    assert speakers_first(ranked, set(), order) == ranked  # a question that names no speaker: unchanged
    assert speakers_first(ranked, {"Evan", "Sam"}, order)[0] == ("a", 1.0 * (1 + SPEAKER_FIRST))


def test_a_speakers_name_stays_in_the_query_when_nothing_else_would_match() -> None:
    from agentos.retrieval.turn_context import named_speakers

    assert named_speakers("Who is Sam?", {"Sam"}) == ({"Sam"}, "Who is Sam?")
    assert named_speakers("What is James' job?", {"James"}) == ({"James"}, "What is job?")
    assert named_speakers("What did “Sam” bake?", {"Sam"}) == ({"Sam"}, "What did bake?")
