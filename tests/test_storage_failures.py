"""A failing disk loses nothing: the error is reported clearly and the rows are written once it recovers."""

from __future__ import annotations

import errno

import pytest

from agentos import Agent
from agentos.errors import StorageError
from agentos.providers import ScriptedProvider


@pytest.fixture
def full_disk(monkeypatch: pytest.MonkeyPatch):
    """Make LanceDB's table writes fail as a full disk would, while state["full"] is true."""
    from lancedb.table import LanceTable

    real_add = LanceTable.add
    state = {"full": False}

    def add(self, data, *args, **kwargs):  # type: ignore[no-untyped-def]
        if state["full"]:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_add(self, data, *args, **kwargs)

    monkeypatch.setattr(LanceTable, "add", add)
    return state


def test_full_disk_is_reported_and_nothing_is_lost(full_disk) -> None:
    provider = ScriptedProvider(["one", "two", "three", "four"])
    agent = Agent.create("sam", provider=provider)
    list(agent.turn("first"))
    agent.flush()

    full_disk["full"] = True
    events = list(agent.turn("second"))  # handed to the writer, which fails in the background
    assert events[-1].type == "turn_finished"
    with pytest.raises(StorageError) as err:
        agent.flush()
    assert "the disk is full. Free some space and try again." in str(err.value)

    events = list(agent.turn("third"))  # the failure surfaces at the next save, as a clear turn failure
    assert events[-1].type == "turn_failed"
    assert "the disk is full" in events[-1].error

    full_disk["full"] = False
    agent.flush()  # retried: everything queued is written now, once
    reloaded = Agent.load("sam", provider=ScriptedProvider(["five"]))
    assert [m.content for m in reloaded.context] == ["first", "one", "second", "two", "third", "three"]
    assert reloaded.store.count_messages(reloaded.id) == 6
    assert list(reloaded.turn("fourth"))[-1].type == "turn_finished"


def test_group_commit_writes_every_step_of_a_burst() -> None:
    agent = Agent.create("sam", provider=ScriptedProvider(["ok"] * 50))
    for i in range(50):
        list(agent.turn(f"m{i}"))
    agent.flush()
    assert agent.store.count_messages(agent.id) == 100
    reloaded = Agent.load("sam", provider=ScriptedProvider([]))
    assert reloaded.state.rev == agent.state.rev
    assert [m.content for m in reloaded.context][-2:] == ["m49", "ok"]


def test_merge_keeps_the_newest_state_and_concatenates_rows() -> None:
    import pyarrow as pa

    from agentos.storage.writer import StepBatch, merge

    table = pa.table({"x": [3]})
    batches = [
        StepBatch(state_row={"agent_id": "a", "rev": 1}, rows={"messages": [{"id": 1}], "vectors": [{"x": 1}, {"x": 2}]}),
        StepBatch(state_row={"agent_id": "b", "rev": 7}, rows={"messages": [], "vectors": table}),
        StepBatch(state_row={"agent_id": "a", "rev": 2}, rows={"messages": [{"id": 2}]}),
    ]
    merged = merge(batches)
    assert merged["agents"] == [{"agent_id": "a", "rev": 2}, {"agent_id": "b", "rev": 7}]
    assert merged["messages"] == [{"id": 1}, {"id": 2}]
    assert merged["vectors"].column("x").to_pylist() == [1, 2, 3]


def test_messages_are_committed_before_the_state_and_leave_the_unwritten_rows() -> None:
    import threading

    from agentos.storage.writer import GroupCommitWriter, StepBatch

    written: dict[str, list[object]] = {}
    messages_done = threading.Event()
    release = threading.Event()

    def write(table: str, rows: list[object]) -> None:
        if table == "agents":
            assert messages_done.wait(10) and release.wait(10)
        written.setdefault(table, []).extend(rows)
        if table == "messages":
            messages_done.set()

    writer = GroupCommitWriter(write, lambda tables, batches: None, first=("messages",))
    writer.submit(StepBatch(state_row={"agent_id": "a"}, rows={"messages": [{"id": 1}]}))
    assert messages_done.wait(10)  # the messages went out while the state row is still held back
    assert written["messages"] == [{"id": 1}] and "agents" not in written
    release.set()
    writer.flush()
    assert written["agents"] == [{"agent_id": "a"}] and writer.unwritten("messages") == []
    writer.close()


def test_reads_run_together_in_order_and_a_failed_one_stops_the_rest() -> None:
    import asyncio
    import time

    from agentos.storage.reads import gather

    finished: list[int] = []

    async def slow(value: int) -> int:
        await asyncio.sleep(0.2)
        finished.append(value)
        return value

    async def broken() -> None:
        raise ValueError("bad filter")

    assert gather(slow(1), None, slow(2)) == [1, None, 2]
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

    assert gather(waits_for_partner(), partner()) == ["met", "here"]
    finished.clear()
    with pytest.raises(ValueError, match="bad filter"):
        gather(slow(3), broken())
    time.sleep(0.3)
    assert finished == []  # the other read was cancelled, not left running
