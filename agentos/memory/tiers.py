"""The searchable memory tiers of one agent: its embedder, recall and archival, opened lazily."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable, Sequence

from agentos.memory.archival import Archival, archival_table_name
from agentos.memory.embedders import Embedder, resolve_embedder
from agentos.memory.recall import Recall, vectors_table_name
from agentos.messages import Message

if TYPE_CHECKING:
    from agentos.agent.agent import Agent

log = logging.getLogger(__name__)


class MemoryTiers:
    """Recall and archival for one agent; the embedder comes from its settings."""

    def __init__(self, agent: "Agent", embedder: Embedder | None = None) -> None:
        self.agent = agent
        self._embedder = embedder
        self._recall: Recall | None = None
        self._archival: Archival | None = None
        self._unembedded: list[Message] = []
        self.last_error: str | None = None
        stored = agent.store.db.count_rows(archival_table_name(agent.id))
        if stored is not None:
            agent.state.archival_count = stored

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = resolve_embedder(self.agent.state.settings.embedder)
        return self._embedder

    @property
    def recall(self) -> Recall:
        if self._recall is None:
            store = self.agent.store
            self._recall = Recall(store.db, self.agent.id, self.embedder, unwritten=store.unwritten)
        return self._recall

    @property
    def archival(self) -> Archival:
        if self._archival is None:
            touched: Callable[[str], None] = self.agent.store._maintenance.touched
            self._archival = Archival(self.agent.store.db, self.agent.id, self.embedder, on_write=touched)
        return self._archival

    def refresh_archival_count(self) -> int:
        """Set the count the model sees from the table itself (never stale)."""
        self.agent.state.archival_count = self.archival.count()
        return self.agent.state.archival_count

    def commit_extra(self, pending: Sequence[tuple[int, Message]]) -> dict[str, Any]:
        """Vector rows to write with a step's messages; an embedder failure defers them, never fails the step."""
        if self.agent.state.settings.embedder in ("none", "", None):
            return {}
        todo = self._unembedded + [m for _, m in pending]
        try:
            _ = self.recall.vectors  # open and check before embedding
            rows = self.recall.vector_rows(todo)
        except Exception as exc:  # noqa: BLE001 - recall vectors can be rebuilt with `agentos reindex`
            self._unembedded = todo[-1000:]
            self.last_error = str(exc)
            log.warning("recall vectors deferred: %s", exc)
            return {}
        self._unembedded = []
        return {vectors_table_name(self.agent.id): rows} if rows is not None else {}
