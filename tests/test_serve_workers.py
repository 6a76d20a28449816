"""Several `agentos serve` workers over one bucket (moto's S3 server on loopback): any worker serves any agent, the
writer lease moves the agent between them (a worker gives an idle agent back), two clients racing on one agent
through two workers are served one after the other, and a worker SIGKILLed mid-turn loses nothing acknowledged and
writes no step twice: another worker takes the agent over at once (same host, the holder's pid is gone)."""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2
import pytest

from agentos import Agent
from agentos.agent.directory import open_store
from agentos.errors import AgentBusyError
from agentos.providers import ScriptedProvider
from agentos.server.host import AgentHost
from agentos.storage import Store
from tests.processes import REPO, env_for, free_port
from tests.serve_helpers import models, served, sse_events
from tests.test_one_writer import _elsewhere, _hold

pytestmark = pytest.mark.usefixtures("allow_real_providers")  # the model is a mock OpenAI-compatible server here

RELEASE_AFTER = "0.3"  # seconds: an idle agent is given back quickly, so the tests move it often
HOLD = "hold on"  # a turn saying this calls a tool (step 1 saved), then its second model call waits to be released


class MockModel(BaseHTTPRequestHandler):
    """An OpenAI-compatible chat server: `ok: TEXT` for a message; for HOLD a tool call first, then a reply that
    waits until `released` is set (the worker serving it is killed meanwhile)."""

    protocol_version = "HTTP/1.1"
    arrived = threading.Event()  # the held turn's second call has come
    released = threading.Event()

    def do_GET(self) -> None:  # noqa: N802 - the http.server name
        self._json({"object": "list", "data": [{"id": "mock", "object": "model", "max_model_len": 32768}]})

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        messages = body["messages"]
        said = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()
        try:
            if not body.get("tools"):  # background work (fact consolidation): nothing to add
                self._chunks({"content": "[]"}, finish="stop")
            elif said == HOLD and messages[-1]["role"] == "user":
                call = {"index": 0, "id": "call_hold", "type": "function", "function": {
                    "name": "core_memory_append", "arguments": json.dumps({"label": "human", "content": "Held."})}}
                self._chunks({"tool_calls": [call]}, finish="tool_calls")
            elif said == HOLD:
                type(self).arrived.set()
                type(self).released.wait(60)
                self._chunks({"content": "released"}, finish="stop")
            else:
                self._chunks({"content": f"ok: {said}"}, finish="stop")
        except OSError:
            pass  # the worker that asked is gone

    def _chunks(self, delta: dict[str, Any], finish: str) -> None:
        for piece, end in ((delta, None), ({}, finish)):
            chunk = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "mock",
                     "choices": [{"index": 0, "delta": piece, "finish_reason": end}]}
            if end:
                chunk["usage"] = {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()

    def _json(self, value: Any) -> None:
        data = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def bucket(agentos_home: Path) -> Iterator[Store]:
    """A data home whose database is in S3 (moto's server on loopback), and the store as the tests see it."""
    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    agentos_home.mkdir(parents=True, exist_ok=True)
    port = free_port()
    name = f"agents-{uuid.uuid4().hex[:12]}"  # moto keeps its buckets for the whole process: one of its own
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        endpoint = f"http://127.0.0.1:{port}"
        boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="test", aws_secret_access_key="test",
                     region_name="us-east-1").create_bucket(Bucket=name)
        options = {"endpoint": endpoint, "allow_http": "true", "aws_access_key_id": "test",
                   "aws_secret_access_key": "test", "region": "us-east-1"}
        (agentos_home / "config.json").write_text(json.dumps({"database_uri": f"s3://{name}/db",
                                                               "storage_options": options}))
        yield Store(f"s3://{name}/db", options)
    finally:
        server.stop()


@pytest.fixture
def model() -> Iterator[str]:
    """The mock model's spec (a fresh hold for each test)."""
    MockModel.arrived, MockModel.released = threading.Event(), threading.Event()
    server = ThreadingHTTPServer(("127.0.0.1", 0), MockModel)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"openai-compatible/mock@http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        MockModel.released.set()
        server.shutdown()
        server.server_close()


class Serve:
    """`agentos serve ARGS` in its own process; what it prints is kept in `lines`."""

    def __init__(self, home: Path, *args: str) -> None:
        env = {**env_for(home), "AGENTOS_BLOCK_REAL_PROVIDERS": "0"}  # the mock model is an OpenAI-compatible server
        self.process = subprocess.Popen(
            [sys.executable, "-m", "agentos.cli", "serve", "--port", "0", "--drain", "2", "--release-after",
             RELEASE_AFTER, *args], cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        self._url = ""

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line)

    @property
    def url(self) -> str:
        if not self._url:
            found = wait_for(lambda: next((m for line in self.lines if (m := re.search(r"http://127\.0\.0\.1:(\d+) ",
                                                                                       line))), None), 30, self)
            self._url = f"http://127.0.0.1:{found.group(1)}"
        return self._url

    def stop(self) -> int:
        """SIGTERM, and its exit code (a supervisor may take its workers' drain bound and a margin: 35 s here)."""
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(60)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(30)


def wait_for(check: Callable[[], Any], timeout: float, serve: Serve | None = None) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, "waited in vain" + ("".join(serve.lines) if serve else "")
        assert serve is None or serve.process.poll() is None, "the server ended:\n" + "".join(serve.lines)
        time.sleep(0.02)
    return found


@contextmanager
def running(*servers: Serve, before: Callable[[], Any] = lambda: None) -> Iterator[list[str]]:
    """The servers' addresses once each answers (`before` runs while they start); every one killed at the end if it
    still runs, whatever happened."""
    try:
        before()
        for server in servers:
            wait_for(lambda s=server: _health(s.url), 60, server)  # type: ignore[misc]
        yield [server.url for server in servers]
    finally:
        for server in servers:
            server.kill()


def _health(url: str) -> bool:
    try:
        return httpx2.get(f"{url}/api/health", timeout=5).status_code == 200
    except httpx2.TransportError:
        return False


def send(url: str, text: str) -> dict[str, Any]:
    response = httpx2.post(f"{url}/api/agents/sam/messages", json={"text": text}, timeout=60)
    assert response.status_code == 200, response.text
    found: dict[str, Any] = response.json()
    return found


def stored(url: str) -> list[dict[str, Any]]:
    """The agent's whole history, checked: every seq once, from 0, and every message id once."""
    messages: list[dict[str, Any]] = httpx2.get(f"{url}/api/agents/sam/messages", params={"offset": 0, "limit": 500},
                                                timeout=30).json()["messages"]
    assert [m["seq"] for m in messages] == list(range(len(messages)))
    assert len({m["id"] for m in messages}) == len(messages), "a message stored twice"
    return messages


def exchanges(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(what the user said, the reply) for each user message followed by its reply."""
    return [(m["content"], after["content"]) for m, after in zip(messages, messages[1:]) if m["role"] == "user"]


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def no_lease(store: Store) -> bool:
    row = store.agent_row("sam")
    return row is not None and row.lease_token is None


class Opened:
    """What a host opens in the tests below: it counts how often it was opened and closed."""

    def __init__(self, log: list[str], busy_for: int = 0) -> None:
        self.log, self.busy_for = log, busy_for

    def __call__(self, host: AgentHost) -> Any:
        if self.busy_for:
            self.busy_for -= 1
            self.log.append("busy")
            raise AgentBusyError('agent "sam" is in use by `agentos serve` (pid 1 on elsewhere)')
        self.log.append("open")
        return self

    def close(self) -> None:
        self.log.append("close")


def test_a_host_gives_its_agent_back_when_idle_waits_for_a_holder_and_lets_others_in_when_it_keeps_it_busy() -> None:
    log: list[str] = []
    idle = threading.Event()
    host = AgentHost("sam", Opened(log, busy_for=2), 8, release_after=0.1, wait_for_holder=2, yield_after=0.3,
                     on_idle=lambda h: idle.set())
    jobs = [host.submit(lambda agent: time.sleep(0.4)), host.submit(lambda agent: None)]
    for job in jobs:
        job.result(10)
    assert idle.wait(10) and host.agent is None and host.retire()
    # it waited for the holder; after the first job it had held the agent for over `yield_after` with a job still
    # waiting, so it let it go for YIELD_SECONDS (a process waiting elsewhere would have taken it); once idle, it gave
    # it back
    assert log == ["busy", "busy", "open", "close", "open", "close"]

    log.clear()
    host = AgentHost("sam", Opened(log, busy_for=1000), 8, release_after=0.1, wait_for_holder=0.3)
    started = time.monotonic()
    with pytest.raises(AgentBusyError) as refused:
        host.submit(lambda agent: None).result(10)
    assert time.monotonic() - started >= 0.3 and log[-1] == "busy" and "open" not in log
    assert str(refused.value).endswith("(This server waited 0.3 s for it to be given back.)")


def test_an_idle_agent_is_given_back_and_a_request_waits_for_a_holder_elsewhere_to_give_it_back() -> None:
    echo = models(echo=lambda: ScriptedProvider(lambda request: f"ok: {request.messages[-1].content}"))
    with served(models=echo, release_after=0.2, wait_for_holder=3) as (_, client):
        assert client.post("/api/agents", json={"name": "sam", "model": "scripted/echo"}).status_code == 201
        assert client.post("/api/agents/sam/messages", json={"text": "one"}).json()["reply"] == "ok: one"
        wait_for(lambda: client.get("/api/health").json()["agents_held"] == [], 30)  # idle: given back
        assert no_lease(open_store())

        agent = Agent.load("sam", read_only=True)
        _hold(agent, _elsewhere(), expires_in=45)  # a live process elsewhere holds it, and gives it back soon
        threading.Timer(0.3, _hold, (agent, _elsewhere(), -1)).start()  # (its hold runs out: as good as given back)
        started = time.monotonic()
        assert client.post("/api/agents/sam/messages", json={"text": "two"}).json()["reply"] == "ok: two"
        assert time.monotonic() - started >= 0.3

        wait_for(lambda: client.get("/api/health").json()["agents_held"] == [], 30)
        _hold(agent, _elsewhere(), expires_in=45)  # and one that keeps it: 409 once the wait is over
        started = time.monotonic()
        refused = client.post("/api/agents/sam/messages", json={"text": "three"})
        assert refused.status_code == 409 and time.monotonic() - started >= 3
        message = refused.json()["error"]["message"]
        assert message.startswith('agent "sam" is in use by `agentos tui sam` (pid 4242 on laptop-elsewhere')
        assert message.endswith("(This server waited 3 s for it to be given back.)")
        said = [m["content"] for m in client.get("/api/agents/sam/messages").json()["messages"]]
        assert said == ["one", "ok: one", "two", "ok: two"]


def test_two_workers_take_turns_on_one_agent_and_racing_clients_are_served_one_after_the_other(
        agentos_home: Path, bucket: Store, model: str) -> None:
    servers = [Serve(agentos_home), Serve(agentos_home)]  # two workers, each its own port, one bucket
    with running(*servers, before=lambda: Agent.create("sam", model=model, store=bucket, with_model=False).close()) as urls:
        for number in range(4):  # alternately through each worker: each turn takes the agent from the other
            assert send(urls[number % 2], f"turn {number}")["reply"] == f"ok: turn {number}"
        results: dict[str, dict[str, Any]] = {}
        racers = [threading.Thread(target=lambda u=url, t=text: results.update({t: send(u, t)}))  # type: ignore[misc]
                  for url, text in zip(urls, ("race a", "race b"))]
        for racer in racers:
            racer.start()
        for racer in racers:
            racer.join(60)
        assert {text: r["reply"] for text, r in results.items()} == {"race a": "ok: race a", "race b": "ok: race b"}
        messages = stored(urls[1])
        said = exchanges(messages)
        assert said[:4] == [(f"turn {n}", f"ok: turn {n}") for n in range(4)]  # in order, each once
        assert sorted(said[4:]) == [("race a", "ok: race a"), ("race b", "ok: race b")]  # one after the other
        assert len(messages) == 12
        assert [server.stop() for server in servers] == [0, 0]
    assert no_lease(bucket)  # given back


def test_three_workers_a_sigkill_mid_turn_loses_nothing_acknowledged_and_another_worker_takes_over_at_once(
        agentos_home: Path, bucket: Store, model: str) -> None:
    supervisor = Serve(agentos_home, "--workers", "3", "--wait", "30")  # three workers sharing one port
    with running(supervisor, before=lambda: Agent.create("sam", model=model, store=bucket, with_model=False).close()) as (url,):
        acknowledged: list[str] = []

        def client(text: str) -> None:
            assert send(url, text)["reply"] == f"ok: {text}"  # its own connection: any worker may answer
            acknowledged.append(text)

        clients = [threading.Thread(target=client, args=(text,)) for text in ("from ann", "from bob", "from cat")]
        for thread in clients:
            thread.start()
        for thread in clients:
            thread.join(60)
        assert len(acknowledged) == 3  # three clients at once: served one after the other

        events: list[dict[str, Any]] = []

        def held_turn() -> None:
            try:
                with httpx2.stream("POST", f"{url}/api/agents/sam/messages/stream", json={"text": HOLD},
                                   timeout=60) as response:
                    events.extend(sse_events(response.iter_lines()))
            except httpx2.TransportError:
                pass  # its worker was killed: this turn's end is never acknowledged

        holding = threading.Thread(target=held_turn)
        holding.start()
        assert MockModel.arrived.wait(30)  # mid-turn: step 1 (the tool call) saved, the second model call waiting
        wait_for(lambda: "step_saved" in [e["type"] for e in events], 10)  # step 1 acknowledged to the client
        holder = bucket.agent_row("sam").holder  # type: ignore[union-attr]
        assert holder is not None and parent_of(holder.pid) == supervisor.process.pid  # one of the workers
        os.kill(holder.pid, signal.SIGKILL)
        killed = time.monotonic()
        holding.join(30)
        after = send(url, "after the kill")  # another worker takes the agent over at once: its holder is gone
        takeover = time.monotonic() - killed
        assert after["reply"] == "ok: after the kill"
        assert takeover < 30, takeover  # the dead holder was seen at once: its lease had 60 s to run (and on a
        # quiet machine this is about 1 s: opening the agent, and the turn)
        assert "turn_finished" not in [e["type"] for e in events]

        messages = stored(url)
        said = [m["content"] for m in messages if m["role"] == "user"]
        assert sorted(said[:3]) == sorted(acknowledged) and said[3:] == [HOLD, "after the kill"]  # every one once
        assert sorted(exchanges(messages[:6])) == sorted((text, f"ok: {text}") for text in acknowledged)  # one by one
        at = next(n for n, m in enumerate(messages) if m["content"] == HOLD)
        hold = messages[at:]
        assert [m["role"] for m in hold[:4]] == ["user", "assistant", "tool", "user"]  # step 1 kept, step 2 never saved
        assert hold[3]["content"] == "after the kill" and hold[4]["content"] == "ok: after the kill"
        human = httpx2.get(f"{url}/api/agents/sam/blocks/human", timeout=30).json()["value"]
        assert human.count("Held.") == 1
        wait_for(lambda: any(f"worker pid {holder.pid} ended (killed by SIGKILL); starting another" in line
                             for line in supervisor.lines), 10, supervisor)
        print(f"\n3 workers: {len(acknowledged)} turns acknowledged before the kill and 1 after it, plus step 1 of the "
              f"killed turn; stored: {len(said)} user messages, {len(messages)} messages, each once; takeover "
              f"{takeover:.2f} s")
        assert supervisor.stop() == 0
    assert no_lease(bucket)
    saved = Agent.load("sam", store=bucket, read_only=True, with_model=False)
    assert bucket.count_messages(saved.id) == saved.state.message_count == len(messages)  # no rows left over


def test_a_worker_over_its_heap_bound_is_replaced_and_its_clients_notice_nothing(agentos_home: Path, model: str) -> None:
    # --recycle-mib 1: every worker is over it as soon as it serves, so workers are replaced one after another while
    # a client keeps talking to one agent over a kept-alive connection (a local database: the agent moves between the
    # workers by its lease, at once on one host)
    supervisor = Serve(agentos_home, "--recycle-mib", "1", "--wait", "30")
    with running(supervisor, before=lambda: Agent.create("sam", model=model, with_model=False).close()) as (url,), \
            httpx2.Client(base_url=url, timeout=60) as client:
        sent: list[str] = []
        deadline = time.monotonic() + 120
        while sum("retires" in line for line in supervisor.lines) < 2:
            assert time.monotonic() < deadline, "".join(supervisor.lines)
            text = f"turn {len(sent)}"
            try:
                response = client.post("/api/agents/sam/messages", json={"text": text})
            except httpx2.TransportError as exc:
                raise AssertionError(f"{text}: {exc!r}\n" + "".join(supervisor.lines)) from exc
            assert response.status_code == 200, response.text + "".join(supervisor.lines)  # a retiring worker answers
            assert response.json()["reply"] == f"ok: {text}", supervisor.lines
            sent.append(text)
            time.sleep(0.05)  # (at most ~250 turns: `stored` reads one page of 500 messages)
        retired = [int(m.group(1)) for line in supervisor.lines if (m := re.search(r"worker pid (\d+) retires", line))]
        for pid in retired:  # each retired worker stopped once its client had moved on, and was reaped
            wait_for(lambda p=pid: not Path(f"/proc/{p}").exists(), 60, supervisor)
        assert not any("retired worker" in line for line in supervisor.lines), supervisor.lines  # each exited 0
        said = exchanges(stored(url))
        assert said == [(text, f"ok: {text}") for text in sent], supervisor.lines  # each turn once, in order
        print(f"\nretired {len(retired)} workers during {len(sent)} turns")
        assert supervisor.stop() == 0, supervisor.lines
    assert no_lease(open_store())
