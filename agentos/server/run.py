"""Running the server: the socket bound first (a port in use is a clear error), uvicorn serving the app, and a
SIGTERM (or Ctrl-C) that drains: no new work, waiting turns cancelled, running turns given `drain_seconds` to end
then cancelled, every lease given back, exit 0.

With `workers` > 1 this process binds the socket and supervises that many worker processes, each the one-process
server above on the same socket (the kernel hands each connection to one of them), each serving any agent: an agent
moves between them by its writer lease, which a worker gives back once the agent is idle. Workers are spawned (a
fresh interpreter each: nothing of LanceDB's runtime is copied by a fork), a worker that dies is replaced, and SIGTERM
or Ctrl-C is passed on to every worker, each of which drains as one server does. (Not uvicorn's own `workers=`: its
workers are plain uvicorn servers made from an import string, so the config would travel through the environment and
the drain that starts at the signal would be lost; one shared socket, unlike SO_REUSEPORT, also loses no connection
queued at a worker that dies, and works with port 0.)

With `recycle_mib`, a worker whose heap passes that many MiB is replaced by a fresh one, its clients served throughout
(see server.recycle); even one worker then runs under the supervisor."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import multiprocessing
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from multiprocessing.context import SpawnProcess
from types import FrameType
from typing import Any

import uvicorn

from agentos.agent.directory import is_empty, open_store
from agentos.errors import AgentOSError
from agentos.server.app import AgentosApp, create_app
from agentos.server.config import ServeConfig, require_loopback
from agentos.server.recycle import Recycler, Retiring
from agentos.server.registry import CANCEL_GRACE, CLOSE_SECONDS

SDKS = ("openai",)  # imported when a server starts (OpenAI's also speaks to local servers; Anthropic's waits for a turn)
STOP_MARGIN = 20.0  # how long the supervisor waits for a stopping worker beyond that worker's own drain bound


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on (host, port); an AgentOSError saying what to do when it cannot be had."""
    if not 0 <= port <= 65535:
        raise AgentOSError(f"{port} is not a port number: give --port 1-65535 (or 0 for any free one).")
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # asyncio sets TCP_NODELAY: no 40 ms waits
    except OSError as exc:
        raise AgentOSError(f"cannot listen on {host}: {exc.strerror or exc}. Give a host name or address of this "
                           f"machine with --host.") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise AgentOSError(f"cannot listen on {host}:{port}: {exc.strerror or exc}. Is another server using the port? "
                           f"Pick another with --port.") from None
    sock.set_inheritable(True)
    return sock


class Server(uvicorn.Server):
    """uvicorn's server, which starts draining the agents the moment it is asked to stop."""

    def __init__(self, config: uvicorn.Config, app: AgentosApp, retiring: Retiring) -> None:
        super().__init__(config)
        self.agentos_app = app
        self.retiring = retiring
        self.on_started: Callable[[], None] | None = None  # called once it serves
        self._retiring: asyncio.Task[None] | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started and self.on_started is not None:
            self.on_started()

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        registry = self.agentos_app.registry
        if registry is not None:  # from a signal handler: hand the drain to the event loop
            registry.loop.call_soon_threadsafe(self._stop_accepting_then_drain)

    def _stop_accepting_then_drain(self) -> None:
        """Close this process's listeners at once (uvicorn would within 0.1 s, taking connections meanwhile that the
        drain would refuse; the socket stays open in the other workers, which take them), then drain."""
        self._close_listeners()
        registry = self.agentos_app.registry
        if registry is not None:
            registry.begin_drain()

    def _close_listeners(self) -> None:
        """Stop accepting connections in this process (the socket stays open in the other workers)."""
        for listener in getattr(self, "servers", []):
            listener.close()

    def retire(self, sig: int, frame: FrameType | None) -> None:
        """SIGUSR1: stop taking connections, serve the open ones until each has had its last answer, then stop as on
        SIGTERM (see `recycle.Retiring`)."""
        registry = self.agentos_app.registry
        if registry is not None and not self.should_exit:
            registry.loop.call_soon_threadsafe(self._retire, registry.loop)

    def _retire(self, loop: asyncio.AbstractEventLoop) -> None:
        """On the event loop: close the listeners, then retire (a stop asked for meanwhile goes first)."""
        if self.should_exit:
            return
        self._close_listeners()
        connections = self.server_state.connections
        self._retiring = loop.create_task(self.retiring.begin(lambda: len(connections),
                                                              lambda: self.handle_exit(signal.SIGTERM, None)))


def server_for(config: ServeConfig, log_level: str = "warning") -> Server:
    """The uvicorn server of an app for `config` (its graceful stop bounded by the drain)."""
    app = create_app(config)
    retiring = Retiring(app)
    settings = uvicorn.Config(retiring, log_level=log_level, lifespan="on", access_log=False,
                              timeout_graceful_shutdown=int(config.drain_seconds + CANCEL_GRACE + 1))
    return Server(settings, app, retiring)


def serve(config: ServeConfig, say: Callable[[str], None] | None = None) -> int:
    """Serve until SIGTERM or Ctrl-C; 0 once drained and every agent given back."""
    require_loopback(config.host)
    if config.recycle_mib and not hasattr(signal, "SIGUSR1"):
        raise AgentOSError("--recycle-mib needs POSIX signals (SIGUSR1), which this system has not; run without it.")
    sock = bind(config.host, config.port)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    workers = f"{config.workers} worker processes; " if config.workers > 1 else ""
    (say or _print)(f"agentos serve: http://{shown}:{port} (API docs at http://{shown}:{port}/docs); {workers}stop with "
                    f"Ctrl-C or SIGTERM, which lets running turns finish for up to {config.drain_seconds:g} s.")
    if config.workers > 1 or config.recycle_mib:
        try:
            return supervise(config, sock, say or _print)
        finally:
            sock.close()
    server = server_for(config)
    warm_up(config)
    try:
        run_until_stopped(server, sock)
    finally:
        sock.close()
    return 0 if server.started else 1


def run_until_stopped(server: Server, sock: socket.socket) -> None:
    """Serve on `sock` until SIGTERM or Ctrl-C, even one that comes before uvicorn listens for them. (uvicorn raises
    the signal again once stopped: the server's own handler takes it, quietly.)"""
    main = threading.current_thread() is threading.main_thread()
    handlers = {signal.SIGINT: server.handle_exit, signal.SIGTERM: server.handle_exit}
    if hasattr(signal, "SIGUSR1"):  # (not on Windows, where there is no supervisor to send it)
        handlers[signal.SIGUSR1] = server.retire
    previous = {sig: signal.signal(sig, handler) for sig, handler in handlers.items()} if main else {}
    try:
        server.run(sockets=[sock])
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


# -- several workers ---------------------------------------------------------------------------------

def run_worker(config: ServeConfig, sock: socket.socket, started: Any, parent: int) -> None:
    """One worker process: the one-process server on the supervisor's socket, until SIGTERM (or its parent is gone,
    which it takes as one); `started` is set once it serves."""
    server = server_for(config)
    server.on_started = started.set

    def orphaned() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        server.handle_exit(signal.SIGTERM, None)  # the supervisor died (SIGKILL): stop as if it had said so

    threading.Thread(target=orphaned, daemon=True, name="agentos-serve-parent").start()
    warm_up(config)
    run_until_stopped(server, sock)
    sys.exit(0 if server.started else 1)


class Worker:
    """One worker process of a supervisor, and whether it has started serving."""

    def __init__(self, config: ServeConfig, sock: socket.socket) -> None:
        spawn = multiprocessing.get_context("spawn")
        self.started = spawn.Event()
        self.process: SpawnProcess = spawn.Process(target=run_worker, args=(config, sock, self.started, os.getpid()),
                                                   name="agentos-serve-worker")
        self.process.start()

    def describe_end(self) -> str:
        code = self.process.exitcode
        how = f"killed by {signal.Signals(-code).name}" if code is not None and code < 0 else f"exit code {code}"
        return f"worker pid {self.process.pid} ended ({how})"


def supervise(config: ServeConfig, sock: socket.socket, say: Callable[[str], None]) -> int:
    """Run `config.workers` worker processes on `sock` until SIGTERM or Ctrl-C, replacing any that dies; 0 once every
    worker has drained and exited 0. A worker that ends before it serves stops them all (1): every replacement would
    fail the same way."""
    stop = threading.Event()
    main = threading.current_thread() is threading.main_thread()
    previous = {sig: signal.signal(sig, lambda s, f: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)} if main else {}
    workers = [Worker(config, sock) for _ in range(config.workers)]
    recycler: Recycler[Worker] = Recycler(config.recycle_mib, lambda: Worker(config, sock), say)
    failed = False
    try:
        while not stop.wait(0.1):
            for number, worker in enumerate(workers):
                if worker.process.is_alive():
                    continue
                if not worker.started.is_set():
                    say(f"agentos serve: a {worker.describe_end()} before it served; stopping the other workers.")
                    failed = True
                    stop.set()
                    break
                replacement = recycler.replacement_of(worker.process.pid)
                say(f"agentos serve: {worker.describe_end()}; " + ("its replacement takes over." if replacement else
                                                                   "starting another."))
                workers[number] = replacement or Worker(config, sock)
            if not stop.is_set():
                workers = recycler.step(workers)
    finally:
        failed = not _stop_all([*workers, *recycler.pending.values()], config, recycler.retiring) or failed
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 1 if failed else 0


def _stop_all(workers: list[Worker], config: ServeConfig, retiring: Sequence[Worker] = ()) -> bool:
    """SIGTERM to every worker, then wait for each to drain; one still running after its bound is killed. Whether
    every worker exited 0. A `retiring` worker is stopping already: the signal only hurries it, and one that meets it
    while it exits (its handler gone) ends by the signal."""
    for worker in [*workers, *retiring]:
        if worker.process.is_alive() and worker.process.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(worker.process.pid, signal.SIGTERM)
    deadline = time.monotonic() + config.drain_seconds + CANCEL_GRACE + CLOSE_SECONDS + STOP_MARGIN
    for worker in [*workers, *retiring]:
        worker.process.join(max(0.0, deadline - time.monotonic()))
        if worker.process.is_alive():
            worker.process.kill()
            worker.process.join()
    stopping = {id(worker) for worker in retiring}
    return all(worker.process.exitcode == 0 or (worker.process.exitcode == -signal.SIGTERM
                                                and (not worker.started.is_set() or id(worker) in stopping))
               for worker in [*workers, *retiring])  # (one stopped while it was starting ends by the signal itself)


def warm_up(config: ServeConfig) -> None:
    """Load the storage libraries and OpenAI's SDK and connect, in the background, so that the first request does not
    wait for them (importing LanceDB takes about 4 s, the SDK 1 s): a worker that takes an agent over answers at
    once."""
    def load() -> None:
        try:
            store = open_store(config.home)
            if not is_empty(store):
                store.agent_row("-")  # reads the directory of agents
        except AgentOSError:
            pass  # the request that needs it says what is wrong
        for sdk in SDKS:
            try:
                importlib.import_module(sdk)
            except ImportError:
                pass
    threading.Thread(target=load, daemon=True, name="agentos-serve-warm-up").start()



def _print(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
