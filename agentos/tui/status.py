"""The numbers on the status line: model, context usage and message counts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentos.agent.agent import Agent


@dataclass(frozen=True)
class StatusInfo:
    """A snapshot taken on whichever thread owns the agent at the time."""

    model: str
    total: int
    window: int
    messages: int
    in_context: int

    def render(self, activity: str = "") -> str:
        """One line: model · tokens/window (pct) · message counts · activity."""
        pct = 100 * self.total / self.window if self.window else 0.0
        line = (f"{self.model} · context {self.total:,}/{self.window:,} tokens ({pct:.0f}%) · "
                f"{self.messages} messages, {self.in_context} in context")
        return f"{line} · {activity}" if activity else line


def take_status(agent: Agent) -> StatusInfo:
    """Read the agent's numbers (call only where no turn is changing the agent concurrently)."""
    b = agent.context_breakdown()
    return StatusInfo(model=agent.model, total=b["total"], window=b["window"],
                      messages=agent.state.message_count, in_context=len(agent.context))
