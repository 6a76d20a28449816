"""The TUI's view of fact memory: consolidation's news as notifications, the facts section of the memory pane,
and the Facts dialog. Storage is read on worker threads; the consolidator's thread only posts a message."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from textual.app import App

from agentos.events import FactsChanged, FactsNotice
from agentos.tui.memory import FACTS_SHOWN, MemoryPanel
from agentos.tui.messages import FactsRead, FactsWaiting
from agentos.tui.screens import FactsScreen, TextScreen, fact_detail

if TYPE_CHECKING:
    from agentos.agent.agent import Agent
    from agentos.agent.consolidator import Consolidator
    from agentos.memory.fact_rows import Fact
    from agentos.memory.facts import FactTier

NOTIFY_FACTS = 3  # new facts named in one notification; the rest are counted
FACT_NOTE_CHARS = 80  # each cut to this many characters there
ONE_CHANGE = {"+ ": "New fact: ", "~ ": "Updated fact: "}  # a notification of one change, by its line's mark


def describe_fact_changes(lines: Sequence[str]) -> str:
    """What consolidation changed, for a notification: "New fact: …", or several summarised in one."""
    if len(lines) == 1:
        line = lines[0]
        lead = ONE_CHANGE.get(line[:2])
        return f"{lead}{line[2:]}" if lead else f"Fact memory: {line}"
    adds = [line[2:] for line in lines if line.startswith("+ ")]
    named = adds if len(adds) == len(lines) else list(lines)
    shown = "; ".join(_cut(item, FACT_NOTE_CHARS) for item in named[:NOTIFY_FACTS])
    more = f"; and {len(named) - NOTIFY_FACTS} more" if len(named) > NOTIFY_FACTS else ""
    what = "new facts" if named is adds else "fact changes"
    return f"{len(named)} {what}: {shown}{more}"


def _cut(text: str, limit: int) -> str:
    """`text`, cut to `limit` characters with an ellipsis."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def newest_facts(tier: FactTier) -> tuple[int, list[Fact]]:
    """How many facts are current, and the newest few (read in a worker: it is storage)."""
    count = tier.count_current()
    return count, tier.listing()[:FACTS_SHOWN] if count else []


def current_facts(tier: FactTier) -> list[Fact]:
    """Every current fact, newest first (none read when there is no fact yet)."""
    return tier.listing() if tier.count_current() else []


class FactNews(App[int]):
    """The part of the app that follows fact memory (AgentApp is one)."""

    agent: Agent
    quitting: bool

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._watched: Consolidator | None = None  # whose fact news this app is told of (fact memory in use)
        self._facts_lock = threading.Lock()  # fact reads take turns, so that the newest read is shown last

    if TYPE_CHECKING:  # the app's own

        @property
        def memory_panel(self) -> MemoryPanel: ...

        def focus_input(self, *_: Any) -> None: ...


    def facts_in_use(self) -> bool:
        """Whether the agent's fact memory is in use (consolidation on, or facts kept); False if that cannot be told."""
        from agentos.memory.facts import FactTier

        try:
            return bool(self.agent.tier(FactTier).in_use)
        except Exception:  # noqa: BLE001 - the facts section is a nicety; without it nothing changes
            return False

    def watch_facts(self, refresh: bool = False) -> None:
        """Follow the consolidator's news and show the facts section while fact memory is in use; `refresh` rereads."""
        if not self.facts_in_use():
            self._unwatch()
            self.memory_panel.hide_facts()
            return
        consolidator = self.agent.consolidator
        if consolidator is not self._watched:
            self._unwatch()
            consolidator.listeners.append(self._facts_listener)
            self._watched = consolidator
            self.post_message(FactsWaiting())  # what it did before this app listened (on opening, say)
            refresh = True
        if refresh:
            agent = self.agent
            self._in_worker(lambda: self._read_panel(agent), "facts")

    def _unwatch(self) -> None:
        """Hear no more of the consolidator followed until now (a switch, or the end)."""
        watched, self._watched = self._watched, None
        if watched is not None and self._facts_listener in watched.listeners:
            watched.listeners.remove(self._facts_listener)

    def _facts_listener(self, event: FactsChanged | FactsNotice) -> None:
        """Called on the consolidator's thread: only posts, which a closing or closed app ignores."""
        try:
            self.post_message(FactsWaiting())
        except RuntimeError:  # the app's event loop is already closed
            pass

    def on_facts_waiting(self, message: FactsWaiting) -> None:
        """The consolidator has news: take it on a worker (taking waits for the consolidator's lock)."""
        consolidator, agent = self._watched, self.agent
        if self.quitting or consolidator is None:
            return
        self._in_worker(lambda: self._take_news(agent, consolidator), "facts")

    def _in_worker(self, job: Callable[[], None], group: str) -> None:
        """Run `job` on a thread (storage is never read on this one); it posts what it read."""
        self.run_worker(job, thread=True, group=group, exit_on_error=False)

    def _take_news(self, agent: Agent, consolidator: Consolidator) -> None:
        """On a worker: the consolidator's events, then (when facts changed) the facts section read afresh."""
        with self._facts_lock:
            events = consolidator.take_events()
            if events:
                self.post_message(FactsRead(agent, self.show_fact_events, events))
            if any(isinstance(e, FactsChanged) for e in events):
                self._read(agent, lambda: newest_facts(self._tier(agent)), self.show_facts)

    def _read_panel(self, agent: Agent) -> None:
        """On a worker: the facts section's numbers and lines, read afresh."""
        with self._facts_lock:
            self._read(agent, lambda: newest_facts(self._tier(agent)), self.show_facts)

    def _read(self, agent: Agent, read: Callable[[], Any], then: Callable[[Any], Any]) -> None:
        """On a worker: `read()`, posted for `then` here; an error is posted instead (a notification)."""
        try:
            result = read()
        except Exception as exc:  # noqa: BLE001 - storage trouble is a notification, never a crash
            self.post_message(FactsRead(agent, then, error=exc))
            return
        self.post_message(FactsRead(agent, then, result))

    @staticmethod
    def _tier(agent: Agent) -> FactTier:
        """The agent's fact tier."""
        from agentos.memory.facts import FactTier

        return agent.tier(FactTier)

    def on_facts_read(self, message: FactsRead) -> None:
        """A read of fact memory is done: show it, or say why it failed."""
        if self.quitting or message.agent is not self.agent:  # read for an agent no longer shown
            return
        if message.error is not None:
            self.notify(f"could not read fact memory: {message.error}", severity="error", timeout=8)
            return
        message.then(message.result)

    def show_facts(self, read: tuple[int, list[Fact]]) -> None:
        """Show (count, newest facts) in the pane's facts section."""
        count, newest = read
        if self._watched is not None:
            self.memory_panel.show_facts(count, newest)

    def show_fact_events(self, events: list[FactsChanged | FactsNotice]) -> None:
        """What consolidation did, as notifications: the new facts in one, and each notice as a warning."""
        lines = [line for e in events if isinstance(e, FactsChanged) for line in e.changes]
        if lines:
            self.notify(describe_fact_changes(lines), title="fact memory", timeout=8)
        for event in events:
            if isinstance(event, FactsNotice):
                self.notify(event.text, title="fact memory", severity=event.level, timeout=10)

    def action_facts(self) -> None:
        """The Facts dialog: every current fact (read on a worker first), filtered as one types."""
        if self._watched is None and not self.facts_in_use():
            self.notify("This agent's fact memory is not in use.", severity="warning")
            return
        agent = self.agent

        def read() -> None:
            self._read(agent, lambda: current_facts(self._tier(agent)), self.show_fact_list)

        self._in_worker(read, "facts-list")

    def show_fact_list(self, facts: list[Fact]) -> None:
        """Open the Facts dialog on `facts`; the one chosen is shown whole."""
        by_id = {f.id: f for f in facts}

        def chosen(fact_id: str | None) -> None:
            self.focus_input()
            fact = by_id.get(fact_id or "")
            if fact is not None:
                self.push_screen(TextScreen(f"fact {fact.id}", fact_detail(fact)), self.focus_input)

        self.push_screen(FactsScreen(facts), chosen)
