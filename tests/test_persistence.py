"""Agents persist after every step and resume, in a new process, exactly where they were."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agentos import Agent
from agentos.agent.agent import list_agents
from agentos.blocks import Block
from agentos.errors import AgentExistsError, AgentNotFoundError, DamageWarning, InvalidNameError, StorageError
from agentos.providers import ScriptedProvider, Step
from agentos.storage.schemas import MESSAGES, schema_version
from tests.memory_helpers import archival

REPO = Path(__file__).resolve().parent.parent


def snapshot(agent: Agent) -> dict:
    return {
        "blocks": [b.model_dump() for b in agent.blocks],
        "context": [m.model_dump(mode="json") for m in agent.context],
        "message_count": agent.state.message_count,
        "archival_count": archival(agent).count(),
        "rev": agent.state.rev,
        "last_edit": agent.state.last_memory_edit_at.isoformat() if agent.state.last_memory_edit_at else None,
    }


def test_resume_in_a_fresh_process_has_the_same_blocks_context_and_counts(agentos_home: Path) -> None:
    provider = ScriptedProvider(
        [
            Step(tool_calls=[("core_memory_append", {"label": "human", "content": "Name: Ada"})]),
            "Hi Ada!",
            "Noted.",
        ]
    )
    agent = Agent.create("sam", provider=provider, blocks=[Block(label="project", value="agentos", limit=100)])
    list(agent.turn("I'm Ada"))
    list(agent.turn("I like tea"))
    expected = snapshot(agent)
    agent.close()  # another process may open it now

    script = textwrap.dedent(
        """
        import json, sys
        from agentos import Agent
        from agentos.providers import ScriptedProvider
        from tests.test_persistence import snapshot
        provider = ScriptedProvider(["Welcome back, Ada."])
        agent = Agent.load("sam", provider=provider)
        before = snapshot(agent)
        events = list(agent.turn("Do you remember me?"))
        print(json.dumps({"before": before, "reply": events[-1].reply.content,
                          "seen": [m.content for m in provider.requests[0].messages],
                          "system": provider.requests[0].system}))
        """
    )
    env = {**os.environ, "AGENTOS_HOME": str(agentos_home)}
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["before"] == json.loads(json.dumps(expected))
    assert result["reply"] == "Welcome back, Ada."
    assert result["seen"][:-1] == [m["content"] for m in expected["context"]]
    assert "Name: Ada" in result["system"]
    assert "Recall memory: all of this conversation is still in your context." in result["system"]

    # and this process sees what the other one did
    again = Agent.load("sam", provider=ScriptedProvider([]))
    assert again.state.message_count == 8
    assert again.context[-1].content == "Welcome back, Ada."


def test_create_validates_names_and_refuses_duplicates() -> None:
    Agent.create("sam", provider=ScriptedProvider([]))
    with pytest.raises(AgentExistsError, match='an agent named "sam" already exists'):
        Agent.create("sam", provider=ScriptedProvider([]))
    for bad in ["", "has space", "../escape", "x" * 65, "-dash", "quote'"]:
        with pytest.raises(InvalidNameError):
            Agent.create(bad, provider=ScriptedProvider([]))


def test_unknown_agent_lists_existing_ones() -> None:
    Agent.create("alpha", provider=ScriptedProvider([]))
    Agent.create("beta", provider=ScriptedProvider([]))
    with pytest.raises(AgentNotFoundError) as err:
        Agent.load("gamma")
    assert str(err.value) == 'no agent named "gamma". Existing agents: alpha, beta. Create one with: agentos new gamma'


def test_an_unknown_agent_among_many_names_a_few_and_reads_no_state(monkeypatch: pytest.MonkeyPatch) -> None:
    """A server's 404 lists the caller's agents: hundreds of them once read every agent's state for each 404."""
    import agentos.agent.directory as directory
    from agentos.storage.agent_rows import AgentRows

    for name in ("alpha", "beta", "delta"):
        Agent.create(name, provider=ScriptedProvider([]))
    monkeypatch.setattr(directory, "NAMES_SHOWN", 2)
    monkeypatch.setattr(AgentRows, "_state", lambda *a: pytest.fail("a state was read to list names"))
    with pytest.raises(AgentNotFoundError) as err:
        Agent.load("gamma")
    assert str(err.value).startswith('no agent named "gamma". Existing agents: alpha, beta, and 1 more (agentos list).')


def test_list_and_delete() -> None:
    a = Agent.create("alpha", provider=ScriptedProvider(["x"]))
    Agent.create("beta", provider=ScriptedProvider([]))
    list(a.turn("hi"))
    states = list_agents()
    assert [s.name for s in states] == ["alpha", "beta"]
    assert states[0].message_count == 2
    Agent.delete("alpha")
    assert [s.name for s in list_agents()] == ["beta"]
    assert a.store.count_messages(a.id) == 0
    with pytest.raises(AgentNotFoundError):
        Agent.delete("alpha")


def test_state_is_saved_after_every_step() -> None:
    agent = Agent.create("sam", provider=ScriptedProvider(
        [Step(tool_calls=[("core_memory_append", {"label": "human", "content": "A"})]), "done"]))
    turn = agent.turn("go")
    usage_events = 0
    for event in turn:
        usage_events += event.type == "usage"
        if usage_events == 2:  # the second model call has answered: step one is saved
            break
    # a second process would now see the first step: the tool call and its result
    mid = Agent.load("sam", store=agent.store, read_only=True)
    assert [m.role for m in mid.context] == ["user", "assistant", "tool"]
    assert "A" in mid.block("human").value
    list(turn)
    assert [m.role for m in Agent.load("sam", provider=ScriptedProvider([])).context] == [
        "user", "assistant", "tool", "assistant"]


def test_loading_never_fails_because_a_block_is_over_its_limit() -> None:
    agent = Agent.create("sam", provider=ScriptedProvider([]), blocks=[Block(label="notes", value="x" * 50, limit=10)])
    loaded = Agent.load("sam", provider=ScriptedProvider([]))
    assert loaded.block("notes").value == "x" * 50
    assert agent.id == loaded.id


def test_a_missing_message_is_repaired_on_load() -> None:
    provider = ScriptedProvider([Step(tool_calls=[("core_memory_append", {"label": "human", "content": "A"})]), "ok"])
    agent = Agent.create("sam", provider=provider)
    list(agent.turn("go"))
    tool_result = agent.context[2]
    agent.save()
    agent.store.db.table("messages").delete(f"id = '{tool_result.id}'")  # as if a crash lost it
    with pytest.warns(DamageWarning, match=r'agent "sam": 1 of its 4 saved messages are missing from storage, 1 of '
                                           r"them in its context\. Run `agentos doctor sam`"):
        loaded = Agent.load("sam", provider=ScriptedProvider(["fine"]))
    assert [m.role for m in loaded.context] == ["user", "assistant", "tool", "assistant"]
    assert loaded.context[2].is_error and loaded.context[2].tool_call_id == agent.context[1].tool_calls[0].id
    assert list(loaded.turn("still there?"))[-1].type == "turn_finished"


def test_tables_carry_a_schema_version() -> None:
    agent = Agent.create("sam", provider=ScriptedProvider(["hi"]))
    list(agent.turn("hi"))
    assert schema_version(agent.store.db.table("messages").schema) == schema_version(MESSAGES) >= 1


def test_a_table_from_a_newer_agentos_is_a_clear_error(agentos_home: Path) -> None:
    import lancedb
    import pyarrow as pa

    db = lancedb.connect(str(agentos_home / "db"))
    db.create_table("agents", schema=pa.schema([pa.field("name", pa.string())],
                                               metadata={b"agentos.schema_version": b"99"}))
    with pytest.raises(StorageError, match="schema version 99, newer than this agentos understands"):
        Agent.create("sam", provider=ScriptedProvider([]))


def test_a_corrupt_database_is_a_clear_error(agentos_home: Path) -> None:
    Agent.create("sam", provider=ScriptedProvider([]))
    from agentos.agent import directory as agent_module

    agent_module._stores.clear()
    for manifest in (agentos_home / "db" / "agents.lance" / "_versions").iterdir():
        manifest.write_bytes(b"garbage")
    with pytest.raises(StorageError, match="could not"):
        Agent.load("sam", provider=ScriptedProvider([]))


def test_compaction_keeps_every_message_and_state() -> None:
    agent = Agent.create("sam", provider=ScriptedProvider(["r"] * 30))
    for i in range(30):
        list(agent.turn(f"m{i}"))
        agent.save()  # one commit per turn, as a slow model would cause
    before = agent.store.db.table("messages").stats()["fragment_stats"]["num_fragments"]
    agent.store.compact()
    assert agent.store.count_messages(agent.id) == 60
    loaded = Agent.load("sam", provider=ScriptedProvider([]))
    assert [m.content for m in loaded.context][-2:] == ["m29", "r"]
    assert loaded.state.rev == agent.state.rev
    assert before > 1
    assert agent.store.db.table("messages").stats()["fragment_stats"]["num_fragments"] == 1


def test_steps_are_written_when_a_process_exits_without_closing(agentos_home: Path) -> None:
    """A script that just ends has saved every step, gives the agent back, and exits promptly."""
    Agent.create("sam", provider=ScriptedProvider([])).close()
    script = textwrap.dedent(
        """
        import sys
        from agentos import Agent
        from agentos.providers import ScriptedProvider
        agent = Agent.load("sam", provider=ScriptedProvider(["a", "b", "c"]))
        for text in ("one", "two", "three"):
            list(agent.turn(f"{text}-{sys.argv[1]}"))
        """
    )
    env = {**os.environ, "AGENTOS_HOME": str(agentos_home)}
    for run in range(4):
        done = subprocess.run([sys.executable, "-c", script, str(run)], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
    loaded = Agent.load("sam", provider=ScriptedProvider([]))
    assert loaded.state.message_count == 24
    assert [m.content for m in loaded.context][-2:] == ["three-3", "c"]


def test_opening_and_closing_an_agent_again_and_again_logs_each_edit_once() -> None:
    agent = Agent.create("sam", provider=ScriptedProvider([]))
    agent.set_block("human", "Name: Sam")
    agent.close()  # the edit's state is saved; the log gets it now or at the next open
    for _ in range(3):
        again = Agent.load("sam", provider=ScriptedProvider([]))
        assert [e.new_value for e in again.memory_edits()] == ["Name: Sam"]
        again.close()
