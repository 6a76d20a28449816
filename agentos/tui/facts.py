"""The TUI's view of fact memory: the facts section of the memory pane, kept current, and the reads behind it and
the Facts dialog. Storage is read on worker threads; what was read is posted back to the app."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual.app import App

from agentos.memory.facts.tier import FactTier
from agentos.tui.memory import FACTS_SHOWN, MemoryPanel
from agentos.tui.messages import FactsRead

if TYPE_CHECKING:
    from agentos.agent.agent import Agent
    from agentos.memory.facts.rows import Fact
    from agentos.memory.facts.tier import FactTier


def fact_tier(agent: Agent) -> FactTier:
    """The agent's fact tier."""
    return agent.tier(FactTier)


def facts_in_use(agent: Agent) -> bool:
    """Whether the agent's fact memory is in use (consolidation on, or facts kept); False if that cannot be told."""
    try:
        return bool(fact_tier(agent).in_use)
    except Exception:  # noqa: BLE001 - the facts section is a nicety; without it nothing changes
        return False


def newest_facts(tier: FactTier) -> tuple[int, list[Fact]]:
    """How many facts are current, and the newest few (read in a worker: it is storage)."""
    count = tier.count_current()
    return count, tier.listing()[:FACTS_SHOWN] if count else []


def current_facts(tier: FactTier) -> list[Fact]:
    """Every current fact, newest first (none read when there is no fact yet)."""
    return tier.listing() if tier.count_current() else []


class FactsSection:
    """The memory pane's facts section for the agent the app shows: there while fact memory is in use, read afresh
    when asked (on opening, and when fact news comes)."""

    def __init__(self, app: App[Any], panel: Callable[[], MemoryPanel]) -> None:
        self.app = app
        self.panel = panel
        self.shown = False
        self._lock = threading.Lock()  # reads take turns, so that the newest read is shown last

    def check(self, agent: Agent, refresh: bool = False) -> None:
        """Show the section while fact memory is in use (read afresh when it appears, or with `refresh`)."""
        if not facts_in_use(agent):
            self.shown = False
            self.panel().hide_facts()
            return
        if not self.shown:
            self.shown, refresh = True, True
        if refresh:
            self.read(agent, lambda: newest_facts(fact_tier(agent)), self.show, "facts")

    def read(self, agent: Agent, read: Callable[[], Any], then: Callable[[Any], Any], group: str) -> None:
        """`read()` on a worker thread, posted back for `then` (or its error, for a notification)."""
        def job() -> None:
            with self._lock:
                try:
                    result = read()
                except Exception as exc:  # noqa: BLE001 - storage trouble is a notification, never a crash
                    self.app.post_message(FactsRead(agent, then, error=exc))
                    return
                self.app.post_message(FactsRead(agent, then, result))

        self.app.run_worker(job, thread=True, group=group, exit_on_error=False)

    def show(self, read: tuple[int, list[Fact]]) -> None:
        """Show (count, newest facts) in the section."""
        count, newest = read
        if self.shown:
            self.panel().show_facts(count, newest)
