"""One writer per agent: a second process is refused with the holder named, stale holders are taken
over, deletes of an agent in use are refused, and a stale revision is never written."""

from __future__ import annotations

import json
import logging
import multiprocessing
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from agentos import Agent
from agentos.agent.agent import list_agents
from agentos.errors import AgentBusyError, AgentDeletedError, LeaseLostError, ReadOnlyAgentError
from agentos.messages import utc_now
from agentos.providers import ScriptedProvider
from agentos.storage import Store
from agentos.storage.lease import Holder
from agentos.storage.schemas import state_table_name
from tests.memory_helpers import archival, call
from tests.processes import Chat, agentos


@pytest.fixture(params=["local disk", "object storage"])
def home(request: pytest.FixtureRequest, agentos_home: Path) -> Iterator[Path]:
    """A data home on local disk, or one whose database is in S3 (a local moto server)."""
    agentos_home.mkdir(parents=True, exist_ok=True)
    if request.param == "local disk":
        yield agentos_home
        return
    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        endpoint = f"http://127.0.0.1:{port}"
        boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="test", aws_secret_access_key="test",
                     region_name="us-east-1").create_bucket(Bucket="agents")
        options = {"endpoint": endpoint, "allow_http": "true", "aws_access_key_id": "test",
                   "aws_secret_access_key": "test", "region": "us-east-1"}
        (agentos_home / "config.json").write_text(json.dumps({"database_uri": "s3://agents/db",
                                                               "storage_options": options}))
        yield agentos_home
    finally:
        server.stop()


def test_a_second_writer_is_refused_with_the_holder_named_and_goes_on_once_it_exits(home: Path) -> None:
    assert agentos(home, "new", "sam", "--model", "scripted/demo").returncode == 0
    first = Chat(home, "sam")
    try:
        first.say("my name is Ada")
        first.wait_for("Nice to meet you, Ada!")
        second = agentos(home, "chat", "sam", stdin="call me Bo\n")
        assert second.returncode == 1 and "Traceback" not in second.stderr
        assert second.stderr.startswith(f'error: agent "sam" is in use by `python -m agentos.cli chat sam` (pid '
                                        f"{first.process.pid} on {socket.gethostname()}, since ")
        assert "so it cannot be opened for writing. Finish that session first" in second.stderr
        shown = agentos(home, "show", "sam")  # reading goes on while the agent is held
        assert shown.returncode == 0 and "Name: Ada" in shown.stdout
        assert "sam" in agentos(home, "list").stdout
        refused = agentos(home, "delete", "sam", "--yes")
        assert refused.returncode == 1 and f"(pid {first.process.pid} on" in refused.stderr
        assert "or delete it anyway with: agentos delete sam --force" in refused.stderr
        first.say("what is my name?")
        first.wait_for("Your name is Ada.")
    finally:
        assert first.close() == 0, first.output
    again = agentos(home, "chat", "sam", stdin="call me Bo\n")
    assert again.returncode == 0 and "Nice to meet you, Bo!" in again.stdout
    agent = Agent.load("sam", read_only=True, home=home)
    assert agent.block("human").value == "Name: Bo"
    said = [m.content for m in agent.context if m.role == "user"]
    assert said == ["my name is Ada", "what is my name?", "call me Bo"]  # nothing lost, nothing twice
    assert agent.state.message_count == agent.store.count_messages(agent.id) == 10


def test_delete_during_a_chat_is_refused_and_with_force_the_chat_stops_without_writing_back(
        agentos_home: Path) -> None:
    assert agentos(agentos_home, "new", "sam", "--model", "scripted/demo").returncode == 0
    chat = Chat(agentos_home, "sam")
    try:
        chat.say("my name is Ada")
        chat.wait_for("Nice to meet you, Ada!")
        agent_id = Agent.load("sam", read_only=True).id
        assert agentos(agentos_home, "delete", "sam", "--yes").returncode == 1
        done = agentos(agentos_home, "delete", "sam", "--yes", "--force")
        assert done.returncode == 0 and done.stdout.strip() == 'Deleted agent "sam".'
        chat.say("call me Bo")
        out = chat.wait_for("nothing more of this session is saved.")
        assert 'error: agent "sam" was deleted by another process while this session had it open' in out
        assert chat.process.wait(30) == 1  # the chat ends by itself
    finally:
        chat.kill()
    assert "No agents yet" in agentos(agentos_home, "list").stdout
    store = Store(agentos_home / "db")  # a fresh look at the database
    assert store.count_messages(agent_id) == 0 and store.memory_edits(agent_id) == []
    assert store.db.count_rows(state_table_name(agent_id)) is None  # never written back


def _hold(agent: Agent, holder: Holder, expires_in: float) -> None:
    """Make the agent's row say that `holder` holds it (as another process would have left it)."""
    agent.store.agents._state_table(agent.id).update(where="true", values={
        "lease_token": "someone-else", "lease_holder": holder.to_json(),
        "lease_expires_at": utc_now() + timedelta(seconds=expires_in)})


def _elsewhere(command: str = "agentos tui sam") -> Holder:
    return Holder(command=command, pid=4242, host="laptop-elsewhere", since=utc_now() - timedelta(minutes=5))


def test_a_live_holder_on_another_host_is_named_and_an_expired_one_is_taken_over() -> None:
    agent = Agent.create("sam", provider=ScriptedProvider(["hi", "hello"]))
    _hold(agent, _elsewhere(), expires_in=45)
    with pytest.raises(AgentBusyError) as busy:
        Agent.load("sam", provider=ScriptedProvider([]))
    assert str(busy.value).startswith('agent "sam" is in use by `agentos tui sam` (pid 4242 on laptop-elsewhere, since ')
    assert "its hold runs out by itself at " in str(busy.value)
    assert Agent.load("sam", read_only=True).name == "sam"  # reading needs no hold
    _hold(agent, _elsewhere(), expires_in=-1)  # that machine stopped renewing it
    taken = Agent.load("sam", provider=ScriptedProvider(["back"]))
    assert list(taken.turn("hi"))[-1].type == "turn_finished"


def test_a_holder_on_this_host_that_died_is_taken_over_at_once() -> None:
    agent = Agent.create("sam", provider=ScriptedProvider([]))
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = replace(Holder.this_process(), command="agentos chat sam", pid=int(gone.stdout), process_start=None)
    _hold(agent, dead, expires_in=3600)
    assert list(Agent.load("sam", provider=ScriptedProvider(["ok"])).turn("still mine?"))[-1].type == "turn_finished"


def test_a_write_from_a_stale_revision_is_refused_and_nothing_is_overwritten() -> None:
    agent = Agent.create("sam", provider=ScriptedProvider(["one", "two"]))
    list(agent.turn("first"))
    table = agent.store.agents._state_table(agent.id)
    table.update(where="true", values_sql={"rev": "rev + 1"})  # another writer moved it on (a bug, a restore)
    events = list(agent.turn("second"))
    assert events[-1].type == "turn_failed" and events[-1].kind == "LeaseLostError"
    assert events[-1].error == ('agent "sam" changed under this session (stored revision 2); refusing to overwrite '
                                "it. Open it again to continue from what was saved.")
    row = agent.store.agent_row("sam")
    assert row is not None and row.rev == 2 and json.loads(row.state)["message_count"] == 2


def test_an_agent_opened_again_in_this_process_leaves_the_older_object_unable_to_write() -> None:
    older = Agent.create("sam", provider=ScriptedProvider(["one"]))
    newer = Agent.load("sam", provider=ScriptedProvider(["two"]))
    events = list(older.turn("from the old one"))
    assert events[-1].type == "turn_failed" and "was opened again in this process" in events[-1].error
    assert list(newer.turn("from the new one"))[-1].type == "turn_finished"
    assert [m.content for m in Agent.load("sam", read_only=True).context] == ["from the new one", "two"]


def test_a_read_only_agent_never_writes() -> None:
    Agent.create("sam", provider=ScriptedProvider([])).close()
    reader = Agent.load("sam", read_only=True)
    events = list(reader.turn("hello"))
    assert events[-1].type == "turn_failed" and events[-1].kind == "ReadOnlyAgentError"
    text, is_error = call(reader, "archival_insert", content="a fact")
    assert is_error and "the agent was opened read-only" in text
    with pytest.raises(ReadOnlyAgentError):
        reader.compact()
    assert archival(reader).count() == 0 and reader.state.rev == 0


def test_closing_gives_the_agent_back_and_a_closed_object_takes_it_again_if_nothing_changed() -> None:
    agent = Agent.create("sam", provider=ScriptedProvider(["one", "two"]))
    agent.close()
    row = agent.store.agent_row("sam")
    assert row is not None and row.lease_token is None
    assert list(agent.turn("after close"))[-1].type == "turn_finished"  # nothing changed it meanwhile
    agent.close()
    other = Agent.load("sam", provider=ScriptedProvider(["three"]))
    list(other.turn("moved on"))
    other.close()
    with pytest.raises(LeaseLostError, match="changed since this Agent object was closed"):
        agent.check_writable()


def test_the_keeper_renews_an_idle_hold_and_notices_a_delete(monkeypatch: pytest.MonkeyPatch) -> None:
    import agentos.storage.lease as lease_module
    import agentos.storage.lease_keeper as keeper_module

    monkeypatch.setattr(lease_module, "LEASE_SECONDS", 3.0)
    monkeypatch.setattr(lease_module, "RENEW_SECONDS", 1.0)
    monkeypatch.setattr(keeper_module, "TICK_SECONDS", 0.1)
    agent = Agent.create("sam", provider=ScriptedProvider([]))
    first = agent.store.agent_row("sam").lease_expires_at  # type: ignore[union-attr]
    deadline = utc_now() + timedelta(seconds=20)
    while agent.store.agent_row("sam").lease_expires_at == first and utc_now() < deadline:  # type: ignore[union-attr]
        pass
    assert agent.store.agent_row("sam").lease_expires_at > first  # type: ignore[union-attr]
    agent.store.delete_agent(agent.id, "sam", None)  # as `agentos delete --force` in another process
    with pytest.raises(AgentDeletedError):
        agent.check_writable()


def _create(home: str, barrier: Any, results: Any) -> None:
    import os

    os.environ["AGENTOS_HOME"] = home
    from agentos import Agent as A
    from agentos.errors import AgentExistsError

    barrier.wait()
    try:
        A.create("twin", provider=ScriptedProvider([])).close()
        results.put("created")
    except AgentExistsError:
        results.put("refused")


def test_creates_of_one_name_racing_in_four_processes_make_one_agent(agentos_home: Path) -> None:
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(4), context.Queue()
    workers = [context.Process(target=_create, args=(str(agentos_home), barrier, results)) for _ in range(4)]
    for worker in workers:
        worker.start()
    outcomes = sorted(results.get(timeout=120) for _ in workers)
    for worker in workers:
        worker.join(30)
    assert outcomes == ["created", "refused", "refused", "refused"]
    assert [s.name for s in list_agents()] == ["twin"]
    tables = [t for t in Store(agentos_home / "db").db.connection.list_tables().tables if t.startswith("state_")]
    assert len(tables) == 1  # the refused creates left no state behind


def test_a_create_that_lands_while_the_directory_is_being_started_is_seen(agentos_home: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Two processes on a new store: the other one claims the name between this one finding the directory empty
    and adding its first row. This one must see the claim, not start a second directory from nothing."""
    from agentos.storage.directory import Directory

    store, other = Store(agentos_home / "db"), Store(agentos_home / "db")
    mine, theirs = Directory(store.db), Directory(other.db)
    add = store.db.add

    def add_after_theirs(table: str, rows: Any) -> Any:
        if table == "agents":
            assert theirs.claim("twin", "agent-theirs")
        return add(table, rows)

    monkeypatch.setattr(store.db, "add", add_after_theirs)
    assert mine.claim("twin", "agent-mine") is False
    assert mine.names() == {"twin": "agent-theirs"} == theirs.names()
