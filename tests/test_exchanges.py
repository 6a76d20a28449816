"""Recall's exchange path: every turn indexed with the turn before it, so a question whose words are split between
a turn and its reply finds the reply; kept with each step, made whole when a writer opens the agent, and left out
when it cannot be read."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from agentos.agent.agent import Agent
from agentos.memory.exchanges import exchange_rows, exchanges_table_name
from agentos.memory.recall import RecallTier
from agentos.messages import Message
from agentos.providers.scripted import ScriptedProvider
from agentos.retrieval.windows import earlier_text
from tests.memory_helpers import CONVERSATION_START, conversation

START = CONVERSATION_START
QUESTION = "Which city will she stay in for her semester abroad?"


def split_question(agent: Agent) -> list[Message]:
    """A semester abroad asked about in one turn and the city named in the reply, among short turns that each say
    one of the question's words."""
    filler = [("user", w) for w in ("semester exams", "abroad soon", "a city trip", "staying home", "her plans")] * 4
    return conversation(agent, [*filler[:10], ("user", "How is the semester abroad going?"),
                                ("assistant", "Great! She is staying in Galway, for the music."), *filler[10:]])


def exchange_texts(agent: Agent) -> dict[str, str]:
    table = agent.store.db.table(exchanges_table_name(agent.id))
    table.checkout_latest()
    return {r["id"]: r["text"] for r in table.to_arrow().to_pylist()}


def test_each_turn_is_joined_with_the_one_before_it() -> None:
    turns = [(f"m{i}", "user", START, f"text {i}") for i in range(3)]
    rows, after = exchange_rows(["earlier"], turns)
    assert [r["text"] for r in rows] == ["earlier\x1etext 0", "text 0\x1etext 1", "text 1\x1etext 2"]
    assert after == ["text 2"]
    first, _ = exchange_rows([], turns[:1])
    assert first[0]["text"] == "\x1etext 0"  # the conversation's first turn stands alone


def test_turns_of_several_lines_keep_the_boundary_between_them() -> None:
    turns = [("a", "user", START, "line one?\nline two"), ("b", "assistant", START, "reply\x1eone?\nreply two")]
    rows, after = exchange_rows([], turns)
    assert [earlier_text(r["text"]) for r in rows] == [None, "line one?\nline two"]
    assert rows[1]["text"].endswith("line two\x1ereply one?\nreply two")  # a turn's own separator is taken out
    assert after == ["reply\x1eone?\nreply two"]


def test_a_reply_holding_the_rest_of_the_questions_words_ranks_first(agentos_home: Path) -> None:
    agent = Agent.create("ada", provider=ScriptedProvider([]))
    messages = split_question(agent)
    reply = messages[11].id
    recall = agent.tier(RecallTier)
    alone = [h.id for h in recall.search(QUESTION, page_size=3, paths=["keyword"]).hits]
    assert reply not in alone  # each short filler turn matches one word better than the reply does
    assert recall.search(QUESTION, page_size=1, paths=["exchange"]).hits[0].id == reply
    ranked = [h.id for h in recall.search(QUESTION, page_size=50, paths=["keyword"]).hits]
    fused = [h.id for h in recall.search(QUESTION, page_size=50, paths=["keyword", "exchange"]).hits]
    assert fused.index(reply) < ranked.index(reply)


def test_the_exchange_path_keeps_to_the_search_filters(agentos_home: Path) -> None:
    agent = Agent.create("ada", provider=ScriptedProvider([]))
    messages = split_question(agent)
    recall = agent.tier(RecallTier)
    hits = recall.search(QUESTION, page_size=50, paths=["exchange"], roles=["user"]).hits
    assert hits and messages[11].id not in [h.id for h in hits] and {h.role for h in hits} == {"user"}
    before = recall.search(QUESTION, page_size=50, paths=["exchange"], end=START + timedelta(minutes=10)).hits
    assert before and all(h.created_at <= START + timedelta(minutes=10) for h in before)


def test_a_step_continues_from_the_last_turn_saved_before_the_agent_was_opened(agentos_home: Path) -> None:
    agent = Agent.create("ada", provider=ScriptedProvider([]))
    asked = conversation(agent, [("user", "How is the semester abroad going?"), ("assistant", "tool noise")])
    agent.close()
    agent = Agent.load("ada", provider=ScriptedProvider([]))
    reply = conversation(agent, [("assistant", "Great! She is staying in Galway.")], start=2)[0]
    texts = exchange_texts(agent)
    assert asked[1].content in texts[reply.id].split("\n")[0] and "Galway" in texts[reply.id]
    assert len(texts) == 3


def test_an_agent_without_exchanges_gets_them_built_when_it_is_opened(agentos_home: Path) -> None:
    agent = Agent.create("ada", provider=ScriptedProvider([]))
    messages = split_question(agent)
    agent.close()
    agent.store.db.drop(exchanges_table_name(agent.id))  # as an agent saved before exchanges were kept
    agent = Agent.load("ada", provider=ScriptedProvider([]))
    assert len(exchange_texts(agent)) == len(messages)
    recall = agent.tier(RecallTier)
    assert recall.search(QUESTION, page_size=1, paths=["exchange"]).hits[0].id == messages[11].id
    later = conversation(agent, [("user", "And the music there?")], start=len(messages))[0]
    assert messages[-1].content in exchange_texts(agent)[later.id]  # it follows the last turn


def test_exchanges_of_discarded_turns_go_and_the_next_step_follows_the_turn_kept(agentos_home: Path) -> None:
    agent = Agent.create("ada", provider=ScriptedProvider([]))
    kept = conversation(agent, [("user", "How is the semester abroad going?")])[0]
    agent.add_restore_point("after the question")
    gone = conversation(agent, [("assistant", "Maybe Porto, I am not sure.")], start=1)[0]
    agent.rewind(1)
    reply = conversation(agent, [("assistant", "Great! She is staying in Galway.")], start=1)[0]
    texts = exchange_texts(agent)
    assert gone.id not in texts and set(texts) == {kept.id, reply.id}
    assert kept.content in texts[reply.id] and "Porto" not in texts[reply.id]


def test_a_step_whose_exchanges_failed_to_write_writes_them_once_when_retried(agentos_home: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from agentos.errors import StorageError

    agent = Agent.create("ada", provider=ScriptedProvider([]))
    asked = conversation(agent, [("user", "How is the semester abroad going?")])[0]
    db, add = agent.store.db, agent.store.db.add

    def fail_exchanges_once(name: str, rows: object) -> None:
        if name == exchanges_table_name(agent.id):
            monkeypatch.setattr(db, "add", add)
            raise StorageError("could not write: the disk is full")
        add(name, rows)  # type: ignore[arg-type]

    monkeypatch.setattr(db, "add", fail_exchanges_once)
    reply = Message(role="assistant", content="Great! She is staying in Galway.", created_at=START + timedelta(minutes=1))
    with pytest.raises(StorageError):
        agent.add_history([reply])  # the messages are written, their exchanges are not
    assert agent.tier(RecallTier).search(QUESTION, paths=["keyword", "exchange"]).hits  # a search meanwhile
    assert agent.save() is not None
    table = agent.store.db.table(exchanges_table_name(agent.id))
    table.checkout_latest()
    assert sorted(table.to_arrow().column("id").to_pylist()) == sorted([asked.id, reply.id])
    assert agent.tier(RecallTier).search(QUESTION, page_size=1, paths=["exchange"]).hits[0].id == reply.id


def test_a_reader_searches_without_exchanges_until_a_writer_builds_them(agentos_home: Path) -> None:
    from agentos.storage import Store

    writer = Agent.create("ada", provider=ScriptedProvider([]))
    messages = split_question(writer)
    writer.close()
    writer.store.db.drop(exchanges_table_name(writer.id))
    reader = Agent.load("ada", provider=ScriptedProvider([]), store=Store(writer.store.uri), read_only=True)
    recall = reader.tier(RecallTier)
    page = recall.search(QUESTION, page_size=5, paths=["keyword", "exchange"])
    assert page.hits and not Store(writer.store.uri).db.exists(exchanges_table_name(writer.id))  # a reader writes nothing
    Agent.load("ada", provider=ScriptedProvider([]))  # a writer opens it, and builds them
    assert recall.search(QUESTION, page_size=1, paths=["exchange"]).hits[0].id == messages[11].id


def test_reindex_rebuilds_the_exchanges(agentos_home: Path) -> None:
    agent = Agent.create("ada", provider=ScriptedProvider([]))
    messages = split_question(agent)
    agent.store.db.table(exchanges_table_name(agent.id)).delete("true")  # as if lost
    agent.reindex("none")
    assert len(exchange_texts(agent)) == len(messages)


def test_an_agent_saved_with_the_earlier_default_paths_searches_with_exchanges_too() -> None:
    from agentos.agent.state import SearchSettings
    from agentos.retrieval.recall_paths import DEFAULT_PATHS

    earlier = SearchSettings.model_validate({"paths": ["keyword", "speakers", "neighbours", "time", "vector"]})
    assert earlier.paths == DEFAULT_PATHS and "exchange" in earlier.paths
    chosen = SearchSettings.model_validate({"paths": ["keyword", "time"]})
    assert chosen.paths == ["keyword", "time"]  # a choice of one's own stays


def test_a_step_whose_exchanges_cannot_be_made_is_saved_and_they_are_made_at_the_next_open(
        agentos_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentos.errors import StorageError

    agent = Agent.create("ada", provider=ScriptedProvider([]))
    asked = conversation(agent, [("user", "How is the semester abroad going?")])[0]
    exchanges = agent.tier(RecallTier).exchanges

    def broken(messages: object) -> None:
        raise StorageError("cannot open table 'recall_exchanges': the disk is full")

    with monkeypatch.context() as patched:
        patched.setattr(exchanges, "step_rows", broken)
        reply = conversation(agent, [("assistant", "Great! She is staying in Galway.")], start=1)[0]
    assert [m.id for m in agent.store.get_messages(agent.id, [asked.id, reply.id])] == [asked.id, reply.id]
    assert set(exchange_texts(agent)) == {asked.id}
    agent.close()
    agent = Agent.load("ada", provider=ScriptedProvider([]))
    assert asked.content in exchange_texts(agent)[reply.id]


def test_a_search_whose_exchanges_cannot_be_read_answers_from_the_other_paths(agentos_home: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from agentos.errors import StorageError

    agent = Agent.create("ada", provider=ScriptedProvider([]))
    messages = split_question(agent)
    reads, handle = agent.store.db.reads, agent.store.db.reads.handle

    def failing(name: str) -> object:
        if name == exchanges_table_name(agent.id):
            raise StorageError("cannot open table: the file is damaged")
        return handle(name)

    monkeypatch.setattr(reads, "handle", failing)
    hits = agent.tier(RecallTier).search(QUESTION, page_size=50, paths=["keyword", "exchange"]).hits
    assert hits and messages[10].id in [h.id for h in hits]


def test_the_exchange_paths_share_one_read_and_a_failing_one_leaves_the_other_paths_answering(
        agentos_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import agentos.retrieval.table_paths as table_paths
    from agentos.errors import StorageError

    agent = Agent.create("ada", provider=ScriptedProvider([]))
    messages = split_question(agent)
    recall = agent.tier(RecallTier)
    paths = ["keyword", "exchange", "window", "answer"]
    whole = [h.id for h in recall.search(QUESTION, page_size=50, paths=paths).hits]
    read, asked = table_paths.fts_rows, []

    def counted(handle: object, query: str, column: str, *args: object, **kwargs: object) -> object:
        asked.append(column)
        if column == "text" and failing:
            raise StorageError("the exchanges' index cannot be read")
        return read(handle, query, column, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(table_paths, "fts_rows", counted)
    failing = False
    assert [h.id for h in recall.search(QUESTION, page_size=50, paths=paths).hits] == whole
    assert asked.count("text") == 1  # exchange, window and answer ranked one read of the exchanges
    failing = True
    hits = [h.id for h in recall.search(QUESTION, page_size=50, paths=paths).hits]
    assert hits == [h.id for h in recall.search(QUESTION, page_size=50, paths=["keyword"]).hits]
    assert messages[10].id in whole
