"""Counts after damage: how many messages recall memory holds is counted from what is stored, and `doctor`,
`show`, the load's warning and the prompt's metadata all report that one count, before and after a repair."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import agentos.agent.directory as agent_module
from agentos import Agent
from agentos.cli import main
from agentos.errors import DamageWarning
from agentos.providers import ScriptedProvider
from agentos.storage.store import Store


def _damaged(agentos_home: Path) -> str:
    """Agent "sam" with 28 messages: the first 20 compacted into one indexed data file, which is then cut short."""
    sam = Agent.create("sam", provider=ScriptedProvider([f"reply {i}" for i in range(14)]))
    for i in range(10):
        list(sam.turn(f"message {i}"))
    sam.store.compact()  # one data file, and the B-tree index of agent_id covers its rows
    data = agentos_home / "db" / "messages.lance" / "data"
    compacted = max(data.iterdir(), key=lambda p: p.stat().st_mtime_ns)
    for i in range(10, 14):
        list(sam.turn(f"message {i}"))
    sam.close()
    agent_module._stores.clear()  # what follows opens the damaged files afresh, as a new process would
    with open(compacted, "r+b") as f:
        f.truncate(100)
    return sam.id


def _load(agentos_home: Path, **kwargs: object) -> Agent:
    return Agent.load("sam", provider=ScriptedProvider(["ok"]), store=Store(agentos_home / "db"), **kwargs)  # type: ignore[arg-type]


def test_the_store_counts_the_messages_it_can_read_not_what_an_index_holds(agentos_home: Path) -> None:
    agent_id = _damaged(agentos_home)
    store = Store(agentos_home / "db")
    assert store.count_messages(agent_id) == 8
    assert store.count_messages(agent_id, below=24) == 4
    assert "messages" in store.damage  # the count found the damage and says so


def test_doctor_show_and_the_prompt_report_one_count_before_and_after_a_repair(
        agentos_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _damaged(agentos_home)
    with pytest.warns(DamageWarning) as caught:
        sam = _load(agentos_home, read_only=True)
    assert 'agent "sam": 20 of its 28 saved messages are missing from storage, 20 of them in its context.' in \
        str(caught[-1].message)
    assert sam.state.recall_count == 8 and sam.state.hidden_count == 0 and len(sam.context) == 8
    assert "Recall memory: all of this conversation is still in your context." in sam.system_prompt()

    agent_module._stores.clear()
    assert main(["doctor"]) == 1
    assert ('agent "sam": 20 of its 28 saved messages are missing (seq 0-19); they are lost unless a backup of the '
            "database folder has them. Recall memory holds the other 8.") in capsys.readouterr().out
    agent_module._stores.clear()
    assert main(["show", "sam"]) == 0
    out, err = capsys.readouterr()
    assert 'agent "sam": 20 of its 28 saved messages are missing from storage' in err
    assert "8 messages in context, 8 in recall memory;" in out
    assert "Recall memory: all of this conversation is still in your context." in out
    assert "  0 older messages are out of context (in recall)" in out

    agent_module._stores.clear()
    assert main(["doctor", "--repair"]) == 0
    assert ('agent "sam": 20 lost message(s) recorded; recall memory holds 8 of its 28 saved messages.'
            in capsys.readouterr().out)
    agent_module._stores.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error", DamageWarning)  # the loss is recorded: no more warnings
        assert main(["show", "sam"]) == 0
        out = capsys.readouterr().out
        sam = _load(agentos_home)
    assert "8 messages in context, 8 in recall memory;" in out and "  0 older messages are out of context" in out
    assert main(["list"]) == 0
    assert capsys.readouterr().out.splitlines()[1].split()[:3] == ["sam", "scripted/script", "8"]
    assert "Recall memory: all of this conversation is still in your context." in out
    assert sam.state.recall_count == 8 and sam.warnings == []
    list(sam.turn("still there?"))
    assert sam.state.recall_count == 10 and sam.state.message_count == 30  # seq numbers go on after the lost ones
    assert "Recall memory: all of this conversation is still in your context." in sam.system_prompt()
    sam.close()


def test_damage_after_a_repair_is_counted_alike_by_doctor_and_by_loading(
        agentos_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _damaged(agentos_home)
    assert main(["doctor", "--repair"]) == 0
    agent_module._stores.clear()
    sam = _load(agentos_home)
    list(sam.turn("one more"))  # seq 28 and 29, in a data file of their own
    sam.close()
    agent_module._stores.clear()
    data = agentos_home / "db" / "messages.lance" / "data"
    max(data.iterdir(), key=lambda p: p.stat().st_mtime_ns).unlink()
    capsys.readouterr()

    with pytest.warns(DamageWarning) as caught:
        _load(agentos_home, read_only=True)
    assert 'agent "sam": 2 of its 30 saved messages are missing from storage' in str(caught[-1].message)
    agent_module._stores.clear()
    assert main(["doctor"]) == 1
    assert ('agent "sam": 2 of its 30 saved messages are missing, besides the 20 an earlier repair recorded as lost '
            "(seq 0-19, 28-29); they are lost unless a backup of the database folder has them. Recall memory holds "
            "the other 8.") in capsys.readouterr().out
