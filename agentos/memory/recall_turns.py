"""Recall's turn order, kept between searches for the speakers, neighbours and cross paths: read whole at the first
search that needs it, then extended by the writer with each committed step, and caught up by a reader."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from agentos.messages import Message
from agentos.retrieval.turn_context import TurnOrder, turns_after
from agentos.storage.filters import quote
from agentos.storage.records import embed_text

Turn = tuple[str, str, datetime, str | None]  # id, role, created_at, name


class RecallTurns:
    """One agent's searchable turns in order, and those of a step not committed yet."""

    def __init__(self, db: Any, agent_id: str, writable: bool) -> None:
        self.db, self.writable = db, writable
        self.agent_clause = f"agent_id = {quote(agent_id)}"
        self._turns: TurnOrder | None = None
        self._version: int | None = None  # (a reader) the messages table's version they were read at
        self._unsaved: dict[str, Turn] = {}  # in a step not committed yet

    def step(self, messages: Sequence[Message]) -> None:
        """A step's searchable turns, to join the order once committed."""
        self._unsaved.update((m.id, (m.id, m.role, m.created_at, m.name)) for m in messages if embed_text(m))

    def saved(self, message_ids: Sequence[str]) -> None:
        """The step's turns join the order once committed (a failed commit is retried with the same ids)."""
        turns = [self._unsaved.pop(key) for key in message_ids if key in self._unsaved]
        if self._turns is not None:
            self._turns.extend(turns)

    def forget(self) -> None:
        """Read the order again at the next search: discarded turns' seqs may be used again."""
        self._turns, self._unsaved = None, {}

    def order(self, messages: Any) -> TurnOrder:
        """The turn order, through `messages` (the async handle): read whole the first time; a reader catches up when
        the messages table has changed, reading it whole again when turns were taken back (a rewind in the writer:
        their seqs are used again)."""
        reads = self.db.reads
        turns = self._turns
        if turns is None:
            turns = TurnOrder(reads.gather(turns_after(messages, self.agent_clause, -1))[0])
            self._version = None if self.writable else self.db.table("messages").version
        elif not self.writable:
            table = self.db.table("messages")
            version = table.version
            if version != self._version:
                turns.catch_up(reads.gather(turns_after(messages, self.agent_clause, turns.last_seq))[0])
                if len(turns) != table.count_rows(f"{self.agent_clause} AND search_text IS NOT NULL"):
                    turns = TurnOrder(reads.gather(turns_after(messages, self.agent_clause, -1))[0])
                self._version = version
        self._turns = turns
        return turns
