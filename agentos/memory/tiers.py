"""The tiers every agent has, and one agent's set of them.

`TIER_KINDS` lists the tier classes in the order their tools and metadata lines appear; a new
tier registers with `register_tier` and is then deleted, reindexed, compacted and shown to the
model with the others, without changes anywhere else.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any, TypeVar

from agentos.embedders.base import Embedder
from agentos.embedders.resolve import resolve_embedder
from agentos.errors import StorageError, ToolError
from agentos.events import Event
from agentos.memory.archival import ArchivalTier
from agentos.memory.entity_graph import EntityGraphTier
from agentos.memory.facts.tier import FactTier
from agentos.memory.recall import RecallTier
from agentos.memory.tier import MemoryStats, Rows, Tier, TierContext
from agentos.messages import Message
from agentos.storage.db import Database
from agentos.tools.decorator import Tool

T = TypeVar("T")

TIER_KINDS: list[type[Tier]] = [RecallTier, ArchivalTier, FactTier, EntityGraphTier]


def register_tier(kind: type[Tier]) -> type[Tier]:
    """Add a tier kind for every agent opened from now on (usable as a class decorator)."""
    if kind not in TIER_KINDS:
        TIER_KINDS.append(kind)
    return kind


def delete_tiers(db: Database, agent_id: str) -> None:
    """Remove everything every tier holds for an agent."""
    for kind in TIER_KINDS:
        kind.delete_all(db, agent_id)


class Tiers:
    """One agent's tiers, built lazily around one embedder that is resolved on first use, and their lifecycle."""

    def __init__(self, db: Database, agent_id: str, embedder_spec: str, **links: Any) -> None:
        """`links` are the rest of the tiers' `TierContext` (writable, guard, settings, models, prompts...)."""
        self.embedder_spec = embedder_spec
        self._embedder: Embedder | None = None
        ctx = TierContext(db=db, agent_id=agent_id, embedder=self.embedder, rankers=self.rankers, **links)
        self._tiers = [kind(ctx) for kind in TIER_KINDS]

    def rankers(self) -> list[Tier]:
        """The tiers that rank messages for recall search (their `ranked_messages` is their own)."""
        return [t for t in self._tiers if type(t).ranked_messages is not Tier.ranked_messages]

    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = resolve_embedder(self.embedder_spec)
        return self._embedder

    def __iter__(self) -> Iterator[Tier]:
        return iter(self._tiers)

    def get(self, kind: type[T]) -> T:
        """The tier of this kind; a ToolError when the agent has none."""
        for tier in self._tiers:
            if isinstance(tier, kind):
                return tier
        raise ToolError(f"this agent has no {getattr(kind, 'name', kind.__name__)} memory.")

    def table_names(self) -> list[str]:
        return [name for tier in self._tiers for name in tier.table_names(tier.ctx.agent_id)]

    def stored_tables(self) -> dict[str, str]:
        """Every tier's tables for this agent, each with what it holds (see `Tier.stored_tables`)."""
        return {name: what for tier in self._tiers for name, what in tier.stored_tables().items()}

    def tools(self) -> list[Tool]:
        return [t for tier in self._tiers for t in tier.tools()]

    def metadata(self, stats: MemoryStats) -> list[str]:
        """Each tier's lines for the prompt; a tier whose storage cannot be read says so instead of failing the turn."""
        lines = []
        for tier in self._tiers:
            try:
                lines.extend(tier.metadata(stats))
            except StorageError as exc:
                lines.append(f"{tier.name.capitalize()} memory cannot be read right now: {exc}")
        return lines

    def after_step(self, messages: Sequence[Message]) -> dict[str, Rows]:
        rows: dict[str, Rows] = {}
        for tier in self._tiers:
            rows.update(tier.after_step(messages))
        return rows

    def saved(self, message_ids: Sequence[str]) -> None:
        for tier in self._tiers:
            tier.saved(message_ids)

    def recover(self) -> None:
        for tier in self._tiers:
            tier.recover()

    def flush(self) -> None:
        for tier in self._tiers:
            tier.flush()

    def discard(self, message_ids: Sequence[str]) -> None:
        for tier in self._tiers:
            tier.discard(message_ids)

    def opened(self, committed: int) -> None:
        """The agent was opened to talk with `committed` messages saved."""
        for tier in self._tiers:
            tier.opened(committed)

    def turn_ended(self, committed: int) -> list[Event]:
        """A turn ended with `committed` messages saved; the events the tiers yield at its end."""
        return [event for tier in self._tiers for event in tier.turn_ended(committed)]

    def idle(self) -> list[Event]:
        """Each tier's news between turns that it keeps itself (background news goes through `ctx.tell`)."""
        return [event for tier in self._tiers for event in tier.idle()]

    def close(self) -> None:
        """Stop every tier's background work (before the agent closes, or its storage changes under them)."""
        for tier in self._tiers:
            tier.close()

    def rewind(self, to: datetime) -> dict[str, int]:
        """Each tier's own items stored after `to`, taken back; how many, by tier."""
        return {tier.name: tier.rewind(to) for tier in self._tiers}
