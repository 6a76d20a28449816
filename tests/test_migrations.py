"""A store written by an older agentos (one state row per revision, an edit log without revisions) is
upgraded when first opened, and a crash in the middle of the upgrade leaves a store that still opens."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import lancedb
import pyarrow as pa
import pytest
from memory_helpers import call

from agentos import Agent
from agentos.agent.agent import list_agents
from agentos.agent.state import AgentState
from agentos.blocks import Block
from agentos.messages import Message
from agentos.providers import ScriptedProvider
from agentos.storage.records import message_row
from agentos.storage.schemas import AGENTS, MEMORY_EDITS, MESSAGES, TIMESTAMP, schema_version

V1 = {b"agentos.schema_version": b"1"}
AGENTS_V1 = pa.schema([pa.field("name", pa.string(), nullable=False), pa.field("agent_id", pa.string(), nullable=False),
                       pa.field("rev", pa.int64(), nullable=False), pa.field("updated_at", TIMESTAMP, nullable=False),
                       pa.field("state", pa.string(), nullable=False)], metadata=V1)
EDITS_V1 = pa.schema([f for f in MEMORY_EDITS if f.name not in ("rev", "by")], metadata=V1)
MESSAGES_V1 = pa.schema([f for f in MESSAGES if f.name != "search_text"], metadata=V1)
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def old_store(home: Path) -> str:
    """What agentos wrote before one writer per agent: every state revision a row; returns the agent's id."""
    db = lancedb.connect(str(home / "db"))
    first = Message(role="user", content="my name is Ada", created_at=T0)
    reply = Message(role="assistant", content="Hi Ada!", created_at=T0 + timedelta(seconds=1))
    state = AgentState(name="ada", model="scripted/demo", blocks=[Block(label="human", value="Name: Ada")],
                       created_at=T0, last_active_at=T0)
    rows = []
    for rev in (1, 2, 3):  # older revisions are still there, as maintenance kept the last three
        state.rev, state.message_count = rev, 2 if rev == 3 else 1
        state.in_context_ids = [first.id, reply.id][: state.message_count]
        rows.append({"name": "ada", "agent_id": state.id, "rev": rev, "updated_at": T0 + timedelta(minutes=rev),
                     "state": state.model_dump_json()})
    db.create_table("agents", pa.Table.from_pylist(rows, schema=AGENTS_V1))
    db.create_table("messages", pa.Table.from_pylist(  # before keyword search had its own column
        [message_row(state.id, 0, first), message_row(state.id, 1, reply)], schema=MESSAGES_V1))
    db.create_table("memory_edits", pa.Table.from_pylist(
        [{"agent_id": state.id, "at": T0, "label": "human", "old_value": "", "new_value": "Name: Ada",
          "tool_call_id": "call-1"}], schema=EDITS_V1))
    return state.id


def test_an_old_store_is_upgraded_and_keeps_everything(agentos_home: Path) -> None:
    agent_id = old_store(agentos_home)
    agent = Agent.load("ada", provider=ScriptedProvider(["Welcome back, Ada."]))
    assert agent.id == agent_id and agent.state.rev == 3 and agent.state.message_count == 2
    assert [m.content for m in agent.context] == ["my name is Ada", "Hi Ada!"]
    assert [(e.label, e.new_value) for e in agent.memory_edits()] == [("human", "Name: Ada")]
    assert agent.memory_edits()[0].by == "agent"  # logged before edits recorded who made them
    assert list(agent.turn("do you remember me?"))[-1].type == "turn_finished"
    db = lancedb.connect(str(agentos_home / "db"))
    assert schema_version(db.open_table("agents").schema) == schema_version(AGENTS) == 2
    assert schema_version(db.open_table("memory_edits").schema) == schema_version(MEMORY_EDITS) == 3
    assert schema_version(db.open_table("messages").schema) == schema_version(MESSAGES) == 2
    assert db.open_table("agents").count_rows() == 1
    assert [s.name for s in list_agents()] == ["ada"]


def test_a_crash_in_the_middle_of_the_upgrade_leaves_a_store_that_opens(
        agentos_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentos.storage.db import Database

    old_store(agentos_home)
    real_drop = Database.drop

    def crash_after_dropping_the_old_table(self: Database, name: str) -> None:
        real_drop(self, name)
        if name == "agents":
            raise KeyboardInterrupt("power cut")

    with monkeypatch.context() as patched, pytest.raises(KeyboardInterrupt):
        patched.setattr(Database, "drop", crash_after_dropping_the_old_table)
        Agent.load("ada", provider=ScriptedProvider([]))
    from agentos.agent import directory as agent_module

    agent_module._stores.clear()  # a new process
    agent = Agent.load("ada", provider=ScriptedProvider(["still here"]))
    assert agent.state.rev == 3 and [m.content for m in agent.context] == ["my name is Ada", "Hi Ada!"]
    assert json.loads(agent.store.agent_row("ada").state)["message_count"] == 2  # type: ignore[union-attr]


def test_old_messages_are_found_by_keyword_search_after_the_upgrade(agentos_home: Path) -> None:
    old_store(agentos_home)
    agent = Agent.load("ada", provider=ScriptedProvider([]))
    found, is_error = call(agent, "conversation_search", query="name")
    assert not is_error and "my name is Ada" in found


def test_a_table_with_no_upgrade_path_is_a_clear_error(agentos_home: Path) -> None:
    from agentos.errors import StorageError

    db = lancedb.connect(str(agentos_home / "db"))
    db.create_table("messages", schema=pa.schema([pa.field("id", pa.string())]))  # not stamped by any agentos
    with pytest.raises(StorageError, match="has schema version 0, which this agentos cannot upgrade to version 2"):
        Agent.create("sam", provider=ScriptedProvider([])).add_history([Message.user("hi")])


def test_a_table_whose_rows_do_not_match_its_version_is_a_clear_error(agentos_home: Path) -> None:
    from agentos.errors import StorageError

    db = lancedb.connect(str(agentos_home / "db"))
    db.create_table("messages", schema=pa.schema([pa.field("id", pa.string())], metadata=V1))
    with pytest.raises(StorageError, match="its rows do not match that version.*agentos doctor"):
        Agent.create("sam", provider=ScriptedProvider([])).add_history([Message.user("hi")])
    assert db.open_table("messages").count_rows() == 0 and schema_version(db.open_table("messages").schema) == 1
