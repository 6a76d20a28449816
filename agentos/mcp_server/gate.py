"""How the memory server reaches its agent without ever being a second writer.

Reads open the agent read-only, which works while another process holds it. A write takes the agent's lease for
that one call (open, edit, save, give back), so a chat or the TUI can open the agent between calls; while one
holds it, the write is refused with the holder named, and nothing is written. Calls are served one at a time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from agentos.agent.agent import Agent
from agentos.agent.directory import open_store
from agentos.agent.roles import Role
from agentos.agent.state import AgentState
from agentos.blocks import Block
from agentos.errors import AgentBusyError, AgentOSError
from agentos.providers.base import Provider
from agentos.storage import Store

T = TypeVar("T")


class WriteRefused(AgentOSError):
    """A write over MCP was refused because another process holds the agent; the message names it."""


@dataclass(frozen=True)
class Saved:
    """What the agent's saved row says now: its revision and its blocks."""

    rev: int
    blocks: tuple[Block, ...]


class MemoryGate:
    """One agent's memory as the server reaches it: a read or a write at a time."""

    def __init__(self, name: str, store: Store | None = None, models: dict[Role, Provider] | None = None) -> None:
        """`models` stand in for the agent's own in those roles, for a write that calls a model (tests, a process
        that embeds the server)."""
        self.name = name
        self.store = store or open_store()
        self.models = models or {}
        self._one_at_a_time = threading.Lock()
        Agent.load(name, store=self.store, read_only=True, with_model=False).close()  # an unknown agent fails here

    def read(self, work: Callable[[Agent], T]) -> T:
        """Run `work` on the agent opened read-only."""
        with self._one_at_a_time:
            agent = Agent.load(self.name, store=self.store, read_only=True, with_model=False)
            try:
                return work(agent)
            finally:
                agent.close()

    def write(self, work: Callable[[Agent], T], *, with_model: bool = False) -> T:
        """Run `work` on the agent held for this call (with its model, for work that calls one), save what it
        changed, and give the agent back."""
        with self._one_at_a_time:
            try:
                agent = Agent.load(self.name, store=self.store, with_model=with_model,
                                   provider=self.models.get("main") if with_model else None)
            except AgentBusyError as exc:
                raise WriteRefused(f"nothing was written: {exc} This memory server writes only while no other "
                                   f"process holds the agent; reads keep working.") from exc
            try:
                for role, model in self.models.items() if with_model else ():
                    agent.roles.use(role, model)
                result = work(agent)
                agent.save()
                return result
            finally:
                agent.close()

    def saved(self, unless_rev: int | None = None) -> Saved | None:
        """The agent's revision and blocks as saved, from its row alone (cheap enough to poll); None when the agent
        is gone or still at revision `unless_rev`."""
        row = self.store.agent_row(self.name)
        if row is None or row.rev == unless_rev:
            return None
        state = AgentState.model_validate_json(row.state)
        return Saved(rev=row.rev, blocks=tuple(state.blocks))
