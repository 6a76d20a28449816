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
    # the edit log follows the state, which carries the step's edits until they are logged; the turn's restore point
    # is written with its last step, before the state it records
    points, exchanges, vectors = (f"{table}_{agent.id}" for table in ("restore_points", "recall_exchanges",
                                                                       "recall_vectors"))
    assert [n for n in order if n != "audit_log"] == ["messages", exchanges, vectors, "state", "memory_edits",
                                                      "messages", exchanges, vectors, points, "state"]
    assert order.count("audit_log") == 1 and order.index("audit_log") < order.index("state")  # beside the messages


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


@pytest.fixture
def full_disk_at_create(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Make LanceDB's table creation fail as a full disk does: the table's folders are made, its first commit fails
    (what a real full filesystem left: `NAME.lance/_versions` and `_transactions`, empty)."""
    from pathlib import Path

    from lancedb.db import LanceDBConnection

    real_create = LanceDBConnection.create_table
    state: dict[str, Any] = {"on": False}

    def create_table(self: Any, name: str, *args: Any, **kwargs: Any) -> Any:
        if state["on"]:
            folder = Path(self.uri) / f"{name}.lance"
            (folder / "_versions").mkdir(parents=True, exist_ok=True)
            (folder / "_transactions").mkdir(exist_ok=True)
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_create(self, name, *args, **kwargs)

    monkeypatch.setattr(LanceDBConnection, "create_table", create_table)
    return state


def test_a_full_disk_at_a_tables_first_use_blocks_nothing_once_space_is_freed(
        full_disk_at_create: dict[str, Any], agentos_home: Any) -> None:
    import agentos.agent.directory as agent_module
    from agentos.errors import StorageError
    from agentos.memory.archival import ArchivalTier

    full_disk_at_create["on"] = True  # a fresh home: the directory table is made at the first create
    with pytest.raises(StorageError, match=r"could not open table 'agents' in .*: the disk is full\. Free some space"):
        Agent.create("sam", provider=ScriptedProvider([]))
    assert (agentos_home / "db" / "agents.lance" / "_versions").is_dir()  # the leftover a full disk makes
    full_disk_at_create["on"] = False
    agent = Agent.create("sam", provider=ScriptedProvider(["one", "two"]))
    list(agent.turn("first"))

    full_disk_at_create["on"] = True  # archival memory's table is made at its first insert
    with pytest.raises(StorageError, match="the disk is full. Free some space and try again."):
        agent.tier(ArchivalTier).insert("likes tea")
    full_disk_at_create["on"] = False
    assert agent.tier(ArchivalTier).insert("likes tea").ids  # the same session goes on
    agent.close()
    agent_module._stores.clear()  # and another process loads everything
    reloaded = Agent.load("sam", provider=ScriptedProvider(["three"]))
    assert [h.text for h in reloaded.tier(ArchivalTier).search("tea").hits] == ["likes tea"]
    assert [m.content for m in reloaded.context] == ["first", "one"]


def test_a_leftover_of_a_failed_first_commit_is_no_table_to_a_reader(agentos_home: Any) -> None:
    """A read-only process sees the leftover as a table that does not exist yet (it removes nothing)."""
    from agentos.memory.archival import ArchivalTier
    from agentos.storage.store import Store

    agent = Agent.create("sam", provider=ScriptedProvider([]))
    agent.close()
    leftover = agentos_home / "db" / f"archival_{agent.id}.lance"
    (leftover / "_versions").mkdir(parents=True)
    reader = Agent.load("sam", read_only=True, store=Store(agentos_home / "db"))
    assert reader.tier(ArchivalTier).count() == 0 and leftover.exists()


@pytest.fixture
def small_filesystem(tmp_path: Any) -> Any:
    """A real 3 MB filesystem (tmpfs), where this machine lets the tests mount one; skipped elsewhere."""
    import os
    import subprocess

    mount_point = tmp_path / "small"
    mount_point.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3M", "tmpfs", str(mount_point)],
                                           capture_output=True).returncode != 0:
        pytest.skip("cannot mount a small filesystem here (needs root and mount rights)")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], capture_output=True)


def _fill(folder: Any, leave: int) -> Any:
    """Fill the filesystem of `folder`, then free `leave` bytes; returns the filler file."""
    import os

    filler = folder / "filler"
    with open(filler, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"x" * 4096)
        except OSError:
            pass
    os.truncate(filler, max(0, filler.stat().st_size - leave))
    return filler


@pytest.mark.parametrize("leave", [0, 16 * 1024])
def test_a_real_full_disk_during_a_session_and_at_first_use_recovers_when_space_is_freed(
        small_filesystem: Any, monkeypatch: pytest.MonkeyPatch, leave: int) -> None:
    import agentos.agent.directory as agent_module
    from agentos.errors import AgentOSError
    from agentos.memory.archival import ArchivalTier

    monkeypatch.setenv("AGENTOS_HOME", str(small_filesystem / "home"))
    agent = Agent.create("sam", provider=ScriptedProvider([f"reply {i}" for i in range(6)]))
    list(agent.turn("one"))
    filler = _fill(small_filesystem, leave)
    outcomes = [list(agent.turn(text))[-1] for text in ("two", "three")]
    assert any(e.type == "turn_failed" and "the disk is full. Free some space and try again." in e.error
               for e in outcomes)
    with pytest.raises(AgentOSError, match="the disk is full"):
        agent.tier(ArchivalTier).insert("likes tea")  # the archival table's first use
    filler.unlink()
    assert [list(agent.turn(text))[-1].type for text in ("four", "five")] == ["turn_finished", "turn_finished"]
    assert agent.tier(ArchivalTier).insert("likes tea").ids
    agent.close()
    agent_module._stores.clear()
    reloaded = Agent.load("sam", provider=ScriptedProvider([]), read_only=True)
    assert [m.content for m in reloaded.context if m.role == "user"] == ["one", "two", "three", "four", "five"]
    assert reloaded.tier(ArchivalTier).count() == 1
