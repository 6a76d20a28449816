"""Damage in the tables of an agent's tiers (archival memory, recall exchanges) and of its restore points is named
when the agent is loaded, before anything reads them; chatting goes on; `agentos doctor --repair` ends the warning."""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import pytest

import agentos.agent.directory as agent_module
from agentos import Agent
from agentos.agent.state import AgentSettings
from agentos.cli import main
from agentos.errors import DamageWarning
from agentos.memory.archival import ArchivalTier
from agentos.providers import ScriptedProvider
from agentos.storage.store import Store

HINT = "Run `agentos doctor` to see what is affected, and `agentos doctor --repair` to rebuild it from what can be read."


def _home() -> str:
    """Agent "sam": five turns, then five archival passages, each its own commit; closed. Returns its id."""
    sam = Agent.create("sam", provider=ScriptedProvider([f"reply {i}" for i in range(5)]))
    for i in range(5):
        list(sam.turn(f"message {i}"))
    for i in range(5):
        sam.tier(ArchivalTier).insert(f"sam likes thing {i}")
    sam.close()
    agent_module._stores.clear()  # what follows opens the damaged files afresh, as a new process would
    return sam.id


def _damage(table: Path, how: str) -> Path:
    """Damage the newest data file of a table folder: delete it, or cut it short."""
    data = max((table / "data").iterdir(), key=lambda p: p.stat().st_mtime_ns)
    if how == "deleted":
        data.unlink()
    else:
        with open(data, "r+b") as f:
            f.truncate(100)
    return data


def _load(agentos_home: Path, **kwargs: object) -> Agent:
    return Agent.load("sam", provider=ScriptedProvider(["ok", "ok"]), store=Store(agentos_home / "db"),
                      **kwargs)  # type: ignore[arg-type]


def _repair_then_load_quietly(agentos_home: Path) -> Agent:
    agent_module._stores.clear()
    assert main(["doctor", "--repair"]) == 0
    agent_module._stores.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error", DamageWarning)
        return _load(agentos_home)


@pytest.mark.parametrize("how", ["deleted", "truncated"])
def test_damaged_archival_memory_is_named_at_load_and_repaired(agentos_home: Path, how: str) -> None:
    agent_id = _home()
    table = f"archival_{agent_id}"
    _damage(agentos_home / "db" / f"{table}.lance", how)

    with pytest.warns(DamageWarning) as caught:
        sam = _load(agentos_home, read_only=True)  # nothing has searched archival memory yet
    error = "the file is missing" if how == "deleted" else "the file is cut short or corrupt"
    assert [str(w.message) for w in caught if isinstance(w.message, DamageWarning)] == [
        f"table {table!r} (archival memory) is damaged: 1 of its data files cannot be read ({error}), holding 1 "
        f"row(s). The agent was loaded; until the table is repaired, archival memory may be incomplete or fail to "
        f"read. {HINT}"]
    assert sam.warnings == [str(caught[0].message)]

    with pytest.warns(DamageWarning, match=f"table '{table}' \\(archival memory\\) is damaged"):
        sam = _load(agentos_home)  # a writer too
    assert list(sam.turn("still there?"))[-1].type == "turn_finished"  # chatting goes on
    sam.close()

    sam = _repair_then_load_quietly(agentos_home)
    assert sam.warnings == []
    passages = sam.tier(ArchivalTier).search("", page_size=10).hits
    assert sorted(h.text for h in passages) == [f"sam likes thing {i}" for i in range(4)]  # the newest one is lost
    assert list(sam.turn("and now?"))[-1].type == "turn_finished"


@pytest.mark.parametrize("how", ["deleted", "truncated"])
def test_damaged_restore_points_are_named_at_load_and_do_not_keep_a_writer_out(agentos_home: Path, how: str) -> None:
    agent_id = _home()
    table = f"restore_points_{agent_id}"
    _damage(agentos_home / "db" / f"{table}.lance", how)

    with pytest.warns(DamageWarning) as caught:
        sam = _load(agentos_home)
    assert len(caught) == 1 and str(caught[0].message).startswith(
        f"table {table!r} (restore points) is damaged: 1 of its data files cannot be read (")
    assert str(caught[0].message).endswith(f"restore points may be incomplete or fail to read. {HINT}")
    assert list(sam.turn("still there?"))[-1].type == "turn_finished"
    sam.close()

    sam = _repair_then_load_quietly(agentos_home)
    assert [p.turn for p in sam.restore_points()] == list(range(6))  # the newest point lost, the last turn's added
    assert list(sam.turn("and now?"))[-1].type == "turn_finished"


def test_damaged_recall_exchanges_are_named_at_load(agentos_home: Path) -> None:
    agent_id = _home()
    table = f"recall_exchanges_{agent_id}"
    _damage(agentos_home / "db" / f"{table}.lance", "truncated")

    with pytest.warns(DamageWarning, match=f"table '{table}' \\(recall memory\\) is damaged: 1 of its data files "):
        sam = _load(agentos_home)
    assert list(sam.turn("still there?"))[-1].type == "turn_finished"
    sam.close()
    assert _repair_then_load_quietly(agentos_home).warnings == []


def test_every_tier_names_its_tables_for_the_look_at_load(agentos_home: Path) -> None:
    sam = Agent.create("sam", provider=ScriptedProvider([]))
    tables = sam.tiers.stored_tables()
    assert set(tables) == {name for tier in sam.tiers for name in type(tier).table_names(sam.id)}
    assert tables[f"archival_{sam.id}"] == "archival memory"
    assert all(what for what in tables.values())


def test_the_look_at_load_reads_no_rows_of_a_big_archival_table(agentos_home: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    sam = Agent.create("sam", provider=ScriptedProvider([]), settings=AgentSettings(embedder="none"))  # rows, not vectors
    for start in range(0, 3000, 100):  # 30 commits
        sam.tier(ArchivalTier).insert_many([f"passage {i} about something" for i in range(start, start + 100)])
    sam.close()
    agent_module._stores.clear()

    def no_reads(fragment: object) -> None:
        raise AssertionError("a fragment was read")

    monkeypatch.setattr("agentos.storage.table_checks._confirmed", no_reads)  # only a damaged-looking fragment is read
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("error", DamageWarning)
        sam = _load(agentos_home, read_only=True)
    assert sam.warnings == [] and sam.tier(ArchivalTier).count() == 3000
    assert time.perf_counter() - start < 2.0  # the look costs a few ms: a manifest and a stat per data file, per table
