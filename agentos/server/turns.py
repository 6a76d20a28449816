"""One turn accepted by the server: run on its agent's worker thread, its events bridged to the event loop.

The synchronous `Agent.turn` generator runs on the agent's own thread; each event is handed to the loop with
`call_soon_threadsafe` and read from an asyncio queue, so a turn never blocks the loop. A client that goes away does
not stop the turn: it finishes, every step is saved once, and its reply is in the history. Cancelling closes the
generator at the next event (the agent is left consistent and saved) and ends the stream with a `turn_failed` event
of kind `TurnCancelled`.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator
from typing import Any

from agentos.agent.agent import Agent
from agentos.agent.turn import failure
from agentos.events import Event, StepSaved, TurnFailed, TurnFinished
from agentos.messages import new_id

CANCELLED = "TurnCancelled"
LOST = {"LeaseLostError", "AgentDeletedError"}  # a turn that failed so: this server no longer holds its agent


def event_json(event: Event) -> dict[str, Any]:
    """An event as JSON, its `type` included: what an SSE `data:` line carries."""
    return event.model_dump(mode="json")


def sse_frame(number: int, event: Event) -> str:
    """One Server-Sent Event: `id` its number in the turn, `event` its type, `data` its JSON."""
    data = event_json(event)
    return f"id: {number}\nevent: {data['type']}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


class TurnRun:
    """One turn of one agent: its id, its text, its events as they come, and whether it was asked to stop."""

    def __init__(self, text: str, loop: asyncio.AbstractEventLoop) -> None:
        self.id = new_id("turn")
        self.text = text
        self.events: asyncio.Queue[Event | None] = asyncio.Queue()  # None: the turn is over
        self.done = threading.Event()
        self.started = False
        self.lost = False  # it found that this server no longer holds the agent
        self._loop = loop
        self._cancel = threading.Event()
        self._reason = ""

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def cancel(self, reason: str) -> None:
        """Stop the turn at its next event (before it starts, if it has not)."""
        self._reason = self._reason or reason
        self._cancel.set()

    def _emit(self, item: Event | None) -> None:
        try:
            self._loop.call_soon_threadsafe(self.events.put_nowait, item)
        except RuntimeError:  # the loop is closed: the server is gone, and nobody reads
            pass

    def _stopped(self, steps: int) -> TurnFailed:
        return TurnFailed(error=f"the turn was cancelled: {self._reason}", kind=CANCELLED, steps=steps)

    def work(self, agent: Agent) -> None:
        """Run the turn on `agent` (on its worker thread), emitting every event, then None."""
        self.started = True
        steps, ended = 0, False
        try:
            if self.cancelled:
                self._emit(self._stopped(0))
                ended = True
                return
            events = agent.turn(self.text)
            try:
                for event in events:
                    self._emit(event)
                    steps += isinstance(event, StepSaved)
                    ended = ended or isinstance(event, (TurnFinished, TurnFailed))
                    if isinstance(event, TurnFailed) and event.kind in LOST:
                        self.lost = True
                    if self.cancelled and not ended:
                        events.close()  # the turn saves what it did and leaves the agent consistent
                        self._emit(self._stopped(steps))
                        ended = True
                        break
            finally:
                events.close()
        except Exception as exc:  # noqa: BLE001 - a failure ends this turn, never the server
            if not ended:
                self._emit(failure(exc, steps))
        finally:
            self.done.set()  # before the end is sent: a client that hears it finds the agent free
            self._emit(None)

    def fail(self, exc: BaseException) -> None:
        """End a turn that could not start (its agent could not be opened) with why."""
        self.started = True
        self._emit(failure(exc, 0))
        self.done.set()
        self._emit(None)

    async def stream(self) -> AsyncIterator[Event]:
        """The turn's events as they come, to its end."""
        while True:
            event = await self.events.get()
            if event is None:
                return
            yield event
