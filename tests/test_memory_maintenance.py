"""Long life: archival writes are compacted on a schedule, indexes refreshed, tables dropped with the agent."""

from __future__ import annotations

import pytest

import agentos.storage.store as store_module
from agentos.agent.agent import Agent
from tests.memory_helpers import call, make_agent, say


def _unindexed(table: object, column: str) -> int:
    return sum(i.num_unindexed_rows for i in table.list_indices() if i.columns == [column])  # type: ignore[attr-defined]


def test_archival_writes_are_compacted_and_fts_refreshed() -> None:
    agent = make_agent()
    agent.store._maintenance.every = 5
    for i in range(6):
        call(agent, "archival_insert", content=f"passage {i} about orchids")
    agent.store.wait_for_maintenance()
    table = agent.tiers.archival.table
    assert agent.store._maintenance.runs >= 1 and agent.store._maintenance.last_error is None
    assert _unindexed(table, "text") <= 1  # folded into the BM25 index by optimize()
    assert "of 6 " in call(agent, "archival_search", query="orchids")[0]


def test_idle_tables_are_compacted_on_a_timer(monkeypatch: pytest.MonkeyPatch) -> None:
    agent = make_agent()
    monkeypatch.setattr(store_module, "COMPACT_EVERY_SECONDS", 0.0)
    say(agent, "user", "one message is enough once the timer is due")
    agent.store.wait_for_maintenance()
    assert agent.store._maintenance.runs >= 1 and agent.store._maintenance.last_error is None


def test_delete_agent_drops_its_memory_tables() -> None:
    agent = make_agent("gone", embedder="hash:32")
    call(agent, "archival_insert", content="to vanish")
    say(agent, "user", "also vanishing")
    db = agent.store.db
    names = [agent.tiers.archival.name, f"recall_vectors_{agent.id}"]
    assert all(db.exists(n) for n in names)
    Agent.delete("gone")
    assert not any(db.exists(n) for n in names)
    again = make_agent("gone", embedder="hash:32")
    assert call(again, "archival_search", query="vanish")[0].startswith("No passages")


def test_counts_shown_to_the_model_are_current() -> None:
    agent = make_agent()
    call(agent, "archival_insert", content="first")
    call(agent, "archival_insert", content="second")
    assert agent.state.archival_count == 2
    assert "2" in agent.build_request().system_dynamic
    pid = agent.tiers.archival.search("first").hits[0].id
    agent.tiers.archival.delete(pid)
    assert agent.tiers.refresh_archival_count() == 1
