"""Long life: archival writes are compacted on a schedule, indexes refreshed, tables dropped with the agent."""

from __future__ import annotations

import pytest

import agentos.storage.maintenance as maintenance_module
from agentos.agent.agent import Agent
from tests.memory_helpers import archival, call, make_agent, say


def _unindexed(table: object, column: str) -> int:
    return sum(i.num_unindexed_rows for i in table.list_indices() if i.columns == [column])  # type: ignore[attr-defined]


def test_archival_writes_are_compacted_and_fts_refreshed() -> None:
    agent = make_agent()
    agent.store.maintenance.every = 5
    for i in range(6):
        call(agent, "archival_insert", content=f"passage {i} about orchids")
    agent.store.wait_for_maintenance()
    table = archival(agent).table
    assert agent.store.maintenance.runs >= 1 and agent.store.maintenance.last_error is None
    assert _unindexed(table, "text") <= 1  # folded into the BM25 index by optimize()
    assert "of 6 " in call(agent, "archival_search", query="orchids")[0]


def test_maintenance_indexes_large_vector_tables_and_replaces_an_older_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    from lancedb.index import IvfPq

    import agentos.storage.vector_index as vector_index

    monkeypatch.setattr(vector_index, "ANN_MIN_ROWS", 300)
    agent = make_agent(embedder="hash:32")
    agent.store.maintenance.every = 1
    arch = archival(agent)
    arch.insert_many([f"passage {i} about topic {i % 13} and colour {i % 7}" for i in range(299)])
    arch.table.create_index("vector", config=IvfPq(distance_type="cosine", num_partitions=2, num_sub_vectors=4))
    call(agent, "archival_insert", content="one more passage about topic 5 and colour 3")
    agent.store.wait_for_maintenance()
    assert agent.store.maintenance.last_error is None
    assert vector_index.vector_index_type(arch.table) == vector_index.INDEX_TYPE  # the older kind was replaced
    text, err = call(agent, "archival_search", query="topic 5 colour 3")
    assert not err and "of " in text
    exact = arch.nearest("topic 5 colour 3", 10, exact=True)
    assert len(set(arch.nearest("topic 5 colour 3", 10)) & set(exact)) >= 9


def test_tag_filters_use_a_label_list_index() -> None:
    agent = make_agent()
    call(agent, "archival_insert", content="tagged passage", tags=["work"])
    kinds = {tuple(i.columns): str(i.index_type) for i in archival(agent).table.list_indices()}
    assert kinds[("tags",)] == "LabelList"
    assert "tagged passage" in call(agent, "archival_search", query="passage", tags=["work"])[0]


def test_idle_tables_are_compacted_on_a_timer(monkeypatch: pytest.MonkeyPatch) -> None:
    agent = make_agent()
    monkeypatch.setattr(maintenance_module, "COMPACT_EVERY_SECONDS", 0.0)
    say(agent, "user", "one message is enough once the timer is due")
    agent.store.wait_for_maintenance()
    assert agent.store.maintenance.runs >= 1 and agent.store.maintenance.last_error is None


def test_delete_agent_drops_its_memory_tables() -> None:
    agent = make_agent("gone", embedder="hash:32")
    call(agent, "archival_insert", content="to vanish")
    say(agent, "user", "also vanishing")
    db = agent.store.db
    names = [archival(agent).table_name, f"recall_vectors_{agent.id}"]
    assert all(db.exists(n) for n in names)
    Agent.delete("gone")
    assert not any(db.exists(n) for n in names)
    again = make_agent("gone", embedder="hash:32")
    assert call(again, "archival_search", query="vanish")[0].startswith("No passages")


def test_counts_shown_to_the_model_are_current() -> None:
    agent = make_agent()
    call(agent, "archival_insert", content="first")
    call(agent, "archival_insert", content="second")
    assert archival(agent).count() == 2
    assert "2" in agent.build_request().system_dynamic
    pid = archival(agent).search("first").hits[0].id
    archival(agent).delete(pid)
    assert archival(agent).count() == 1
    assert "Passages in archival memory: 1\n" in agent.build_request().system_dynamic


def test_many_short_sessions_leave_the_tables_compact_and_lose_nothing(monkeypatch: pytest.MonkeyPatch,
                                                                       tmp_path: object) -> None:
    """Each session is its own process's worth of commits, too few to reach the commit count; closing compacts
    what is worn on disk (the grace period for concurrent readers is 1 ms here, as if sessions were hours apart)."""
    from datetime import timedelta
    from pathlib import Path

    from agentos.providers import ScriptedProvider
    from agentos.storage.db import Database
    from agentos.storage.store import Store

    monkeypatch.setattr(maintenance_module, "CLEANUP_OLDER_THAN", timedelta(milliseconds=1))
    uri = Path(str(tmp_path)) / "db"
    first = Agent.create("sam", provider=ScriptedProvider([]), store=Store(uri))
    state_table = f"state_{first.id}"
    first.close()
    for n in range(24):
        store = Store(uri)
        store.maintenance.every = 20  # versions kept before a cleanup is due (100 by default)
        agent = Agent.load("sam", provider=ScriptedProvider([f"reply {n}"]), store=store)
        list(agent.turn(f"short message {n} about the garden"))
        agent.close()
        store.close()
        assert store.maintenance.last_error is None
    db = Database(uri)
    messages, state = db.wear("messages"), db.wear(state_table)
    assert messages is not None and state is not None
    assert messages.small_fragments < maintenance_module.SMALL_FRAGMENTS_DUE  # 24 commits, 24 fragments without it
    assert state.versions <= 20 + 3  # 3 commits a session: open, step, close
    reloaded = Agent.load("sam", provider=ScriptedProvider([]), store=Store(uri), read_only=True)
    assert reloaded.store.count_messages(reloaded.id) == 48
    assert [m.content for m in reloaded.context][-2:] == ["short message 23 about the garden", "reply 23"]
    from agentos.memory.recall import RecallTier

    found = reloaded.tier(RecallTier).search("garden", page_size=50, paths=["keyword"])
    assert found.total == 24  # every user message, searchable after the compactions


def test_a_compaction_that_another_process_preempts_is_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    agent = make_agent("sam", embedder="none")
    for i in range(3):
        say(agent, "user", f"garden note {i}")
    agent.store.wait_for_maintenance()
    db = agent.store.db
    handle = db.table("messages")
    real = type(handle).optimize
    calls: list[int] = []

    def preempted_once(self: object, *args: object, **kwargs: object) -> object:
        calls.append(1)
        if len(calls) == 1:  # what LanceDB raises when another process's compaction committed first
            raise RuntimeError("lance error: Retryable commit conflict for version 39: This Rewrite transaction was "
                               "preempted by concurrent transaction Rewrite at version 39. Please retry.")
        return real(self, *args, **kwargs)  # type: ignore[operator]

    monkeypatch.setattr(type(handle), "optimize", preempted_once)
    assert db.optimize("messages") is True and len(calls) >= 2  # (background maintenance may compact too)
    assert db.count_rows("messages") == 3


def test_cleanup_keeps_each_version_until_it_has_been_superseded_for_the_grace_period(tmp_path: object) -> None:
    """A version goes by when it stopped being the newest: a quiet table's last version, made long ago, stays while
    a reader that started on it a moment ago may still read it; every version older than that goes."""
    import os
    from pathlib import Path

    folder = Path(str(tmp_path)) / "t.lance" / "_versions"
    folder.mkdir(parents=True)
    now = 1_000_000.0

    def versions(*ages: float) -> None:
        for old in folder.iterdir():
            old.unlink()
        for number, age in enumerate(ages):
            path = folder / f"{number}.manifest"
            path.write_text("")
            os.utime(path, (now - age, now - age))

    path = str(folder.parent)
    versions(3600, 600, 1)  # quiet for ten minutes, then one commit a second ago
    horizon = maintenance_module.cleanup_horizon(path, 5.0, now)
    assert horizon is not None and 600 < horizon < 3600  # the version of ten minutes ago stays, the older one goes
    versions(3, 2, 1)  # all newer than the grace period: nothing goes
    assert maintenance_module.cleanup_horizon(path, 5.0, now) == 3 + 5.0
    versions(*[60 - i * 0.1 for i in range(600)])  # ten commits a second for a minute
    horizon = maintenance_module.cleanup_horizon(path, 5.0, now)
    assert horizon is not None and 9.9 < horizon <= 10.1  # ~5 s superseded, ~5 s more for the cleanup's own clock
    assert maintenance_module.cleanup_horizon(str(tmp_path), 5.0, now) is None  # no manifests: nothing known


def test_versions_are_pruned_by_count_while_another_process_reads_the_agent(monkeypatch: pytest.MonkeyPatch,
                                                                              tmp_path: object) -> None:
    """Cleanups every 20 commits with a grace of 1.5 s keep a busy table to a few seconds of versions (the old window of
    minutes kept every one of them), and a reader in another process, opening the agent and reading its history and
    restore points the whole time, never meets a version that is gone."""
    import subprocess
    import sys
    import time
    from datetime import timedelta
    from pathlib import Path

    from agentos.providers import ScriptedProvider, Step
    from agentos.storage.store import Store

    monkeypatch.setattr(maintenance_module, "CLEANUP_OLDER_THAN", timedelta(seconds=1.5))
    home = Path(str(tmp_path))
    store = Store(home / "db")
    store.maintenance.every = 20
    agent = Agent.create("sam", provider=ScriptedProvider(lambda request: Step("noted")), store=store)
    stop = home / "stop"
    reader = subprocess.Popen([sys.executable, "-c", READER, str(home / "db"), str(stop)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        commits, until = 0, time.monotonic() + 8
        while time.monotonic() < until:
            list(agent.turn(f"message {commits} about the garden"))
            commits += 1
    finally:
        stop.write_text("")
        out, err = reader.communicate(timeout=120)
    agent.close()
    assert reader.returncode == 0, err
    reads, failures = (int(n) for n in out.split())
    assert reads > 10 and failures == 0, err
    kept = len(list((home / "db" / "messages.lance" / "_versions").glob("*.manifest")))
    assert kept < 0.6 * commits  # a few seconds of versions, not all of them


READER = """
import sys, traceback
from pathlib import Path
from agentos.agent.agent import Agent
from agentos.storage.store import Store

store = Store(sys.argv[1])
reads = failures = 0
while not Path(sys.argv[2]).exists():
    try:
        agent = Agent.load("sam", store=store, read_only=True, with_model=False)
        store.messages_between(agent.id, 0, agent.state.message_count)
        agent.restore_points()
        agent.close()
        reads += 1
    except Exception:
        failures += 1
        traceback.print_exc()
print(reads, failures)
"""


def test_waiting_for_maintenance_while_a_run_starts_never_joins_a_thread_not_yet_started(
        monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    """A server closing one agent waits for maintenance while another agent's commit starts a run (agent creates at
    once answered 500: "cannot join thread before it is started")."""
    import threading
    import time
    from pathlib import Path

    from agentos.storage.db import Database

    class SlowToStart(threading.Thread):
        def start(self) -> None:
            time.sleep(0.3)
            super().start()

    maintenance = maintenance_module.Maintenance(Database(Path(str(tmp_path)) / "db"), every=1)
    committer = threading.Thread(target=maintenance.committed, args=(["not_a_table"],))  # a real thread
    monkeypatch.setattr(maintenance_module.threading, "Thread", SlowToStart)  # the run's thread starts slowly
    committer.start()
    time.sleep(0.1)  # the run's thread is being started now
    maintenance.wait()  # must not raise
    committer.join()
    maintenance.wait()
    assert maintenance.last_error is None and maintenance.runs == 1
