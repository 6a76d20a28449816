"""Damaged files: what can be read is loaded, the damage is named with what to do, and `agentos doctor --repair`
restores what the files still hold, listing what was recovered and what was lost."""

from __future__ import annotations

from pathlib import Path

import pytest

import agentos.agent.directory as agent_module
from agentos import Agent
from agentos.cli import main
from agentos.errors import AgentNotFoundError, DamagedStoreError, DamageWarning
from agentos.memory.archival import ArchivalTier
from agentos.providers import ScriptedProvider
from agentos.storage.schemas import state_table_name
from agentos.storage.store import Store

DOCTOR_HINT = "Run `agentos doctor` to see what is affected, and `agentos doctor --repair` to rebuild it from what can be read."


def _home(agentos_home: Path) -> dict[str, str]:
    """Two agents of five turns each and two archival passages each, closed; returns their ids by name."""
    ids = {}
    for name in ("sam", "kim"):
        agent = Agent.create(name, provider=ScriptedProvider([f"reply {i}" for i in range(5)]))
        for i in range(5):
            list(agent.turn(f"{name} message {i}"))
        agent.tier(ArchivalTier).insert(f"{name} likes tea")
        agent.tier(ArchivalTier).insert(f"{name} likes walks")
        agent.close()
        ids[name] = agent.id
    agent_module._stores.clear()  # what follows opens the damaged files afresh, as a new process would
    return ids


def _newest(folder: Path, suffix: str) -> Path:
    return max((p for p in folder.iterdir() if p.name.endswith(suffix)), key=lambda p: p.stat().st_mtime_ns)


def _load(name: str, agentos_home: Path, **kwargs: object) -> Agent:
    return Agent.load(name, provider=ScriptedProvider(["ok"]), store=Store(agentos_home / "db"), **kwargs)  # type: ignore[arg-type]


def test_a_deleted_data_file_of_messages_loads_every_agent_and_doctor_lists_the_loss(
        agentos_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _home(agentos_home)
    lost = _newest(agentos_home / "db" / "messages.lance" / "data", ".lance")  # kim's last step
    lost.unlink()

    with pytest.warns(DamageWarning) as caught:
        sam = _load("sam", agentos_home, read_only=True)
    assert [m.content for m in sam.context][-2:] == ["sam message 4", "reply 4"]  # sam's rows are all readable
    assert str(caught[0].message) == (
        "table 'messages' is damaged: 1 of its data files cannot be read (the file is missing), so 2 row(s) in them "
        "are left out. What could be read was loaded. Run `agentos doctor` to see what is affected, and "
        "`agentos doctor --repair` to rebuild it from what can be read.")
    with pytest.warns(DamageWarning) as caught:
        kim = _load("kim", agentos_home)
    assert 'agent "kim": 2 of its 10 saved messages are missing from storage, 2 of them in its context.' in \
        str(caught[-1].message)
    assert [m.content for m in kim.context][-2:] == ["kim message 3", "reply 3"]
    assert list(kim.turn("still there?"))[-1].type == "turn_finished"  # chatting goes on
    kim.close()

    agent_module._stores.clear()
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert f"table 'messages': data file {lost.name} cannot be read (the file is missing)" in out
    assert "  lost: 2 row(s) of fragment" in out
    assert ('agent "kim": 2 of its 12 saved messages are missing (seq 8-9); they are lost unless a backup of the '
            "database folder has them.") in out
    assert main(["doctor", "--repair"]) == 0
    out = capsys.readouterr().out
    assert "Repaired. The damaged tables as they were are kept in " in out
    backups = list((agentos_home / "doctor-backups").iterdir())
    assert (backups[0] / "messages.lance").is_dir()  # the damaged table, as it was
    agent_module._stores.clear()
    assert main(["doctor"]) == 0 and "No damage found." in capsys.readouterr().out
    with warnings_as_errors():
        kim = _load("kim", agentos_home)  # the loss is recorded: no more warnings
    assert kim.store.count_messages(kim.id) == 10 and [m.content for m in kim.context][-1] == "ok"


def test_a_truncated_data_file_is_reported_in_search_and_repaired(agentos_home: Path) -> None:
    _home(agentos_home)
    data = sorted((agentos_home / "db" / "messages.lance" / "data").iterdir(), key=lambda p: p.stat().st_mtime_ns)
    with open(data[2], "r+b") as f:  # sam's third step
        f.truncate(100)
    with pytest.warns(DamageWarning):
        sam = _load("sam", agentos_home)
    assert sam.store.count_messages(sam.id) == 8
    assert list(sam.turn("and now?"))[-1].type == "turn_finished"
    sam.close()
    agent_module._stores.clear()
    assert main(["doctor", "sam", "--repair"]) == 0
    agent_module._stores.clear()
    assert main(["doctor"]) == 0


def test_a_truncated_archival_manifest_leaves_chat_working_and_is_recovered(
        agentos_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ids = _home(agentos_home)
    manifest = _newest(agentos_home / "db" / f"archival_{ids['kim']}.lance" / "_versions", ".manifest")
    with open(manifest, "r+b") as f:  # the insert of "kim likes walks"
        f.truncate(20)
    kim = _load("kim", agentos_home)
    events = list(kim.turn("hello"))
    assert events[-1].type == "turn_finished"
    assert "Archival memory cannot be read right now: could not count rows of" in kim.system_prompt()
    assert DOCTOR_HINT in kim.system_prompt()
    kim.close()

    agent_module._stores.clear()
    assert main(["archival", "kim", "list"]) == 1
    assert "a file of the store is cut short or corrupt. " + DOCTOR_HINT in capsys.readouterr().err
    assert main(["doctor", "kim"]) == 1
    out = capsys.readouterr().out
    assert f"its newest 1 version(s) cannot be read ({manifest.name}); version " in out
    assert "  can recover: 1 row(s) that no readable version of the table refers to" in out
    assert main(["doctor", "kim", "--repair"]) == 0
    assert "  recovered: 1 row(s)" in capsys.readouterr().out
    agent_module._stores.clear()
    passages = _load("kim", agentos_home, read_only=True).tier(ArchivalTier).search("", page_size=10)
    assert sorted(h.text for h in passages.hits) == ["kim likes tea", "kim likes walks"]


def test_a_deleted_newest_manifest_of_messages_is_named_at_load_and_its_messages_recovered(
        agentos_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _home(agentos_home)
    _newest(agentos_home / "db" / "messages.lance" / "_versions", ".manifest").unlink()  # kim's last step
    with pytest.warns(DamageWarning) as caught:
        kim = _load("kim", agentos_home, read_only=True)
    assert str(caught[-1].message).startswith('agent "kim": 2 of its 10 saved messages are missing from storage, 2 of '
                                              'them in its context. Run `agentos doctor kim`')
    with pytest.raises(DamagedStoreError, match=r"of table 'messages' \(the messages of every agent\) are missing"):
        _load("sam", agentos_home)  # any writer would commit over the lost version
    agent_module._stores.clear()
    assert main(["doctor", "--repair"]) == 0
    assert "  recovered: 2 saved message(s) that no readable version of the table refers to" in capsys.readouterr().out
    agent_module._stores.clear()
    kim = _load("kim", agentos_home)
    assert kim.warnings == []
    assert [m.content for m in kim.context][-2:] == ["kim message 4", "reply 4"]  # nothing lost


def test_a_state_rolled_back_by_lost_manifests_is_refused_for_writing_and_restored(
        agentos_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ids = _home(agentos_home)
    versions = agentos_home / "db" / f"{state_table_name(ids['kim'])}.lance" / "_versions"
    for _ in range(2):  # the release and the last step: the state reads as revision 4
        _newest(versions, ".manifest").unlink()
    with pytest.warns(DamageWarning, match=r"its newest saved state \(revision 5\) is missing from its table; this is "
                                           r"revision 4\. Run `agentos doctor kim --repair` to restore it\."):
        _load("kim", agentos_home, read_only=True)
    with pytest.raises(DamagedStoreError) as refused:
        _load("kim", agentos_home)
    assert str(refused.value).startswith(f"agent \"kim\": the newest 2 version(s) of table "
                                         f"'{state_table_name(ids['kim'])}' (its state) are missing, though their data "
                                         f"is still on disk, so it cannot be opened for writing: a write now would")
    agent_module._stores.clear()
    assert main(["doctor", "kim", "--repair"]) == 0
    assert "  recovered: the agent's state at revision 5 (the table's newest version showed 4)" in \
        capsys.readouterr().out
    agent_module._stores.clear()
    kim = _load("kim", agentos_home)
    assert kim.state.rev >= 5 and [m.content for m in kim.context][-2:] == ["kim message 4", "reply 4"]
    assert list(kim.turn("anything?"))[-1].type == "turn_finished"


def test_doctor_on_a_healthy_store_and_an_unknown_agent(capsys: pytest.CaptureFixture[str]) -> None:
    Agent.create("sam", provider=ScriptedProvider([])).close()
    assert main(["doctor"]) == 0 and capsys.readouterr().out.strip() == "No damage found."
    assert main(["doctor", "nosuch"]) == 1
    assert 'no agent named "nosuch"' in capsys.readouterr().err


class warnings_as_errors:
    """A block in which any DamageWarning fails the test."""

    def __enter__(self) -> None:
        import warnings

        self._catch = warnings.catch_warnings()
        self._catch.__enter__()
        warnings.simplefilter("error", DamageWarning)

    def __exit__(self, *exc: object) -> None:
        self._catch.__exit__(*exc)




def test_a_lost_newest_version_of_the_agent_directory_is_named_and_restored(
        agentos_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _home(agentos_home)
    _newest(agentos_home / "db" / "agents.lance" / "_versions", ".manifest").unlink()  # the claim of "kim"
    with pytest.raises(AgentNotFoundError) as missing:
        _load("kim", agentos_home, read_only=True)
    assert str(missing.value) == (
        'no agent named "kim" in the agent directory as it reads now, but its newest 1 version(s) are missing and may '
        "name it. Existing agents: sam. Run `agentos doctor --repair` to restore them.")
    with pytest.raises(DamagedStoreError, match="no agent can be created now: the newest 1 version"):
        Agent.create("lee", provider=ScriptedProvider([]), store=Store(agentos_home / "db"))
    agent_module._stores.clear()
    assert main(["doctor", "--repair"]) == 0
    assert "  recovered: the agent directory at revision 2 (the table's newest version showed 1)" in \
        capsys.readouterr().out
    agent_module._stores.clear()
    kim = _load("kim", agentos_home)
    assert [m.content for m in kim.context][-2:] == ["kim message 4", "reply 4"] and kim.warnings == []


def test_a_repair_scoped_to_one_agent_keeps_what_the_others_can_recover(
        agentos_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _home(agentos_home)
    _newest(agentos_home / "db" / "messages.lance" / "_versions", ".manifest").unlink()  # kim's last step
    with pytest.raises(DamagedStoreError, match=r"cannot write to table 'messages': its newest 1 version\(s\) are "
                                                r"missing"):
        Agent.delete("kim", store=Store(agentos_home / "db"), force=True)  # no writer commits over the loss
    agent_module._stores.clear()
    assert main(["doctor", "sam", "--repair"]) == 0  # the shared table is judged against every agent's state
    assert "  recovered: 2 saved message(s)" in capsys.readouterr().out
    agent_module._stores.clear()
    kim = _load("kim", agentos_home)
    assert kim.warnings == [] and [m.content for m in kim.context][-2:] == ["kim message 4", "reply 4"]


def test_a_table_folder_with_data_but_no_manifest_is_never_removed(agentos_home: Path) -> None:
    from agentos.errors import StorageError

    _home(agentos_home)
    folder = agentos_home / "db" / "messages.lance"
    for manifest in (folder / "_versions").glob("*.manifest"):
        manifest.unlink()
    with pytest.raises(StorageError):
        _load("sam", agentos_home)
    assert any((folder / "data").iterdir())  # the rows are still there for a backup or doctor to read
