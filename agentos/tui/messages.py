"""Textual messages the worker threads post to the app (a worker thread never touches widgets)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual.message import Message

from agentos.events import Event
from agentos.tui.status import StatusInfo

if TYPE_CHECKING:
    from agentos.agent.agent import Agent


class AgentEvent(Message):
    """One event of the running turn."""

    def __init__(self, event: Event) -> None:
        super().__init__()
        self.event = event


class StatusChanged(Message):
    """Fresh numbers for the status line, computed on the worker thread."""

    def __init__(self, info: StatusInfo) -> None:
        super().__init__()
        self.info = info


class TurnError(Message):
    """The turn raised instead of yielding TurnFailed."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class TurnEnded(Message):
    """The worker is done with the turn; `cancelled` if the user stopped it."""

    def __init__(self, cancelled: bool) -> None:
        super().__init__()
        self.cancelled = cancelled


class JobEnded(Message):
    """A job the app ran in a worker (a summary, an export, a rewind) is done: `then(result)`, or its error."""

    def __init__(self, then: Callable[[Any], Any], result: Any = None, error: Exception | None = None) -> None:
        super().__init__()
        self.then, self.result, self.error = then, result, error


class NewsArrived(Message):
    """An event of `agent`'s background news (`Agent.idle`), posted from the news thread."""

    def __init__(self, agent: Agent, event: Event) -> None:
        super().__init__()
        self.agent, self.event = agent, event


class FactsRead(Message):
    """A read of fact memory done in a worker: `then(result)` for `agent`, or the error it raised."""

    def __init__(self, agent: Agent, then: Callable[[Any], Any], result: Any = None,
                 error: Exception | None = None) -> None:
        super().__init__()
        self.agent, self.then, self.result, self.error = agent, then, result, error


class AgentOpened(Message):
    """The agent the app was started with is loaded (on a worker), with its numbers read there too."""

    def __init__(self, agent: Agent, info: StatusInfo | None) -> None:
        super().__init__()
        self.agent, self.info = agent, info


class OpenFailed(Message):
    """The agent the app was started with could not be loaded."""

    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.error = error
