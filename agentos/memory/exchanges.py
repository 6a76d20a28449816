"""Exchanges: every searchable turn indexed together with the turn before it, for recall's "exchange" search path.

A question's words are often in the turn that asked about something and the answer in the reply to it ("How was
the semester abroad in Ireland?" then "Loved it, Galway has such great music"). BM25 over single turns ranks the
asking turn, which holds only the question's words; over exchanges, the reply's exchange holds both, and a story
told across two turns matches as a whole. Each exchange is credited to its later turn.

Recall owns the table `recall_exchanges_<agent>`: one row per searchable turn, written with each step beside the
messages and discarded with them. When a writer opens the agent, it makes sure that the table holds a row for every
stored turn, and builds it from the messages when not (an agent older than the table, one imported without it, or a
step whose exchanges could not be made); `agentos reindex` rebuilds it too. A search that cannot read the table
leaves the path out.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import pyarrow as pa

from agentos.errors import StorageError
from agentos.messages import Message
from agentos.retrieval.windows import exchange_text
from agentos.storage.failures import storage_errors
from agentos.storage.filters import quote
from agentos.storage.records import search_text
from agentos.storage.rewrites import delete_ids, replace_table
from agentos.storage.schemas import RECALL_EXCHANGES_SCHEMA

log = logging.getLogger(__name__)

EXCHANGE_TURNS = 2  # a turn and the one before it (three turns ranked about the same on LoCoMo, in a larger index)
INDEXES = {"text": "fts", "id": "btree"}
_READ_BATCH = 10_000  # messages read at a time when the table is built

Turn = tuple[str, str, datetime, str]  # id, role, created_at, search text


def exchanges_table_name(agent_id: str) -> str:
    return f"recall_exchanges_{agent_id}"


def exchange_rows(earlier: Sequence[str], turns: Sequence[Turn]) -> tuple[list[dict[str, Any]], list[str]]:
    """The rows of `turns` (in conversation order) that follow turns whose search texts are `earlier`, and the
    texts the turns after them follow (a row's text: retrieval.windows.exchange_text)."""
    keep = EXCHANGE_TURNS - 1
    texts = list(earlier)[len(earlier) - keep:] if keep else []
    rows = []
    for key, role, created_at, text in turns:
        rows.append({"id": key, "role": role, "created_at": created_at, "text": exchange_text([*texts, text])})
        texts = [*texts, text][len(texts) + 1 - keep:] if keep else []
    return rows, texts


class Exchanges:
    """One agent's exchanges table, and the turns that the next step's first turn follows."""

    def __init__(self, db: Any, agent_id: str, writable: bool, check_writable: Callable[[str], None],
                 wrote: Callable[[str], None]) -> None:
        self.db = db
        self.agent_id = agent_id
        self.name = exchanges_table_name(agent_id)
        self.writable = writable
        self._check_writable = check_writable
        self._wrote = wrote
        self._earlier: list[str] | None = None  # the last turns' texts (None: read them at the next step)
        self._exists: bool | None = None  # (a writer) whether the table exists, once known

    @property
    def _turns_clause(self) -> str:
        return f"agent_id = {quote(self.agent_id)} AND search_text IS NOT NULL"

    def step_rows(self, messages: Sequence[Message]) -> pa.Table | None:
        """Rows for a step's searchable messages (None when it has none); they follow the turns saved before."""
        turns = [(m.id, m.role, m.created_at, text) for m in messages if (text := search_text(m))]
        if not turns:
            return None
        self.db.table(self.name, RECALL_EXCHANGES_SCHEMA, INDEXES)  # created, with its indexes, before the step
        self._exists = True
        earlier = self._earlier if self._earlier is not None else self._last_texts()
        rows, after = exchange_rows(earlier, turns)
        data = pa.Table.from_pylist(rows, schema=RECALL_EXCHANGES_SCHEMA)
        self._earlier = after
        return data

    def lost(self) -> None:
        """A step's exchanges could not be made: the turns after it read what they follow again (the table is made
        whole when the agent is next opened)."""
        self._earlier = None

    def _last_texts(self) -> list[str]:
        """The search texts of the agent's last stored turns, earliest first ([] when it cannot read them: that step's
        first exchange is then its turn alone, and search still finds it)."""
        keep = EXCHANGE_TURNS - 1
        if not keep:
            return []
        try:
            with storage_errors("read recall memory"):
                messages = self.db.table("messages")
                seqs = messages.search().where(self._turns_clause).select(["seq"]).limit(None).to_arrow()
                last = sorted(seqs.column("seq").to_pylist())[-keep:]
                if not last:
                    return []
                found = messages.search().where(f"{self._turns_clause} AND seq IN ({', '.join(map(str, last))})")
                rows = found.select(["seq", "search_text"]).limit(len(last)).to_list()
        except StorageError as exc:
            log.warning("the turn before a step could not be read for its exchange: %s", exc)
            return []
        return [r["search_text"] for r in sorted(rows, key=lambda r: r["seq"])]

    def discard(self, message_ids: Sequence[str]) -> None:
        """Remove the exchanges of messages taken back; the next step reads the turns it follows again."""
        self._earlier = None
        delete_ids(self.db, self.name, message_ids, "repair recall exchanges")

    def rebuild(self, progress: Callable[[str, int, int], None]) -> int:
        """Build the table again from every stored turn of the agent; how many turns."""
        self._check_writable("rebuild recall exchanges")
        with storage_errors("read recall memory"):
            found = self.db.table("messages").search().where(self._turns_clause).select(
                ["id", "seq", "role", "created_at", "search_text"]).limit(None).to_arrow().sort_by("seq")
        parts: list[pa.Table] = []
        earlier: list[str] = []
        total = found.num_rows
        for start in range(0, total, _READ_BATCH):
            batch = found.slice(start, _READ_BATCH)
            turns = list(zip(*(batch.column(c).to_pylist() for c in ("id", "role", "created_at", "search_text"))))
            rows, earlier = exchange_rows(earlier, turns)
            parts.append(pa.Table.from_pylist(rows, schema=RECALL_EXCHANGES_SCHEMA))
            progress("recall exchanges", min(start + _READ_BATCH, total), total)
        data = pa.concat_tables(parts) if parts else RECALL_EXCHANGES_SCHEMA.empty_table()
        replace_table(self.db, self.name, RECALL_EXCHANGES_SCHEMA, data)
        self.db.table(self.name, RECALL_EXCHANGES_SCHEMA, INDEXES)  # its indexes, on the new table
        self._wrote(self.name)
        self._earlier, self._exists = earlier, True
        if not total:
            progress("recall exchanges", 0, 0)
        return total

    def make_whole(self) -> None:
        """(A writer, as the agent is opened) build the table from the messages unless it holds one row per stored
        turn; a failure is logged, and the agent opens and searches without the path until the next open."""
        try:
            with storage_errors("count recall exchanges"):
                held = self.db.count_rows(self.name)
                turns = self.db.table("messages").count_rows(self._turns_clause)
            self._exists = held is not None
            if held != turns:
                log.info("building recall exchanges for %s turns", f"{turns:,}")
                self.rebuild(lambda what, done, total: None)
        except Exception as exc:  # noqa: BLE001 - the agent opens, and searches without the path until the next open
            log.warning("recall exchanges not built: %s", exc)

    def searchable(self) -> bool:
        """Whether the table exists to be searched (asked of the database by a reader, whose writer may build it)."""
        if self.writable and self._exists is not None:
            return self._exists
        exists = self.db.exists(self.name)
        if self.writable:
            self._exists = exists
        return exists
