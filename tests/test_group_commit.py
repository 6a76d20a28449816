"""Appends of many threads to one table are committed together: each returns once its rows are committed, none is
written twice or lost, a failed commit fails every append it carried and writes none of them, and 50 agents
appending to the shared messages table at once make far fewer commits than appends, with no conflict."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest

from agentos.errors import StorageError
from agentos.messages import Message
from agentos.storage.db import Database
from agentos.storage.group_commit import GroupCommit
from agentos.storage.store import Store

SCHEMA = pa.schema([pa.field("n", pa.int64())])


def _rows(*numbers: int) -> pa.Table:
    return pa.Table.from_pylist([{"n": n} for n in numbers], schema=SCHEMA)



def in_threads(target: Callable[[int], None], count: int, timeout: float) -> list[BaseException]:
    """Run target(0..count-1) on threads of their own, all at once; what any of them raised."""
    errors: list[BaseException] = []

    def run(n: int) -> None:
        try:
            target(n)
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    return errors

def test_appends_waiting_for_a_commit_go_together_in_the_next() -> None:
    commits: list[list[int]] = []
    gate = threading.Event()

    def commit(rows: pa.Table) -> None:
        if not commits:
            gate.wait(5)  # the first commit is slow: the others queue behind it
        commits.append(rows.column("n").to_pylist())

    group = GroupCommit(commit)
    first = threading.Thread(target=group.add, args=(_rows(0),))
    first.start()
    while not group._busy:
        time.sleep(0.001)
    done: list[int] = []
    others = [threading.Thread(target=lambda n=n: (group.add(_rows(n)), done.append(n))) for n in range(1, 9)]
    for thread in others:
        thread.start()
    time.sleep(0.1)
    assert not done  # nobody returns before the commit carrying its rows
    gate.set()
    for thread in [first, *others]:
        thread.join(5)
    assert commits[0] == [0]
    assert sorted(n for batch in commits[1:] for n in batch) == list(range(1, 9))
    assert len(commits) < 9 and sorted(done) == list(range(1, 9))
    assert group.commits == len(commits) and group.appends == 9


def test_a_failed_commit_fails_every_append_it_carried_and_the_next_ones_still_commit() -> None:
    written: list[int] = []
    gate = threading.Event()
    calls = [0]

    def commit(rows: pa.Table) -> None:
        calls[0] += 1
        if calls[0] == 1:
            gate.wait(5)
            return written.extend(rows.column("n").to_pylist())
        if calls[0] == 2:
            raise StorageError("could not write to 'messages': the disk is full.")
        written.extend(rows.column("n").to_pylist())

    group = GroupCommit(commit)
    outcomes: dict[int, str] = {}

    def append(n: int) -> None:
        try:
            group.add(_rows(n))
            outcomes[n] = "ok"
        except StorageError as exc:
            outcomes[n] = str(exc)

    first = threading.Thread(target=append, args=(0,))
    first.start()
    while not group._busy:
        time.sleep(0.001)
    batch = [threading.Thread(target=append, args=(n,)) for n in (1, 2, 3)]
    for thread in batch:
        thread.start()
    time.sleep(0.1)
    gate.set()
    for thread in [first, *batch]:
        thread.join(5)
    assert outcomes[0] == "ok"
    assert all("disk is full" in outcomes[n] for n in (1, 2, 3))  # one commit carried them all, and failed
    assert written == [0]
    append(4)  # the group is not stuck
    assert outcomes[4] == "ok" and written == [0, 4]


def test_many_threads_appending_to_one_table_lose_nothing_and_conflict_never(tmp_path: Path) -> None:
    db = Database(tmp_path / "db")
    db.create("t", SCHEMA, [])

    def writer(w: int) -> None:
        for i in range(10):
            db.add("t", [{"n": w * 100 + i}])

    assert not in_threads(writer, 20, 60)
    numbers = sorted(db.table("t", SCHEMA, {}).to_arrow().column("n").to_pylist())
    assert numbers == sorted(w * 100 + i for w in range(20) for i in range(10))
    group = db._groups["t"]
    assert group.appends == 200 and group.commits < 200


def test_steps_of_many_agents_share_commits_of_the_messages_table(tmp_path: Path) -> None:
    store = Store(tmp_path / "db")
    store.add_messages("agent-0", [(0, Message(role="user", content="warm up"))])  # the table and its indexes exist
    barrier = threading.Barrier(30)

    def agent(n: int) -> None:
        barrier.wait(10)
        for seq in range(1, 4):
            store.add_messages(f"agent-{n}", [(seq, Message(role="user", content=f"agent {n} message {seq}"))])

    assert not in_threads(agent, 30, 120)
    for n in range(30):
        seqs = [seq for seq, _ in store.messages_between(f"agent-{n}", 1, 10)]
        assert seqs == [1, 2, 3]
    group = store.db._groups["messages"]
    assert group.appends == 91 and group.commits < 91


@pytest.mark.parametrize("given", ["list", "table in another column order"])
def test_rows_given_in_another_shape_are_cast_to_the_table_schema(tmp_path: Path, given: str) -> None:
    schema = pa.schema([pa.field("a", pa.string()), pa.field("b", pa.int64())])
    db = Database(tmp_path / "db")
    db.create("t", schema, [])
    rows = [{"a": "x", "b": 1}]
    data = rows if given == "list" else pa.Table.from_pylist([{"b": 1, "a": "x"}])
    db.add("t", data)
    assert db.table("t", schema, {}).to_arrow().to_pylist() == rows
