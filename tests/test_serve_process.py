"""`agentos serve` as its own process: SIGTERM during turns drains them within the bound (a turn that ends in time
finishes, one that does not is cancelled), gives every lease back and exits 0; and what it refuses at the start."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest

from agentos.agent.agent import Agent, open_store
from agentos.cli import main
from tests.processes import REPO, env_for
from tests.serve_helpers import SlowProvider, sse_events

DRAIN = 2.0
SERVER = f"""
import sys
from agentos.server.config import ServeConfig
from agentos.server.run import serve
from tests.serve_helpers import SlowProvider, models
quick = lambda: SlowProvider(pieces=8, delay=0.1)  # 0.7 s: ends within the drain
long = lambda: SlowProvider(pieces=1000, delay=0.02)  # 20 s: cancelled at the drain's end
sys.exit(serve(ServeConfig(port=0, drain_seconds={DRAIN}, models=models(quick=quick, long=long))))
"""


def started(process: subprocess.Popen[str]) -> str:
    """The server's address, from the line it prints when it listens."""
    assert process.stderr is not None
    line = process.stderr.readline()
    found = re.search(r"http://127\.0\.0\.1:(\d+) ", line)
    assert found, line + process.stderr.read()
    return f"http://127.0.0.1:{found.group(1)}"


def test_sigterm_during_turns_drains_them_gives_the_leases_back_and_exits_0(agentos_home: Path) -> None:
    for name in ("quick", "long"):
        Agent.create(name, model=f"scripted/{name}", provider=SlowProvider()).close()
    process = subprocess.Popen([sys.executable, "-c", SERVER], cwd=REPO, env=env_for(agentos_home),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        url = started(process)
        streams: dict[str, list[dict[str, Any]]] = {"quick": [], "long": []}

        def talk(name: str) -> None:
            with httpx2.stream("POST", f"{url}/api/agents/{name}/messages/stream", json={"text": "go"},
                               timeout=30) as response:
                for event in sse_events(response.iter_lines()):
                    streams[name].append(event)

        threads = [threading.Thread(target=talk, args=(name,), daemon=True) for name in streams]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 20
        while not all(streams.values()):  # both turns are under way
            assert time.monotonic() < deadline, streams
            time.sleep(0.01)
        signalled = time.monotonic()
        process.send_signal(signal.SIGTERM)
        assert process.wait(DRAIN + 10) == 0
        took = time.monotonic() - signalled
        for thread in threads:
            thread.join(10)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
    assert DRAIN <= took < DRAIN + 5, took
    assert streams["quick"][-1]["type"] == "turn_finished"
    assert streams["long"][-1]["type"] == "turn_failed" and streams["long"][-1]["kind"] == "TurnCancelled"
    assert "did not end within 2 s" in streams["long"][-1]["error"]
    store = open_store()
    assert all(store.agent_row(name).lease_token is None for name in streams)  # type: ignore[union-attr]
    long = Agent.load("long", provider=SlowProvider(pieces=1))  # another process opens it at once
    assert [m.role for m in long.context] == ["user"]  # the cancelled turn left its question, and nothing half-made
    assert list(long.turn("again"))[-1].type == "turn_finished"
    long.close()
    quick = Agent.load("quick", read_only=True)
    assert [(m.role, m.content) for m in quick.context][-1] == ("assistant", "".join(f"piece {n}. " for n in range(8)))


def test_serve_refuses_other_hosts_without_users_and_a_port_in_use(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--host", "0.0.0.0"]) == 1
    refused = capsys.readouterr().err
    assert refused.startswith("error: refusing to listen on 0.0.0.0: this server has no users configured")
    assert "--host 127.0.0.1" in refused
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        assert main(["serve", "--port", str(port)]) == 1
    assert capsys.readouterr().err.startswith(f"error: cannot listen on 127.0.0.1:{port}: Address already in use. ")
