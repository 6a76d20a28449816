"""Replacing a worker whose heap has grown (`agentos serve --recycle-mib`), without a client noticing.

LanceDB's native heap grows by about a kilobyte per commit for as long as a process runs (benchmarks/
lance_commit_heap.py measures it with LanceDB alone), so a server that runs for weeks would grow without bound. The
supervisor reads each worker's heap every `CHECK_SECONDS`; one over the bound gets a replacement, started first on the
same socket. Once that serves, the old worker is sent SIGUSR1 and retires: it stops accepting connections (the
socket stays open in the others, which take new ones), answers each request still coming on its open connections
with `Connection: close` (so the client's next request connects again and reaches another worker), and once its
connections are gone, or after `RETIRE_SECONDS`, stops as on SIGTERM: running turns finish, leases are given back.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Generic, Protocol, TypeVar

CHECK_SECONDS = 2.0  # how often the supervisor reads its workers' heaps
RETIRE_SECONDS = 30.0  # the longest a retiring worker waits for its clients' connections to close before it stops
START_SECONDS = 120.0  # a replacement that has not started serving by then is killed (and another tried later)
QUIET_CHECKS = 3  # a retiring worker stops once it has seen no connection this many times in a row, 0.05 s apart

Message = MutableMapping[str, Any]
Asgi = Callable[[Message, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]]


class Process(Protocol):
    """A worker's process (multiprocessing's)."""

    @property
    def pid(self) -> int | None: ...

    @property
    def exitcode(self) -> int | None: ...

    def is_alive(self) -> bool: ...


class Started(Protocol):
    """Set by a worker once it serves."""

    def is_set(self) -> bool: ...


class WorkerLike(Protocol):
    """What the recycler needs of a worker process (server.run.Worker)."""

    @property
    def process(self) -> Process: ...

    @property
    def started(self) -> Started: ...

    def describe_end(self) -> str: ...


W = TypeVar("W", bound=WorkerLike)


class Recycler(Generic[W]):
    """The supervisor's part: which workers are being replaced, by which, and which are retiring."""

    def __init__(self, limit_mib: float | None, start: Callable[[], W], say: Callable[[str], None]) -> None:
        self.limit_mib, self.start, self.say = limit_mib, start, say
        self.pending: dict[int, W] = {}  # pid of a worker to replace -> its replacement, starting (one at a time)
        self.pending_since = 0.0
        self.retiring: list[W] = []  # replaced, finishing their clients' requests
        self.checked = time.monotonic()

    def replacement_of(self, pid: int | None) -> W | None:
        """The replacement already started for the worker `pid` (which ended before it was retired), if any."""
        return self.pending.pop(pid or 0, None)

    def step(self, workers: list[W]) -> list[W]:
        """The workers after this round: a replacement that serves takes its predecessor's place, which retires."""
        workers = list(workers)
        for number, worker in enumerate(workers):
            pid = worker.process.pid or 0
            new = self.pending.get(pid)
            if new is None:
                continue
            if new.started.is_set():
                del self.pending[pid]
                workers[number] = new
                self.retiring.append(worker)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGUSR1)
                self.say(f"agentos serve: worker pid {new.process.pid} serves; worker pid {pid} retires (it answers "
                         f"what its clients still send, then stops).")
            elif not new.process.is_alive() or time.monotonic() - self.pending_since > START_SECONDS:
                del self.pending[pid]
                if new.process.is_alive() and new.process.pid is not None:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(new.process.pid, signal.SIGKILL)
                self.say(f"agentos serve: the replacement pid {new.process.pid} did not start serving; worker pid "
                         f"{pid} goes on (another replacement is tried later).")
        for worker in [w for w in self.retiring if not w.process.is_alive()]:
            self.retiring.remove(worker)
            if worker.process.exitcode != 0:
                self.say(f"agentos serve: the retired {worker.describe_end()}.")
        if self.limit_mib and not self.pending and time.monotonic() - self.checked >= CHECK_SECONDS:
            self.checked = time.monotonic()
            for worker in workers:
                self._check(worker)
        return workers

    def _check(self, worker: W) -> None:
        pid = worker.process.pid
        if pid is None or pid in self.pending or not worker.started.is_set() or self.limit_mib is None:
            return
        heap = heap_mib(pid)
        if heap is not None and heap > self.limit_mib and not self.pending:
            self.pending[pid] = new = self.start()
            self.pending_since = time.monotonic()
            self.say(f"agentos serve: worker pid {pid} holds {heap:.0f} MiB of heap (over --recycle-mib "
                     f"{self.limit_mib:g}); starting pid {new.process.pid} to replace it.")


def heap_mib(pid: int) -> float | None:
    """A process's heap in MiB (the anonymous part of its resident memory, Linux's RssAnon); None where unknown."""
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8") as status:
            for line in status:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


class Retiring:
    """The worker's part: the app, wrapped so that once the worker retires every response closes its connection."""

    def __init__(self, app: Asgi) -> None:
        self.app = app
        self.active = False

    async def __call__(self, scope: Message, receive: Callable[[], Awaitable[Message]],
                       send: Callable[[Message], Awaitable[None]]) -> None:
        if scope["type"] != "http" or not self.active:
            await self.app(scope, receive, send)
            return

        async def closing(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), (b"connection", b"close")]}
            await send(message)

        await self.app(scope, receive, closing)

    async def begin(self, open_connections: Callable[[], int], stop: Callable[[], None]) -> None:
        """Retire: from now on every answer closes its connection; `stop` once none is open, or after
        `RETIRE_SECONDS`."""
        self.active = True
        deadline = time.monotonic() + RETIRE_SECONDS
        quiet = 0  # (a connection just accepted is counted a loop turn or two later)
        while quiet < QUIET_CHECKS and time.monotonic() < deadline:
            quiet = 0 if open_connections() else quiet + 1
            await asyncio.sleep(0.05)
        stop()
