"""Messages whose commit is still running are found by conversation_search, matched in memory."""

from __future__ import annotations

import re
import threading
from typing import Any, Iterator

import pytest

from agentos.agent.agent import Agent
from agentos.memory.fresh import place, terms
from agentos.storage.writer import GroupCommitWriter, StepBatch
from tests.memory_helpers import call, day, make_agent, say


class HeldCommits:
    """Holds the store's commits to `messages` until released, like a slow disk."""

    def __init__(self, agent: Agent) -> None:
        self.release = threading.Event()
        self.writer = agent.store._writer
        self._write = self.writer._write

        def write(table: str, rows: Any) -> None:
            if table == "messages":
                assert self.release.wait(20)
            self._write(table, rows)

        self.writer._write = write

    def committed(self) -> None:
        self.release.set()
        self.writer.flush()


@pytest.fixture
def held() -> Iterator[Any]:
    holds: list[HeldCommits] = []

    def hold(agent: Agent) -> HeldCommits:
        holds.append(HeldCommits(agent))
        return holds[-1]

    yield hold
    for h in holds:
        h.release.set()


def results(text: str) -> list[str]:
    return re.findall(r"\] (?:user|assistant): (.*)", text)


@pytest.mark.parametrize("embedder", ["none", "hash:64"])
def test_a_message_not_yet_committed_is_found_and_keeps_its_place_after_the_commit(embedder: str, held: Any) -> None:
    agent = make_agent(embedder=embedder)
    say(agent, "user", "The boat is moored in Split harbour.")
    say(agent, "assistant", "Noted, the boat is in Split.")
    agent.flush()
    hold = held(agent)
    say(agent, "user", "We moved the boat from Split to Hvar yesterday.")
    assert agent.store.unwritten("messages")  # still in memory only
    before = call(agent, "conversation_search", query="boat Hvar")[0]
    assert "of 3" in before and results(before)[0] == "We moved the boat from Split to Hvar yesterday."
    hold.committed()
    after = call(agent, "conversation_search", query="boat Hvar")[0]
    assert results(after) == results(before)


def test_fresh_messages_obey_role_and_date_filters(held: Any) -> None:
    agent = make_agent(embedder="hash:64")
    hold = held(agent)
    say(agent, "user", "kayak trip planned", when=day(3))
    say(agent, "assistant", "kayak gear listed", when=day(9))
    users = call(agent, "conversation_search", query="kayak", roles=["user"])[0]
    assert results(users) == ["kayak trip planned"]
    later = call(agent, "conversation_search", query="kayak", start_date="2024-01-05")[0]
    assert results(later) == ["kayak gear listed"]
    by_date = call(agent, "conversation_search", query="", start_date="2024-01-01", end_date="2024-01-31")[0]
    assert results(by_date) == ["kayak trip planned", "kayak gear listed"]
    assert agent.store.unwritten("messages")  # all of it answered from memory
    hold.committed()
    assert results(call(agent, "conversation_search", query="", start_date="2024-01-01")[0]) == results(by_date)


def test_a_fresh_message_with_a_naive_time_is_taken_as_utc(held: Any) -> None:
    from datetime import datetime

    agent = make_agent(embedder="none")
    hold = held(agent)
    say(agent, "user", "gondola ride", when=datetime(2024, 1, 3, 12, 0))  # no time zone
    assert results(call(agent, "conversation_search", query="gondola", start_date="2024-01-03")[0]) == ["gondola ride"]
    naive_bound = agent.tiers.recall.search("gondola", start=datetime(2024, 1, 3, 11, 0))  # a naive bound is UTC too
    assert [h.text for h in naive_bound.hits] == ["gondola ride"]
    hold.committed()
    assert [h.text for h in agent.tiers.recall.search("gondola", end=datetime(2024, 1, 3, 11, 0)).hits] == []


def test_fresh_messages_of_other_agents_and_tool_traffic_are_not_found(held: Any) -> None:
    ours, theirs = make_agent("ours", embedder="none"), make_agent("theirs", embedder="none")
    hold = held(theirs)
    say(theirs, "user", "zebra crossing")
    assert "No messages found" in call(ours, "conversation_search", query="zebra")[0]
    say(ours, "tool", "zebra facts from a tool")
    assert "No messages found" in call(ours, "conversation_search", query="zebra")[0]
    hold.committed()


def test_fresh_rows_stay_searchable_while_commits_fail() -> None:
    failing = threading.Event()
    failing.set()
    written: list[Any] = []

    def write(table: str, rows: Any) -> None:
        if failing.is_set():
            raise OSError(28, "No space left on device")
        written.extend(rows)

    writer = GroupCommitWriter(write, lambda tables, batches: None)
    writer.submit(StepBatch(state_row=None, rows={"messages": [{"id": "m1"}]}))
    with pytest.raises(Exception, match="disk is full|No space"):
        writer.flush()
    assert [r["id"] for part in writer.unwritten("messages") for r in part] == ["m1"]  # kept, and searchable
    failing.clear()
    writer.close()  # retries
    assert written == [{"id": "m1"}] and writer.unwritten("messages") == []


def test_light_stemming_and_stop_words() -> None:
    assert terms("Running to the shops") == terms("runs shop")
    assert terms("the and of") == set()
    assert terms("Café") == terms("cafe")


def test_place_ranks_fresh_messages_by_the_query_words_they_hold() -> None:
    hits = [("a", "red apple pie"), ("b", "apple juice"), ("c", "a pie")]
    fresh = [("f1", "apple"), ("f2", "red apple pie recipe"), ("f3", "nothing relevant")]
    assert place("red apple pie", hits, fresh) == ["a", "f2", "b", "c", "f1"]
    assert place("apple", [("f1", "apple"), ("b", "apple juice")], [("f1", "apple")]) == ["b", "f1"]
