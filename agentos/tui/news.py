"""Background news for the TUI: one thread per shown agent takes `agent.idle()` and posts each event to the app,
which shows it as it shows a turn's events."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from textual.app import App

from agentos.tui.messages import NewsArrived

if TYPE_CHECKING:
    from agentos.agent.agent import Agent

WAIT_SECONDS = 1.0  # each wait for news; stopping takes at most this long to be noticed


class NewsThread:
    """Takes the agent's news between turns until stopped (a switch, quitting) or the app ends."""

    def __init__(self, app: App[Any], agent: Agent) -> None:
        self.app, self.agent = app, agent
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"news-{agent.name}", daemon=True)

    def start(self) -> NewsThread:
        self.thread.start()
        return self

    def stop(self) -> None:
        """Post nothing more (the thread ends once its current wait is over)."""
        self._stop.set()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def _run(self) -> None:
        while not self._stop.is_set() and self.app.is_running:
            try:
                events = list(self.agent.idle(WAIT_SECONDS))
            except Exception:  # noqa: BLE001 - news is a nicety: a failed take waits and tries again
                self._stop.wait(WAIT_SECONDS)
                continue
            for event in events:
                if self._stop.is_set():
                    return
                self.app.post_message(NewsArrived(self.agent, event))
