"""The window and answer paths: readings of the exchanges table that credit a turn by the best two-turn window
holding it, or a reply only when the turn before it asks."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from agentos.agent.agent import Agent
from agentos.memory.recall import RecallTier
from agentos.messages import Message
from agentos.providers.scripted import ScriptedProvider
from agentos.retrieval.windows import answer_ranking, earlier_text, window_ranking

START = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)


class Order:
    """Turns a..f in order."""

    ids = list("abcdef")

    def position(self, key: str) -> int | None:
        return self.ids.index(key) if key in self.ids else None

    def id_at(self, position: int) -> str | None:
        return self.ids[position] if 0 <= position < len(self.ids) else None


def test_both_turns_of_the_best_window_rank_first_whichever_of_the_two_they_are() -> None:
    rows = [{"id": "d", "_score": 5.0}, {"id": "b", "_score": 2.0}, {"id": "c", "_score": 1.0}]
    # windows (c, d): 5, (a, b): 2, (b, c): 1. c holds (c, d) and (b, c), d holds (c, d) and (d, e) (unmatched):
    # both best 5, c's second best wins; then b (2, then 1) before a (2 alone)
    assert window_ranking(rows, Order(), lambda key: True) == ["c", "d", "b", "a"]


def test_a_window_turn_outside_the_search_filters_is_not_credited() -> None:
    rows = [{"id": "d", "_score": 5.0}]
    assert window_ranking(rows, Order(), lambda key: key != "c") == ["d"]


def test_a_turn_held_twice_counts_once_and_the_first_turn_has_no_window_before_it() -> None:
    rows = [{"id": "a", "_score": 3.0}, {"id": "a", "_score": 3.0}, {"id": "zz", "_score": 1.0}]
    assert window_ranking(rows, Order(), lambda key: True) == ["a", "zz"]


def test_a_reply_is_credited_only_when_the_turn_before_it_asks() -> None:
    rows = [{"id": "x", "_score": 4.0, "text": "I went to Galway.\x1eThe music was great."},
            {"id": "y", "_score": 3.0, "text": "How was Galway?\x1eLoved the music."},
            {"id": "w", "_score": 2.5, "text": "I went to Galway.\x1eWhy? The music.\nIt was great."},  # it asks itself
            {"id": "z", "_score": 2.0, "text": "\x1eGalway? music,\nfirst turn"}]  # no turn before it
    assert answer_ranking(rows) == ["y"]
    assert earlier_text("Q?\nA\nmore") == "Q?\nA" and earlier_text("alone") is None  # rows written before the break
    asked = [{"id": f"r{n}", "_score": 1.0, "text": f"{question}\x1ereply"} for n, question in
             enumerate(("你去哪里了？", "أين كنت؟", "Where were you"))]
    assert answer_ranking(asked) == ["r0", "r1"]  # a question asked in Chinese or Arabic too


def story(agent: Agent, turns: list[tuple[str, str]]) -> list[Message]:
    messages = [Message(role=role, content=text, created_at=START + timedelta(minutes=i))  # type: ignore[arg-type]
                for i, (role, text) in enumerate(turns)]
    agent.add_history(messages)
    return messages


def test_the_window_path_ranks_the_earlier_turn_of_a_matching_window_where_the_exchange_path_does_not(
        agentos_home: Path) -> None:
    agent = Agent.create("ada", provider=ScriptedProvider([]))
    filler = [("user" if i % 2 else "assistant", f"unrelated chat number {i} about the weather") for i in range(20)]
    turns = [*filler[:10], ("user", "My sister Maya came over on Sunday."),
             ("assistant", "Did you bake the sourdough bread together?"), ("user", "She says hello."), *filler[10:]]
    messages = story(agent, turns)
    told, asked = messages[10].id, messages[11].id
    recall = agent.tier(RecallTier)
    window = [h.id for h in recall.search("Maya sourdough bread", page_size=2, paths=["window"]).hits]
    assert set(window) == {told, asked}  # the window (told, asked) holds every word; both of its turns first
    exchange = [h.id for h in recall.search("Maya sourdough bread", page_size=2, paths=["exchange"]).hits]
    assert told not in exchange  # credited only to the later turn: `told` holds the window before it, Maya alone


def test_the_answer_path_finds_the_reply_to_a_question_and_not_a_turn_after_a_statement(agentos_home: Path) -> None:
    agent = Agent.create("ada", provider=ScriptedProvider([]))
    messages = story(agent, [("user", "How was the semester abroad in Ireland?"),
                             ("assistant", "Loved it, Galway has such great music."),
                             ("user", "I was in Ireland last semester too."),
                             ("assistant", "Galway has such great music.")])
    recall = agent.tier(RecallTier)
    hits = [h.id for h in recall.search("semester in Ireland music", page_size=5, paths=["answer"]).hits]
    assert hits == [messages[1].id]
    assert [h.id for h in recall.search("semester in Ireland", paths=["answer"], roles=["user"]).hits] == []


def test_agents_saved_with_a_former_default_list_search_with_todays() -> None:
    from agentos.agent.state import SearchSettings
    from agentos.retrieval.recall_paths import DEFAULT_PATHS, FORMER_DEFAULTS, PATHS

    assert set(DEFAULT_PATHS) <= set(PATHS)
    for former in FORMER_DEFAULTS:
        assert SearchSettings.model_validate({"paths": former}).paths == DEFAULT_PATHS
    assert SearchSettings.model_validate({"paths": ["keyword", "window"]}).paths == ["keyword", "window"]
