"""One agent served by the server: its writer lease while it has work, its own worker thread, and its bounded queue
of jobs.

Every job that touches the held agent (a turn, a block set, an archival insert, a rewind, ...) runs on the agent's
worker thread, one at a time, in the order the server accepted them: turns on one agent are queued in order, turns on
different agents run at once. The queue is bounded: a job beyond `queue_size` waiting is refused (429).

The agent is held only while it has work: once no job has come for `release_after` seconds it is closed (saved, its
lease given back) and the thread ends, so another process (another worker over the same storage) may take it. The
next job opens it again, waiting up to `wait_for_holder` seconds for a live holder elsewhere to give it back; a
holder that died on this host is taken over at once, one on another host once its lease has run out. An agent kept
busy here for `yield_after` seconds is given back between two jobs for a moment (`YIELD_SECONDS`), so that a request
waiting in another process is served before its wait ends: no process keeps an agent from the others while it has work.
"""

from __future__ import annotations

import asyncio
import contextvars
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, TypeVar

from agentos.agent.agent import Agent
from agentos.errors import AgentBusyError, AgentOSError, LeaseLostError
from agentos.server.errors import QueueFullError
from agentos.server.turns import TurnRun

T = TypeVar("T")

YIELD_SECONDS = 0.5  # how long an agent given back for other processes' sake stays free (they look every 0.2 s)


@dataclass(eq=False)
class Job:
    """Work on the held agent; `turn` when it is a turn."""

    work: Callable[[Any], Any]  # called with the Agent (None for a job that `opens` nothing, before it is open)
    turn: TurnRun | None = None
    opens: bool = True
    future: Future[Any] = field(default_factory=Future)
    context: contextvars.Context = field(default_factory=contextvars.copy_context)  # the request's: who acts


class AgentHost:
    """Agent `name`, opened for writing by `opener` on its worker thread before a job, closed by `close` (and after
    `release_after` idle seconds; None: kept until `close`). `on_idle` hears that the agent was given back and the
    thread ended (from that thread). `yield_after`: None when no other process may be waiting for the agent."""

    def __init__(self, name: str, opener: Callable[[AgentHost], Agent], queue_size: int, *,
                 release_after: float | None = None, wait_for_holder: float = 0.0, yield_after: float | None = None,
                 on_idle: Callable[[AgentHost], None] | None = None) -> None:
        self.name = name
        self.agent: Agent | None = None
        self.model_error: Exception | None = None  # why its model could not be set up (it was opened without one)
        self._opener = opener
        self._queue_size = queue_size
        self._release_after = release_after
        self._wait_for_holder = wait_for_holder
        self._yield_after = yield_after
        self._held_since = 0.0  # when the agent was last opened here (time.monotonic)
        self._on_idle = on_idle
        self._jobs: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._waiting: list[Job] = []
        self._running: Job | None = None
        self.closed = False
        self._closing: Job | None = None
        self._stop = threading.Event()  # set when closing: a wait for another holder ends at once
        self._thread: threading.Thread | None = None  # started by the first job; ends when idle (or closed)

    # -- accepting work ------------------------------------------------------------------------

    def submit(self, work: Callable[[Agent], Any], turn: TurnRun | None = None) -> Future[Any]:
        """Queue `work` behind what is waiting; QueueFullError when `queue_size` jobs already wait."""
        with self._lock:
            if self.closed:
                raise AgentBusyError(f'agent "{self.name}" was just closed by this server (renamed, deleted or '
                                     f"changed); try again.")
            if len(self._waiting) >= self._queue_size:
                raise QueueFullError(f'agent "{self.name}" has {len(self._waiting)} turn(s) or change(s) waiting '
                                     f"already, the most this server queues for one agent; try again when one ends.")
            job = Job(work, turn)
            self._enqueue(job)
        return job.future

    def _enqueue(self, job: Job) -> None:
        """Queue `job` (under the lock), starting the worker thread if it is not running."""
        self._waiting.append(job)
        self._jobs.put(job)
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, daemon=True, name=f"agentos-serve-{self.name}")
            self._thread.start()

    async def call(self, work: Callable[[Agent], T]) -> T:
        """Run `work` on the held agent, in turn, and return what it returns (or raise what it raises)."""
        result: T = await asyncio.wrap_future(self.submit(work))
        return result

    async def ready(self) -> None:
        """Open the agent now, if it is not open (AgentNotFoundError, AgentBusyError, ... when it cannot be)."""
        if self.agent is None:
            await self.call(lambda agent: None)

    def start_turn(self, run: TurnRun) -> None:
        """Queue a turn; its events come through `run`."""
        self.submit(run.work, run)

    # -- what it is doing ----------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        """Whether a job runs or waits (a turn whose last event is out no longer counts)."""
        with self._lock:
            running = self._running
            ended = running is not None and running.turn is not None and running.turn.done.is_set()
            return (running is not None and not ended) or bool(self._waiting)

    def turns(self) -> tuple[TurnRun | None, list[TurnRun]]:
        """The turn running now (None: none), and the turns waiting, in order."""
        with self._lock:
            running = self._running.turn if self._running is not None else None
            return running, [job.turn for job in self._waiting if job.turn is not None]

    def cancel(self, turn_id: str | None, reason: str, *, waiting_only: bool = False) -> list[str]:
        """Cancel turn `turn_id` (None: the running one and every waiting one); the ids cancelled."""
        running, waiting = self.turns()
        chosen = [t for t in ([] if waiting_only else [running]) + list(waiting)
                  if t is not None and not t.done.is_set() and turn_id in (None, t.id)]
        for turn in chosen:
            turn.cancel(reason)
        return [t.id for t in chosen]

    def stop_waiting(self) -> None:
        """End a wait for another holder now (the server is stopping): that job fails with who holds the agent."""
        self._stop.set()

    def retire(self) -> bool:
        """Mark an idle host closed (its agent given back, its thread ended, nothing waiting) so that nothing more is
        queued on it; False, and nothing changed, when it has work again."""
        with self._lock:
            if self.closed or self._thread is not None or self._waiting or self.agent is not None:
                return False
            self.closed = True
            return True

    # -- the worker ------------------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=self._release_after)
            except queue.Empty:  # idle: give the agent back, and end the thread unless a job came meanwhile
                self._let_go()
                with self._lock:
                    if not self._waiting:
                        self._thread = None
                        break
                continue
            if job is None:
                return
            with self._lock:
                self._waiting.remove(job)
                self._running = job
            ran = job.future.set_running_or_notify_cancel()  # False: its caller went away before it started
            result, failed = self._run(job) if ran else (None, None)
            if isinstance(failed, LeaseLostError) or (job.turn is not None and job.turn.lost):
                self._let_go()
            with self._lock:
                self._running = None  # before its caller hears: the host is idle when the answer arrives
            if failed is not None:
                job.future.set_exception(failed)
            elif ran:
                job.future.set_result(result)
            if self._held_too_long():
                self._let_go()  # others may be waiting for it: give it back for a moment
                self._stop.wait(YIELD_SECONDS)

        if self._on_idle is not None:
            self._on_idle(self)

    def _run(self, job: Job) -> tuple[Any, BaseException | None]:
        try:
            if self.agent is None and job.opens:
                self.agent = self._acquire()
            return job.context.run(job.work, self.agent), None
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits for the job
            if job.turn is not None and not job.turn.started:
                job.turn.fail(exc)  # its stream ends with why it could not run
            return None, exc

    def _held_too_long(self) -> bool:
        """Whether the agent has been held here for `yield_after` seconds, with work still waiting."""
        if self.agent is None or self._yield_after is None:
            return False
        with self._lock:
            waiting = bool(self._waiting)
        return waiting and time.monotonic() - self._held_since > self._yield_after

    def _acquire(self) -> Agent:
        """Open the agent for writing; while a live process elsewhere holds it, try again until `wait_for_holder`
        seconds have passed (a worker gives an agent back once it is idle), then say who holds it."""
        deadline = time.monotonic() + self._wait_for_holder
        pause = 0.02
        while True:
            self.model_error = None
            try:
                agent = self._opener(self)
                self._held_since = time.monotonic()
                return agent
            except AgentBusyError as exc:
                left = deadline - time.monotonic()
                if left <= 0 or self._stop.is_set():
                    if self._wait_for_holder <= 0:
                        raise
                    raise AgentBusyError(f"{exc} (This server waited {self._wait_for_holder:g} s for it to be given "
                                         f"back.)") from None
                self._stop.wait(min(pause, left))
                pause = min(pause * 2, 0.2)

    def _let_go(self) -> None:
        """Close the agent: an idle one is saved and its lease given back (another process may take it now); one
        whose lease this server lost (taken over, or deleted elsewhere) writes nothing. The next job opens it again
        from what is saved, or says who holds it now."""
        agent, self.agent = self.agent, None
        if agent is not None:
            try:
                agent.close()
            except AgentOSError:
                pass  # the lease was lost, or storage failed: the lease runs out by itself

    async def close(self, timeout: float) -> bool:
        """Close the agent (saving it and giving its lease back) after the jobs accepted so far, and stop the worker.
        False when that did not happen within `timeout` seconds (a job that does not end)."""
        self._stop.set()
        with self._lock:
            if not self.closed and self._thread is None and self.agent is None:
                self.closed = True  # idle: nothing held, no thread to stop
            if not self.closed:
                self.closed = True
                self._closing = Job(lambda agent: agent.close() if agent is not None else None, opens=False)
                self._enqueue(self._closing)
                self._jobs.put(None)
        if self._closing is None:
            return True  # it was idle: nothing held, no thread
        try:
            await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(self._closing.future)), timeout)
        except TimeoutError:
            return False
        return True
