"""The memory tier interface: what a tier owns, what it shows the model, and how it is kept.

A tier (recall, archival, later facts or an entity graph) declares its tables, its tools and
its lines in the prompt's metadata, reacts to each step's new messages, and says how it is
deleted and reindexed. Compaction needs nothing from it: background maintenance compacts every
table that was written, by name. The agent, `agentos delete`, `agentos reindex` and the metadata
template only ever go through this interface, so a new tier touches none of them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

from agentos.embedders.base import Embedder
from agentos.errors import ReadOnlyAgentError
from agentos.messages import Message
from agentos.storage.db import SWAP_SUFFIX, Database
from agentos.storage.store import Rows
from agentos.tools.decorator import Tool

Progress = Callable[[str, int, int], None]  # (what, done, total)


@dataclass(frozen=True)
class MemoryStats:
    """What the agent knows that a tier may show in the prompt's metadata."""

    message_count: int  # messages ever saved
    hidden_count: int  # of those, how many are out of the context


@dataclass
class TierContext:
    """What a tier of one agent is built from: the database, the agent, its embedder and whether it may write.

    A read-only tier creates nothing: it opens only tables that exist, and a missing one reads as empty."""

    db: Database
    agent_id: str
    embedder: Callable[[], Embedder]  # resolved on first use, once per agent
    writable: bool = True
    guard: Callable[[], None] | None = None  # raises unless the agent may be written now (its lease is held)
    on_write: Callable[[str], None] | None = None  # told the table name after a write outside a step
    settings: Callable[[], Any] | None = None  # the agent's settings now (AgentSettings), for tiers with their own
    rankers: Callable[[], list[Any]] | None = None  # the agent's tiers that rank messages for recall search
    model: Callable[[], Any] | None = None  # the language model search stages ask (a Provider), when there is one

    def check_writable(self, what: str) -> None:
        if not self.writable:
            raise ReadOnlyAgentError(f"cannot {what}: the agent was opened read-only.")
        if self.guard is not None:
            self.guard()

    def wrote(self, table: str) -> None:
        if self.on_write is not None:
            self.on_write(table)


class Tier(ABC):
    """One kind of memory of one agent."""

    name: ClassVar[str]

    def __init__(self, ctx: TierContext) -> None:
        self.ctx = ctx

    @classmethod
    @abstractmethod
    def table_names(cls, agent_id: str) -> list[str]:
        """Every table this tier may hold for the agent (they need not exist yet)."""

    @property
    def in_use(self) -> bool:
        """Whether this agent uses the tier (an optional tier that is off and holds nothing is left out of reports)."""
        return True

    def tools(self) -> list[Tool]:
        """The tools the model uses to reach this tier."""
        return []

    def metadata(self, stats: MemoryStats) -> list[str]:
        """Lines this tier adds to the prompt's memory metadata (counts shown to the model are never stale)."""
        return []

    def after_step(self, messages: Sequence[Message]) -> dict[str, Rows]:
        """Rows to write, by table, with a step's new messages (before the agent's state)."""
        return {}

    def saved(self, message_ids: Sequence[str]) -> None:  # noqa: B027 - optional: most tiers need not know
        """The step that saved these messages is committed (after_step ran for them, perhaps for an earlier try)."""

    def recover(self) -> None:  # noqa: B027 - optional: most tiers write only with steps
        """Finish what a crash left half-written outside a step (run when the agent is opened for writing)."""

    def flush(self) -> None:  # noqa: B027 - optional: most tiers keep nothing unwritten
        """Write what the tier keeps in memory between steps (e.g. usage counts), before the agent is closed."""

    def discard(self, message_ids: Sequence[str]) -> None:  # noqa: B027 - optional: most tiers write no step rows
        """Forget rows made for messages whose step never landed (a crash before the state was written)."""

    def rewind(self, to: datetime) -> int:
        """Take back what this tier stored after `to` that no message holds (rows made for messages go with
        `discard`); return how many items were removed."""
        return 0

    def ranked_messages(self, query: str, limit: int) -> list[str] | None:
        """Message ids this tier ranks for a recall search, best first (None: it ranks none). The entity graph does;
        recall fuses the list under the tier's name."""
        return None

    def reindex(self, embedder: Embedder, progress: Progress) -> int:
        """Rebuild what depends on the embedder with `embedder`; return how many items were re-embedded."""
        return 0

    @classmethod
    def delete_all(cls, db: Database, agent_id: str) -> None:
        """Remove everything this tier holds for an agent (no embedder needed)."""
        for name in cls.table_names(agent_id):
            db.drop(name)
            db.drop(name + SWAP_SUFFIX)
