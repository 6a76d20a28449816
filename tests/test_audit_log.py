"""The audit log: who read or changed an agent's memory (the model's tool call, the user's command, an MCP client, an
API key's user), shown by `agentos audit NAME` and `GET /api/agents/NAME/audit`, carried by export and import, never
holding what the memory says, and never failing the work it records."""

from __future__ import annotations

import asyncio
import json
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from agentos import Agent
from agentos.actors import Actor, acting_as
from agentos.agent.state import AgentSettings
from agentos.cli import main
from agentos.errors import AgentNotFoundError, StorageError
from agentos.events import ToolCallStarted, TurnFinished
from agentos.mcp_server.gate import MemoryGate
from agentos.mcp_server.server import MemoryServer
from agentos.memory.archival import ArchivalTier
from agentos.memory.facts.tier import FactTier
from agentos.portable.archive import export_agent, import_agent
from agentos.providers import ScriptedProvider, Step
from agentos.server.users import Users, user_database
from agentos.storage import Store, audit
from agentos.storage.audit import AuditEntry, AuditWarning
from tests.memory_helpers import say
from tests.serve_helpers import served
from tests.test_cli_facts import add_fact

SECRET = "Zyxwvutsrq"  # in every block, passage, message and query below: never in the audit log


def make(steps: list[Any], name: str = "sam") -> Agent:
    return Agent.create(name, provider=ScriptedProvider(steps), human="Nothing yet.",
                        settings=AgentSettings(embedder="none"))


def memory_turn() -> list[Any]:
    """A model that appends to a block, stores a passage, searches both tiers, then replies."""
    return [Step(tool_calls=[("core_memory_append", {"label": "human", "content": f"Name: {SECRET}"})]),
            Step(tool_calls=[("archival_insert", {"content": f"The {SECRET} lives by the sea."})]),
            Step(tool_calls=[("archival_search", {"query": SECRET}), ("conversation_search", {"query": SECRET})]),
            "Noted."]


def entries(agent: Agent) -> list[AuditEntry]:
    return agent.store.audit.entries(agent.id)


def raw_rows(store: Store) -> str:
    """Every row of the audit table, every column, as one text."""
    return json.dumps(store.db.table("audit_log").to_arrow().to_pylist(), default=str)


def test_a_turn_records_the_model_with_each_tool_call_and_what_it_reached() -> None:
    agent = make(memory_turn())
    events = list(agent.turn(f"Hi, I am {SECRET}."))
    assert isinstance(events[-1], TurnFinished)
    calls = {e.name: e.call_id for e in events if isinstance(e, ToolCallStarted)}
    seen = [(e.by, e.action, e.what, e.count) for e in entries(agent)]
    assert seen == [
        (Actor("model", f"core_memory_append {calls['core_memory_append']}"), "change", "core memory", 1),
        (Actor("model", f"archival_insert {calls['archival_insert']}"), "change", "archival", 1),
        (Actor("model", f"archival_search {calls['archival_search']}"), "read", "archival", 1),
        (Actor("model", f"conversation_search {calls['conversation_search']}"), "read", "recall", 1),
    ]
    edit, insert = entries(agent)[:2]
    assert edit.target == "human" and edit.detail == "12 -> 29 chars"
    assert insert.target == agent.tier(ArchivalTier).search("").hits[0].id
    assert SECRET.lower() not in raw_rows(agent.store).lower()
    agent.close()


def test_changes_by_hand_record_the_user_and_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    make([]).close()
    assert main(["memory", "sam", "set", "human", f"Name: {SECRET}"]) == 0
    assert main(["archival", "sam", "add", f"{SECRET} notes"]) == 0
    assert main(["archival", "sam", "search", SECRET]) == 0  # the local user's reads are not logged
    agent = Agent.load("sam", with_model=False)
    with acting_as("user", "a test"):
        fact = add_fact(agent, f"The user is {SECRET}")  # consolidation's change: the model's
        agent.tier(FactTier).retract(fact.id)
        agent.rewind(0)
    seen = [(e.by, e.action, e.what, e.target) for e in entries(agent)]
    assert seen[:2] == [(Actor("user", "agentos memory set"), "change", "core memory", "human"),
                        (Actor("user", "agentos archival add"), "change", "archival", seen[1][3])]
    assert seen[2:4] == [(Actor("model", "fact consolidation"), "change", "facts", fact.id),
                         (Actor("user", "a test"), "change", "facts", fact.id)]
    assert seen[4][:3] == (Actor("user", "a test"), "change", "rewind") and seen[4][3] == "point 0"
    assert entries(agent)[3].detail == "retract 1" and "1 block change(s)" in entries(agent)[4].detail
    assert SECRET.lower() not in raw_rows(agent.store).lower()
    agent.close()


def test_agentos_audit_filters_by_since_and_limit_and_speaks_json(capsys: pytest.CaptureFixture[str]) -> None:
    agent = make([])
    old, new = datetime(2024, 1, 5, tzinfo=UTC), datetime(2024, 7, 5, tzinfo=UTC)
    agent.store.audit.record(agent.id, [AuditEntry("change", "archival", "arch-old", 2, at=old),
                                        AuditEntry("read", "facts", "", 3, by=Actor("api", "api key of user ada"),
                                                   at=new)])
    agent.close()
    capsys.readouterr()
    assert main(["audit", "sam"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and "arch-old" in lines[0] and "api: api key of user ada" in lines[1]  # newest last
    assert main(["audit", "sam", "--since", "2024-06-01"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and "read" in lines[0] and "facts" in lines[0]
    assert main(["audit", "sam", "--limit", "1", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert (shown["actor_kind"], shown["actor"], shown["what"], shown["count"]) == (
        "api", "api key of user ada", "facts", 3)
    assert main(["audit", "sam", "--since", "2099-01-01"]) == 0
    assert capsys.readouterr().out == "No audit entries since then.\n"
    assert main(["audit", "nobody"]) == 1
    assert 'no agent named "nobody"' in capsys.readouterr().err


def test_api_requests_record_the_keys_user_and_the_log_is_served() -> None:
    ada, key = Users().add("ada")
    store = Store(user_database(ada))
    agent = Agent.create("sam", model="scripted/echo", provider=ScriptedProvider([]), store=store,
                         settings=AgentSettings(embedder="none"))
    agent.close()
    store.close()
    with served(models=lambda spec: ScriptedProvider(lambda request: "Noted.")) as (_, client):
        auth = {"Authorization": f"Bearer {key}"}
        assert client.put("/api/agents/sam/blocks/human", json={"value": SECRET}, headers=auth).status_code == 200
        assert client.post("/api/agents/sam/archival", json={"text": SECRET}, headers=auth).status_code == 201
        assert client.get("/api/agents/sam/blocks", headers=auth).status_code == 200
        assert client.get("/api/agents/sam/archival/search", params={"query": SECRET}, headers=auth).status_code == 200
        log = client.get("/api/agents/sam/audit", headers=auth)
        since = client.get("/api/agents/sam/audit", params={"since": "2099-01-01"}, headers=auth)
        wrong = client.get("/api/agents/sam/audit", params={"since": "soon"}, headers=auth)
        missing = client.get("/api/agents/nobody/audit", headers=auth)
    assert log.status_code == 200, log.text
    seen = [(e["actor_kind"], e["actor"], e["action"], e["what"]) for e in log.json()["entries"]]
    assert seen == [("api", "api key of user ada", "change", "core memory"),
                    ("api", "api key of user ada", "change", "archival"),
                    ("api", "api key of user ada", "read", "core memory"),
                    ("api", "api key of user ada", "read", "archival")]
    assert SECRET.lower() not in log.text.lower()
    assert since.json() == {"entries": []}
    assert wrong.status_code == 422 and missing.status_code == 404


def test_an_mcp_client_is_recorded_for_its_reads_and_edits() -> None:
    make([]).close()
    server = MemoryServer(MemoryGate("sam"))

    async def talk() -> None:
        async with Client(server.server) as client:
            await client.call_tool("read_memory_blocks", {})
            await client.read_resource("agentos://sam/blocks/human")
            await client.call_tool("core_memory_append", {"label": "human", "content": SECRET})
            await client.call_tool("archival_search", {"query": SECRET})

    asyncio.run(talk())
    agent = Agent.load("sam", read_only=True)
    seen = [(e.by.kind, e.action, e.what, e.target) for e in entries(agent)]
    assert seen == [("mcp", "read", "core memory", ""), ("mcp", "read", "core memory", "human"),
                    ("mcp", "change", "core memory", "human"), ("mcp", "read", "archival", "")]
    assert all(e.by.name.startswith("mcp client ") for e in entries(agent))
    assert SECRET.lower() not in raw_rows(agent.store).lower()
    agent.close()


def without_audit(path: Path, to: Path) -> None:
    """A copy of an export file as an agentos without the audit log wrote it: no audit member, none in the manifest."""
    with zipfile.ZipFile(path) as old, zipfile.ZipFile(to, "w") as new:
        for member in old.namelist():
            if member == "manifest.json":
                manifest = json.loads(old.read(member))
                del manifest["members"]["audit_log.arrow"]
                new.writestr(member, json.dumps(manifest))
            elif member != "audit_log.arrow":
                new.writestr(member, old.read(member))


def test_export_and_import_carry_the_log_and_an_older_file_imports(tmp_path: Path) -> None:
    agent = make([])
    agent.set_block("human", "Name: Ada")
    say(agent, "user", "hello")
    store = agent.store
    export_agent(store, "sam", tmp_path / "sam.agentos", held=agent)
    mine = entries(agent)
    agent.close()
    with acting_as("user", "a test"):
        report = import_agent(store, tmp_path / "sam.agentos", "twin")
    assert report.rows["audit log"] == len(mine) == 1
    twin = Agent.load("twin", store=store, read_only=True)
    carried = entries(twin)
    assert [(e.id, e.by, e.what, e.target, e.at) for e in carried[:-1]] == [
        (e.id, e.by, e.what, e.target, e.at) for e in mine]
    assert (carried[-1].by, carried[-1].what, carried[-1].detail) == (Actor("user", "a test"), "import", "sam.agentos")
    twin.close()
    without_audit(tmp_path / "sam.agentos", tmp_path / "old.agentos")
    report = import_agent(store, tmp_path / "old.agentos", "elder")
    assert "audit log" not in report.rows
    elder = Agent.load("elder", store=store, read_only=True)
    assert [e.what for e in entries(elder)] == ["import"]
    elder.close()
    Agent.delete("twin", store=store)
    assert entries(twin) == []  # deleting an agent takes its log with it
    with pytest.raises(AgentNotFoundError):
        Agent.load("twin", store=store)


def test_remove_takes_entries_out_and_forget_can_log_a_count() -> None:
    agent = make([])
    agent.set_block("human", "one")
    agent.set_block("human", "two")
    gone = agent.store.audit.remove(agent.id, "what = 'core memory'")
    assert gone == 2 and entries(agent) == []
    agent.store.audit.record(agent.id, [audit.change("forget", gone, detail=f"forgotten: {gone} rows")])
    assert [(e.what, e.count, e.detail) for e in entries(agent)] == [("forget", 2, "forgotten: 2 rows")]
    agent.close()


def test_a_failing_audit_write_fails_neither_a_turn_nor_a_command(monkeypatch: pytest.MonkeyPatch) -> None:
    agent = make(memory_turn())
    real = agent.store.db.add

    def add(name: str, rows: Any) -> None:
        if name == "audit_log":
            raise StorageError("the disk is full")
        real(name, rows)

    monkeypatch.setattr(agent.store.db, "add", add)
    monkeypatch.setattr(audit, "_warned", False)
    with pytest.warns(AuditWarning, match="the disk is full"):
        events = list(agent.turn("Hi"))  # entries written with a step, beside its messages
        edit = agent.set_block("persona", "I am Sam.")
        stored = agent.tier(ArchivalTier).search("").hits[0].id
        deleted = agent.tier(ArchivalTier).delete(stored)  # an entry written at once, outside a step
    assert isinstance(events[-1], TurnFinished) and not [e for e in events if e.type == "turn_failed"]
    assert not [e for e in events if e.type == "tool_call_finished" and e.is_error]
    assert agent.block("human").value.endswith(SECRET) and edit.new_value == "I am Sam."
    assert deleted and agent.tier(ArchivalTier).count() == 0
    monkeypatch.delattr(agent.store.db, "add")  # writes again: what was not logged stays unlogged
    agent.close()
    reopened = Agent.load("sam", read_only=True)
    assert reopened.block("persona").value == "I am Sam." and entries(reopened) == []
    reopened.close()
