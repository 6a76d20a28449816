"""A failing disk loses nothing: the error is reported in the turn it happens, and the rows are written once it recovers."""

from __future__ import annotations

import errno
import time
from typing import Any

import pytest

from agentos import Agent
from agentos.providers import ScriptedProvider, Step


@pytest.fixture
def full_disk(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Make LanceDB's appends (state["add"]) or updates (state["update"]) fail as a full disk would."""
    from lancedb.table import LanceTable

    real_add, real_update = LanceTable.add, LanceTable.update
    state: dict[str, Any] = {"add": False, "update": False}

    def add(self: Any, data: Any, *args: Any, **kwargs: Any) -> Any:
        if state["add"]:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_add(self, data, *args, **kwargs)

    def update(self: Any, *args: Any, **kwargs: Any) -> Any:
        if state["update"]:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_update(self, *args, **kwargs)

    monkeypatch.setattr(LanceTable, "add", add)
    monkeypatch.setattr(LanceTable, "update", update)
    return state


def test_full_disk_is_reported_in_the_same_turn_and_nothing_is_lost(full_disk: dict[str, Any]) -> None:
    provider = ScriptedProvider(["one", "two", "three", "four"])
    agent = Agent.create("sam", provider=provider)
    list(agent.turn("first"))

    full_disk["add"] = True
    events = list(agent.turn("second"))
    assert events[-1].type == "turn_failed" and events[-1].kind == "StorageError"
    assert events[-1].error == "could not write to 'messages': the disk is full. Free some space and try again."
    assert [m.content for m in agent.context][-2:] == ["second", "two"]  # kept, to be written next time

    full_disk["add"] = False
    assert list(agent.turn("third"))[-1].type == "turn_finished"  # this save writes the earlier step too
    reloaded = Agent.load("sam", provider=ScriptedProvider(["five"]))
    assert [m.content for m in reloaded.context] == ["first", "one", "second", "two", "third", "three"]
    assert reloaded.store.count_messages(reloaded.id) == 6
    assert list(reloaded.turn("fourth"))[-1].type == "turn_finished"


def test_a_state_write_that_fails_after_the_messages_landed_writes_no_message_twice(full_disk: dict[str, Any]) -> None:
    agent = Agent.create("sam", provider=ScriptedProvider(
        [Step(tool_calls=[("core_memory_append", {"label": "human", "content": "Likes tea"})]), "ok"]))
    full_disk["update"] = True  # the messages and the edit are appended; the state's compare-and-set fails
    events = list(agent.turn("I like tea"))
    assert events[-1].type == "turn_failed" and "the disk is full" in events[-1].error
    assert events[-1].steps == 1  # the turn stops at the step it could not save
    full_disk["update"] = False
    assert list(agent.turn("anything else?"))[-1].type == "turn_finished"
    assert agent.store.count_messages(agent.id) == 5
    assert [e.new_value for e in agent.memory_edits()] == ["Nothing is known about the user yet.\nLikes tea"]
    reloaded = Agent.load("sam", provider=ScriptedProvider([]))
    assert [m.role for m in reloaded.context] == ["user", "assistant", "tool", "user", "assistant"]
    assert reloaded.block("human").value.endswith("Likes tea")


def test_a_burst_of_turns_saves_every_step_in_order() -> None:
    agent = Agent.create("sam", provider=ScriptedProvider(["ok"] * 50))
    for i in range(50):
        list(agent.turn(f"m{i}"))
    assert agent.store.count_messages(agent.id) == 100
    reloaded = Agent.load("sam", provider=ScriptedProvider([]))
    assert reloaded.state.rev == agent.state.rev == 50
    assert [m.content for m in reloaded.context][-2:] == ["m49", "ok"]


def test_a_step_writes_its_messages_first_then_the_state_then_the_edit_log(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentos.storage.agent_rows import AgentRows
    from agentos.storage.db import Database

    agent = Agent.create("sam", provider=ScriptedProvider(
        [Step(tool_calls=[("core_memory_append", {"label": "human", "content": "A"})]), "done"]))
    order: list[str] = []
    real_add, real_state = Database.add, AgentRows.write_state

    def add(self: Database, name: str, rows: Any) -> None:
        order.append(name)
        real_add(self, name, rows)

    def write_state(self: AgentRows, *args: Any) -> int:
        order.append("state")
        return real_state(self, *args)

    monkeypatch.setattr(Database, "add", add)
    monkeypatch.setattr(AgentRows, "write_state", write_state)
    list(agent.turn("go"))
    # the edit log follows the state, which carries the step's edits until they are logged
    assert order == ["messages", "state", "memory_edits", "messages", "state"]


def test_reads_run_together_in_order_and_a_failed_one_stops_the_rest(tmp_path: Any) -> None:
    import asyncio

    from agentos.storage.db import Database

    reads = Database(tmp_path / "db").reads
    finished: list[int] = []

    async def slow(value: int) -> int:
        await asyncio.sleep(0.2)
        finished.append(value)
        return value

    async def broken() -> None:
        raise ValueError("bad filter")

    assert reads.gather(slow(1), None, slow(2)) == [1, None, 2]
    ready: list[asyncio.Event] = []

    async def waits_for_partner() -> str:
        ready.append(asyncio.Event())
        await asyncio.wait_for(ready[0].wait(), timeout=5)  # only a read running at the same time sets it
        return "met"

    async def partner() -> str:
        while not ready:
            await asyncio.sleep(0.01)
        ready[0].set()
        return "here"

    assert reads.gather(waits_for_partner(), partner()) == ["met", "here"]
    finished.clear()
    with pytest.raises(ValueError, match="bad filter"):
        reads.gather(slow(3), broken())
    time.sleep(0.3)
    assert finished == []  # the other read was cancelled, not left running
