"""`agentos doctor --repair` never leaves an agent it can see unreachable: a lost directory row is rebuilt from the
agent's own state table, and a lost state from an older version of its table or its newest restore point plus what
was saved after it, saying what was rebuilt and from what."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import agentos.agent.directory as agent_module
from agentos import Agent
from agentos.cli import main
from agentos.memory.archival import ArchivalTier
from agentos.providers import ScriptedProvider
from agentos.storage.schemas import state_table_name
from agentos.storage.store import Store


def _home(agentos_home: Path) -> dict[str, str]:
    """Two agents of three turns each and a passage each, closed; their ids by name."""
    ids = {}
    for name in ("sam", "kim"):
        agent = Agent.create(name, provider=ScriptedProvider([f"reply {i}" for i in range(3)]))
        for i in range(3):
            list(agent.turn(f"{name} message {i}"))
        agent.tier(ArchivalTier).insert(f"{name} likes tea")
        agent.close()
        ids[name] = agent.id
    agent_module._stores.clear()
    return ids


def _newest(folder: Path) -> Path:
    return max(folder.iterdir(), key=lambda p: p.stat().st_mtime_ns)


def _forget_older_versions(table: Path) -> None:
    """Keep only the newest manifest, as version cleanup after a compaction does."""
    manifests = sorted((table / "_versions").glob("*.manifest"), key=lambda p: p.stat().st_mtime_ns)
    for manifest in manifests[:-1]:
        manifest.unlink()


def _repair(capsys: pytest.CaptureFixture[str]) -> str:
    agent_module._stores.clear()
    capsys.readouterr()
    assert main(["doctor", "--repair"]) == 0
    out = capsys.readouterr().out
    agent_module._stores.clear()
    assert main(["doctor"]) == 0 and "No damage found." in capsys.readouterr().out
    agent_module._stores.clear()
    return out


def _listed(capsys: pytest.CaptureFixture[str]) -> list[str]:
    capsys.readouterr()
    assert main(["list"]) == 0
    return [line.split()[0] for line in capsys.readouterr().out.splitlines()[1:]]


def _chats(name: str, agentos_home: Path, last: list[str]) -> None:
    agent = Agent.load(name, provider=ScriptedProvider(["still here"]), store=Store(agentos_home / "db"))
    assert [m.content for m in agent.context][-len(last):] == last
    assert agent.warnings == []
    assert list(agent.turn("and now?"))[-1].type == "turn_finished"
    agent.close()
    agent_module._stores.clear()


@pytest.mark.parametrize("damage", ["delete", "truncate"])
def test_a_lost_newest_directory_file_keeps_every_agent_listed(
        agentos_home: Path, capsys: pytest.CaptureFixture[str], damage: str) -> None:
    _home(agentos_home)
    lost = _newest(agentos_home / "db" / "agents.lance" / "data")  # the claim of "kim"
    lost.unlink() if damage == "delete" else lost.write_bytes(lost.read_bytes()[:20])
    out = _repair(capsys)
    assert "  recovered: the agent directory at revision 1, from an older version of the table" in out
    assert '  recovered: agent "kim": its name and id, from its own state table' in out
    assert _listed(capsys) == ["kim", "sam"]
    _chats("kim", agentos_home, ["kim message 2", "reply 2"])


def test_a_directory_lost_whole_and_made_anew_is_rebuilt_from_the_state_tables(
        agentos_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _home(agentos_home)
    shutil.rmtree(agentos_home / "db" / "agents.lance")
    assert _listed(capsys) == []  # `list` made an empty directory where the lost one was
    out = _repair(capsys)
    assert "table 'agents': it names none of the agents whose state tables are here" in out
    assert '  recovered: agent "kim": its name and id, from its own state table' in out
    assert '  recovered: agent "sam": its name and id, from its own state table' in out
    assert _listed(capsys) == ["kim", "sam"]
    _chats("sam", agentos_home, ["sam message 2", "reply 2"])


def test_a_healthy_directory_does_not_bring_back_a_deleted_agents_leftovers(
        agentos_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ids = _home(agentos_home)
    store = Store(agentos_home / "db")
    store.agents.directory.remove(ids["kim"])  # a delete cut short after its name went: the rest is leftovers
    agent_module._stores.clear()
    capsys.readouterr()
    assert main(["doctor", "--repair"]) == 0
    assert _listed(capsys) == ["sam"]


def test_a_lost_state_with_its_older_versions_cleaned_up_is_rebuilt_from_the_newest_restore_point(
        agentos_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ids = _home(agentos_home)
    kim = Agent.load("kim", provider=ScriptedProvider([]), store=Store(agentos_home / "db"))
    kim.set_block("human", "Name: Kim. Likes tea.")  # saved after the last restore point
    kim.add_history([])
    kim.close()
    agent_module._stores.clear()
    table = agentos_home / "db" / f"{state_table_name(ids['kim'])}.lance"
    _newest(table / "data").unlink()
    _forget_older_versions(table)
    out = _repair(capsys)
    assert "  recovered: the agent's state, rebuilt from its restore point of revision " in out
    assert "then memory edits made after it (1 of block 'human')" in out
    assert _listed(capsys) == ["kim", "sam"]
    agent = Agent.load("kim", provider=ScriptedProvider(["ok"]), store=Store(agentos_home / "db"))
    assert agent.block("human").value == "Name: Kim. Likes tea."
    assert [m.content for m in agent.context][-2:] == ["kim message 2", "reply 2"]
    assert list(agent.turn("still there?"))[-1].type == "turn_finished"
    agent.close()


def test_a_lost_state_after_the_last_restore_point_gets_the_later_messages_back(
        agentos_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from agentos.messages import Message

    ids = _home(agentos_home)
    kim = Agent.load("kim", provider=ScriptedProvider([]), store=Store(agentos_home / "db"))
    kim.add_history([Message(role="user", content="an imported line"),
                     Message(role="assistant", content="an imported answer")], in_context=2)
    kim.close()
    agent_module._stores.clear()
    table = agentos_home / "db" / f"{state_table_name(ids['kim'])}.lance"
    for data in (table / "data").iterdir():
        data.unlink()  # no version of the state table can be read: only the restore points are left
    out = _repair(capsys)
    assert "then 2 message(s) saved after it (seq 6-7)" in out
    _chats("kim", agentos_home, ["an imported line", "an imported answer"])


def test_a_state_table_lost_whole_is_rebuilt_from_its_restore_points(
        agentos_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ids = _home(agentos_home)
    shutil.rmtree(agentos_home / "db" / f"{state_table_name(ids['kim'])}.lance")
    out = _repair(capsys)
    assert f"table '{state_table_name(ids['kim'])}': it is missing" in out
    assert "  recovered: the agent's state, rebuilt from its restore point of revision" in out
    _chats("kim", agentos_home, ["kim message 2", "reply 2"])
