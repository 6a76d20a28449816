"""The app's workers: a turn iterated on a thread that posts each event, a job (a summary, an export, a rewind) run
the same way, and cancelling a turn with Escape. AgentApp is one."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual import work
from textual.worker import get_current_worker

from agentos.presenter import changes_numbers
from agentos.tui.dialogs import AgentDialogs
from agentos.tui.messages import AgentEvent, JobEnded, StatusChanged, TurnEnded, TurnError
from agentos.tui.status import StatusBar, take_status
from agentos.tui.view import THINKING, ConversationView

if TYPE_CHECKING:
    from agentos.tui.memory import MemoryPanel

CANCEL_SECONDS = 0.4  # after Escape, how long a model call has to reach its next event before the screen lets go
SPIN_SECONDS = 0.1


class TurnRunner(AgentDialogs):
    """Runs the agent's turns and jobs in thread workers; only one has the agent at a time."""

    busy: bool
    quitting: bool
    view: ConversationView
    _cancel: threading.Event
    _idle: threading.Event
    _abandoned: bool
    _close_when_idle: bool
    _spinner: Any

    if TYPE_CHECKING:  # the app's own

        @property
        def memory_panel(self) -> MemoryPanel: ...

        @property
        def status_line(self) -> StatusBar: ...

        def offer_tour(self) -> None: ...

        def close_agent(self) -> None: ...

    def begin_busy(self, activity: str) -> None:
        """The agent is in a worker's hands (a turn or a job): the spinner runs until `end_busy`."""
        self.busy = True
        self._idle.clear()
        self.status_line.set(activity=activity)
        self._spinner = self.set_interval(SPIN_SECONDS, lambda: self.status_line.spin(self.busy))

    def end_busy(self) -> None:
        self.busy = False
        if self._spinner is not None:
            self._spinner.stop()
            self._spinner = None
        self.status_line.spin(False)
        self.status_line.set(activity="")

    def worker_done(self) -> None:
        """Called on the worker's thread as it lets go of the agent; closes it if the app quit without waiting."""
        self._idle.set()
        if self.quitting and self._close_when_idle:
            self.close_agent()

    def start_turn(self, text: str) -> None:
        """Show the user's message and run the turn in a worker."""
        self._cancel.clear()
        self.view.new_turn()
        self.memory_panel.settle(self.agent.blocks)
        self.conversation.add(f"you> {text}", classes="user")
        self.conversation.anchor()  # back to following the end (a search's jump may have scrolled away)
        self.begin_busy(THINKING)
        self.run_turn(text)

    @work(thread=True, exclusive=True, group="agent", exit_on_error=False)
    def run_turn(self, text: str) -> None:
        """Iterate the turn on this thread, posting each event; close the generator to cancel."""
        worker = get_current_worker()
        cancelled = False
        events = self.agent.turn(text)
        try:
            for event in events:
                self.post_message(AgentEvent(event))
                if changes_numbers(event):
                    self.post_message(StatusChanged(take_status(self.agent)))
                if self._cancel.is_set() or worker.is_cancelled:
                    cancelled = True
                    break
        except Exception as exc:  # noqa: BLE001 - one clear line, never a crash
            self.post_message(TurnError(f"{type(exc).__name__}: {exc}"))
        finally:
            try:
                events.close()  # the loop's cleanup: pairs tool calls with results and saves
            except Exception as exc:  # noqa: BLE001
                self.post_message(TurnError(f"{type(exc).__name__}: {exc}"))
            try:
                self.post_message(StatusChanged(take_status(self.agent)))
            except Exception:  # noqa: BLE001 - the numbers are a nicety
                pass
            finally:
                self.worker_done()
                self.post_message(TurnEnded(cancelled or self._cancel.is_set()))

    @property
    def in_use(self) -> bool:
        """A worker has the agent: a turn or job, or a cancelled turn whose model call has not returned yet."""
        return self.busy or not self._idle.is_set()

    def action_cancel_turn(self) -> None:
        """Escape: ask the running turn to stop at its next event (a retry's wait yields every quarter second). A
        model call that sends nothing within CANCEL_SECONDS is let go of: the screen is free at once, nothing of
        that call is shown, and its worker saves the agent when the call returns."""
        if self.busy and not self._cancel.is_set():
            self._cancel.set()
            self.status_line.set(activity="cancelling…")
            self.set_timer(CANCEL_SECONDS, self._let_go)

    def _let_go(self) -> None:
        if self.busy and self._cancel.is_set() and not self.quitting:
            self._abandoned = True
            self.end_busy()
            self.conversation.add("(cancelled; the model call still under way is dropped when it returns)",
                                  classes="info")
            self.refresh_status()

    def on_status_changed(self, message: StatusChanged) -> None:
        if not self.quitting:
            self.status_line.set(message.info)

    def on_turn_error(self, message: TurnError) -> None:
        if not self.quitting:
            self.conversation.add(f"error: {message.text}", classes="error")
            self.notify(message.text, severity="error", timeout=8)

    async def on_turn_ended(self, message: TurnEnded) -> None:
        self.busy = False
        if self.quitting:
            return
        self.end_busy()
        ended = self.view.reply_end()
        if ended is not None:
            await ended
        if self._abandoned:  # already said
            self._abandoned = False
        elif message.cancelled:
            self.conversation.add("(cancelled)", classes="info")
        self.refresh_status()
        self.view.retry_line = None
        self.offer_tour()
        self.facts.check(self.agent)

    def run_job(self, activity: str, job: Callable[[], Any], then: Callable[[Any], Any]) -> None:
        """Run `job` (a summary, an export, a rewind: work that may call the model or take seconds) in a worker,
        with the spinner; `then(result)` runs here afterwards, and a failure is a notice."""
        if self.in_use:
            self.notify("Wait for the reply (or cancel it with Escape) first.", severity="warning")
            return
        self.begin_busy(activity)
        self._run_job(job, then)

    @work(thread=True, exclusive=True, group="agent", exit_on_error=False)
    def _run_job(self, job: Callable[[], Any], then: Callable[[Any], Any]) -> None:
        result: Any = None
        error: Exception | None = None
        try:
            result = job()
        except Exception as exc:  # noqa: BLE001 - a notice; the app goes on
            error = exc
        finally:
            self.worker_done()  # before the app hears of it, so that it finds the agent free
        self.post_message(JobEnded(then, result=result, error=error))

    async def on_job_ended(self, message: JobEnded) -> None:
        if self.quitting:
            return
        self.end_busy()
        if message.error is not None:
            self.notify(f"{message.error}", severity="error", timeout=10)
        else:
            outcome = message.then(message.result)
            if asyncio.iscoroutine(outcome):
                await outcome
        self.refresh_status()
        self.facts.check(self.agent)
