"""Edges of one writer per agent: a closed Agent meeting a new agent of its name, a write that lost its
agent without knowing, a compare-and-set that landed but reported an error, and readers that create nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentos import Agent
from agentos.errors import AgentDeletedError, ConfigError, StorageError
from agentos.messages import Message
from agentos.providers import ScriptedProvider, Step
from agentos.storage import Store
from agentos.storage.records import message_row
from tests.memory_helpers import archival, call, recall


def other_process(home: Path) -> Store:
    """A store with its own connection and handles, as another process would have."""
    return Store(home / "db")


def test_a_closed_agent_never_writes_into_a_new_agent_that_took_its_name() -> None:
    old = Agent.create("sam", provider=ScriptedProvider(["from the old one"]))
    old.close()
    Agent.delete("sam")
    new = Agent.create("sam", provider=ScriptedProvider([]), persona="I am the new Sam.")
    new.close()
    events = list(old.turn("hello"))
    assert events[-1].type == "turn_failed" and events[-1].kind == "AgentDeletedError"
    again = Agent.load("sam", read_only=True)
    assert again.id == new.id and again.block("persona").value == "I am the new Sam." and not again.context


def test_a_save_cut_half_way_is_written_whole_after_the_agent_was_closed_and_opened_elsewhere(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from agentos.storage.agent_rows import AgentRows

    agent = Agent.create("sam", provider=ScriptedProvider(["one", "two"]))
    real = AgentRows.write_state
    monkeypatch.setattr(AgentRows, "write_state", lambda *a, **k: (_ for _ in ()).throw(StorageError("disk gone")))
    assert list(agent.turn("first"))[-1].type == "turn_failed"  # its messages are written, the state is not
    with pytest.raises(StorageError):
        agent.close()  # the save fails again; the agent is given back all the same
    monkeypatch.setattr(AgentRows, "write_state", real)
    Agent.load("sam", provider=ScriptedProvider([])).close()  # someone opens it: the half-written rows go
    events = list(agent.turn("second"))
    assert events[-1].type == "turn_finished"
    saved = [i for e in events if e.type == "step_saved" for i in e.message_ids]  # type: ignore[attr-defined]
    reloaded = Agent.load("sam", read_only=True)
    assert [m.content for m in reloaded.context] == ["first", "one", "second", "two"]
    assert {m.id for m in reloaded.context} == set(saved)
    assert reloaded.store.count_messages(reloaded.id) == reloaded.state.message_count == 4


def test_opening_repairs_rows_another_process_left_although_this_process_had_the_table_open(agentos_home: Path) -> None:
    agent = Agent.create("sam", provider=ScriptedProvider(["one"]))
    list(agent.turn("first"))  # this process has the messages table open at this version
    agent.close()
    crashed = other_process(agentos_home)  # another process wrote a step's messages, then died before its state
    crashed.db.add("messages", [message_row(agent.id, 2, Message.user("zebra ghost"))])
    Agent.load("sam", provider=ScriptedProvider([])).close()
    assert agent.store.count_messages(agent.id) == 2
    assert recall(Agent.load("sam", read_only=True)).search("zebra ghost").total == 0


def test_a_writer_that_lost_its_agent_without_knowing_leaves_no_rows(agentos_home: Path) -> None:
    stale = Agent.create("sam", provider=ScriptedProvider(
        [Step(tool_calls=[("core_memory_append", {"label": "human", "content": "SECRET from the stale one"})]), "x"]))
    other = other_process(agentos_home)
    Agent.load("sam", provider=ScriptedProvider([]), store=other).close()  # took it over, and gave it back
    events = list(stale.turn("remember my secret"))  # its last check of the lease is recent: it writes, then learns
    assert events[-1].type == "turn_failed" and events[-1].kind == "LeaseLostError"
    assert other.count_messages(stale.id) == 0
    assert other.memory_edits(stale.id) == []
    reader = Agent.load("sam", read_only=True, store=other)
    assert "SECRET" not in reader.block("human").value and recall(reader).search("secret").total == 0


def test_a_compare_and_set_that_landed_but_reported_an_error_is_not_a_conflict(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentos.storage.agent_rows import AgentRows

    agent = Agent.create("sam", provider=ScriptedProvider(["one", "two"]))
    real = AgentRows._update
    calls: dict[str, int] = {"n": 0}

    def lands_then_fails(self: AgentRows, agent_id: str, where: str, values: dict[str, Any], action: str) -> int:
        changed = real(self, agent_id, where, values, action)
        if "state" in values and calls["n"] == 0:
            calls["n"] += 1
            raise StorageError("could not save agent 'sam': connection reset")  # after the commit
        return changed

    monkeypatch.setattr(AgentRows, "_update", lands_then_fails)
    assert list(agent.turn("first"))[-1].type == "turn_failed"  # the error is reported...
    assert list(agent.turn("second"))[-1].type == "turn_finished"  # ...and the session goes on, nothing lost
    reloaded = Agent.load("sam", read_only=True)
    assert [m.content for m in reloaded.context] == ["first", "one", "second", "two"]
    assert reloaded.state.rev == agent.state.rev


def test_readers_create_nothing(agentos_home: Path) -> None:
    writer = Agent.create("sam", provider=ScriptedProvider([]))
    writer.close()
    reader = Agent.load("sam", read_only=True)
    assert call(reader, "archival_search", query="anything")[0].startswith("No passages found")
    assert archival(reader).count() == 0
    tables = Store(agentos_home / "db").db.connection.list_tables().tables
    assert not any(t.startswith("archival_") for t in tables)
    Agent.delete("sam")
    assert Agent.create("sam", provider=ScriptedProvider([])).id != writer.id


def test_a_load_that_fails_after_taking_the_agent_gives_it_back() -> None:
    agent = Agent.create("sam", provider=ScriptedProvider([]))
    state = json.loads(agent.store.agent_row("sam").state)  # type: ignore[union-attr]
    assert state["model"] == "scripted/script"
    agent.close()
    with pytest.raises(ConfigError):  # a scripted model needs its script: resolving it fails after the lease is taken
        Agent.load("sam")
    assert agent.store.agent_row("sam").lease_token is None  # type: ignore[union-attr]


def test_a_delete_without_force_removes_what_the_agent_had(agentos_home: Path) -> None:
    agent = Agent.create("sam", provider=ScriptedProvider(["ok"]))
    list(agent.turn("hi"))
    agent.close()
    Agent.delete("sam")
    with pytest.raises(AgentDeletedError):
        agent.check_writable()
    fresh = other_process(agentos_home)
    assert fresh.count_messages(agent.id) == 0 and fresh.agent_row("sam") is None
