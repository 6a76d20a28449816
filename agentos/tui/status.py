"""The status bar: the model, a context gauge by part, and the memory tiers' counts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.text import Text
from textual.widget import Widget

from agentos.errors import AgentOSError
from agentos.memory.archival import ArchivalTier

if TYPE_CHECKING:
    from agentos.agent.agent import Agent

# The parts of the context window, in the order the request holds them, with their gauge colours.
PARTS = (("system", "system", "magenta"), ("memory", "blocks", "green"), ("tools", "tools", "blue"),
         ("summary", "summary", "yellow"), ("messages", "messages", "cyan"))
SHORT = {"system": "sys", "memory": "blk", "tools": "tool", "summary": "sum", "messages": "msg"}  # narrow legend
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


@dataclass(frozen=True)
class StatusInfo:
    """A snapshot taken on whichever thread owns the agent at the time."""
    model: str
    window: int
    parts: tuple[tuple[str, int], ...]  # (key, tokens) for each of PARTS
    correction: int  # provider-reported minus estimated tokens
    messages: int
    in_context: int
    archival: int | None
    compactions: int
    measured: bool = True  # False until a provider has reported a request's real size (the figure is an estimate)

    @property
    def total(self) -> int:
        return max(0, sum(n for _, n in self.parts) + self.correction)

    def counts(self) -> str:
        """The memory tiers' counts, for the status line."""
        archival = "" if self.archival is None else f" · archival {self.archival:,}"
        return (f"recall {self.messages:,} ({self.in_context} in context){archival} · "
                f"compactions {self.compactions}")


def take_status(agent: Agent) -> StatusInfo:
    """Read the agent's numbers (call only where no turn is changing the agent concurrently)."""
    b = agent.context_breakdown()
    try:
        archival: int | None = agent.tier(ArchivalTier).count()
    except (AgentOSError, KeyError, OSError, ValueError):
        archival = None  # no archival tier, or its table cannot be read: the line shows no count
    return StatusInfo(model=agent.model, window=b["window"], parts=tuple((key, b[key]) for key, _, _ in PARTS),
                      correction=b["correction"], messages=agent.state.message_count, in_context=len(agent.context),
                      archival=archival, compactions=agent.state.compactions,
                      measured=b["last_reported"] is not None or b["correction"] != 0)


def gauge(info: StatusInfo, width: int) -> Text:
    """The context window as a bar of `width` cells, one colour per part, then the total and a legend."""
    window = max(1, info.window)
    total = info.total
    pct = 100 * total / window
    about = "" if info.measured else "≈"  # an estimate until the provider has reported a real count
    tail = Text.assemble(f" {about}{total:,}/{window:,} tokens ({pct:.0f}%)")
    room = width - len(tail)
    for numbers, short in ((True, False), (False, False), (False, True)):  # the fullest legend that fits
        legend = _legend(info, numbers, short)
        if room - len(legend) >= 10:
            room -= len(legend)
            break
    else:
        legend = Text()
    room = max(4, room)
    scale = room / max(window, total)
    bar = Text()
    used = 0
    parts = dict(info.parts)
    parts["messages"] = max(0, parts["messages"] + info.correction)
    for key, _, colour in PARTS:
        cells = round((used + parts[key]) * scale) - round(used * scale)
        cells = max(cells, 1 if parts[key] else 0)  # every part that takes tokens shows
        bar.append("█" * cells, colour)
        used += parts[key]
    bar.append("░" * max(0, room - len(bar)), "dim")
    bar.truncate(room)
    return bar + tail + legend


def _legend(info: StatusInfo, numbers: bool, short: bool) -> Text:
    legend, tokens = Text(), dict(info.parts)
    for key, label, colour in PARTS:
        legend.append(" █" if short else "  █ ", colour)
        name = SHORT[key] if short else label
        legend.append(f"{name} {tokens[key]:,}" if numbers else name, "dim")
    return legend


class StatusBar(Widget):
    """Two lines: model, counts and activity (with a spinner while a turn runs); then the context gauge."""
    DEFAULT_CSS = "StatusBar { height: 2; }"

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.info: StatusInfo | None = None
        self.activity = ""
        self.frame: int | None = None  # the spinner's frame while busy

    @property
    def text(self) -> str:
        """The first line as plain text (for tests)."""
        return self._line().plain

    def set(self, info: StatusInfo | None = None, activity: str | None = None) -> None:
        self.info = info or self.info
        self.activity = self.activity if activity is None else activity
        self.refresh()

    def spin(self, busy: bool) -> None:
        """Advance the spinner (or stop it)."""
        self.frame = None if not busy else (0 if self.frame is None else self.frame + 1)
        self.refresh()

    def _line(self) -> Text:
        """What is happening first (so a narrow screen cuts the counts, not the spinner), then the model and counts."""
        if self.info is None:
            return Text("")
        line = Text()
        if self.activity:
            spinner = f"{SPINNER[self.frame % len(SPINNER)]} " if self.frame is not None else ""
            line.append(spinner + self.activity, "bold yellow")
            line.append(" · ")
        line.append(self.info.model, "bold")
        line.append(" · " + self.info.counts())
        return line

    def render(self) -> Text:
        if self.info is None:
            return Text("")
        line = self._line()
        line.truncate(self.size.width, overflow="ellipsis")
        return line + "\n" + gauge(self.info, self.size.width)
