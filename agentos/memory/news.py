"""News from background work between turns: tiers hand events in from their threads, the front end takes them."""

from __future__ import annotations

import threading

from agentos.events import Event

NEWS_KEPT = 200  # the newest events kept while nobody takes them


class News:
    """A thread-safe queue of events, oldest first, that a reader may wait on."""

    def __init__(self) -> None:
        self._events: list[Event] = []
        self._cond = threading.Condition()
        self._wakes = 0  # how often readers were woken without news (a close)

    def tell(self, event: Event) -> None:
        """Hand over one event (any thread)."""
        with self._cond:
            self._events.append(event)
            del self._events[:-NEWS_KEPT]
            self._cond.notify_all()

    def take(self, wait: float = 0.0) -> list[Event]:
        """Every event not yet taken, oldest first; waits up to `wait` seconds for the first when there is none
        (`wake` ends the wait)."""
        with self._cond:
            wakes = self._wakes
            if wait > 0 and not self._events:
                self._cond.wait_for(lambda: bool(self._events) or self._wakes != wakes, timeout=wait)
            events, self._events = self._events, []
        return events

    def wake(self) -> None:
        """End every wait under way now, with what there is (the agent is closing)."""
        with self._cond:
            self._wakes += 1
            self._cond.notify_all()
