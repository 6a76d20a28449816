"""`agentos serve` for tests: a real uvicorn server on a free loopback port in a thread of this process, models that
take their time or wait for a gate, and Server-Sent Events read back as JSON."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx2

from agentos.messages import Usage
from agentos.providers.base import ModelRequest, ProviderEvent, StreamDone, StreamText, StreamUsage
from agentos.server.config import ServeConfig
from agentos.server.run import bind, server_for


class SlowProvider:
    """A model that writes `pieces` bits of text, `delay` seconds apart; with `gate`, it first waits for it."""

    name = "scripted"
    context_window = 128_000

    def __init__(self, pieces: int = 5, delay: float = 0.05, gate: threading.Event | None = None,
                 model: str = "slow") -> None:
        self.model = model
        self.pieces, self.delay, self.gate = pieces, delay, gate
        self.calls = 0

    def stream(self, request: ModelRequest) -> Iterator[ProviderEvent]:
        self.calls += 1
        if self.gate is not None:
            assert self.gate.wait(30), "the gate was never opened"
        for number in range(self.pieces):
            if number:
                time.sleep(self.delay)
            yield StreamText(f"piece {number}. ")
        yield StreamUsage(Usage(input_tokens=10, output_tokens=self.pieces))
        yield StreamDone("end_turn")


def models(**makers: Callable[[], Any]) -> Callable[[str], Any]:
    """A server's `models`: spec `scripted/NAME` -> a new provider from `makers[NAME]` each time an agent opens."""
    def provider(spec: str) -> Any:
        family, _, name = spec.partition("/")
        return makers[name]() if family == "scripted" and name in makers else None
    return provider


class Served:
    """A server running `config` in a thread; `url` to reach it."""

    def __init__(self, config: ServeConfig) -> None:
        self.sock = bind("127.0.0.1", 0)
        self.server = server_for(config)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def start(self) -> Served:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline and self.thread.is_alive(), "the server did not start"
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)
        self.sock.close()
        assert not self.thread.is_alive(), "the server did not stop"

    @property
    def app(self) -> Any:
        return self.server.agentos_app


@contextmanager
def served(**options: Any) -> Iterator[tuple[Served, httpx2.Client]]:
    """A running server made with these ServeConfig options, and a client for it."""
    server = Served(ServeConfig(port=0, **options)).start()
    try:
        with httpx2.Client(base_url=server.url, timeout=30) as client:
            yield server, client
    finally:
        server.stop()


def sse_events(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    """The JSON of each Server-Sent Event, as it comes (checking that `event:` names the type in `data:`)."""
    kind = None
    for line in lines:
        if line.startswith("event: "):
            kind = line[len("event: "):]
        elif line.startswith("data: "):
            data = json.loads(line[len("data: "):])
            assert data["type"] == kind
            yield data


ID = re.compile(r"^(msg|call|turn|agent|fact|chg)-[0-9a-f]{20}$")
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")


def normalized(events: list[dict[str, Any]]) -> list[Any]:
    """Events with ids numbered by first appearance and times blanked, to compare two runs of one script."""
    seen: dict[str, str] = {}

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, str) and ID.match(value):
            return seen.setdefault(value, f"<id {len(seen)}>")
        if isinstance(value, str) and TIME.match(value):
            return "<time>"
        return value

    return walk(events)
