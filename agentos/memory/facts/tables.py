"""The fact tier's two tables and how they are read: every version of every fact, and the change log.

`facts_<agent>` holds every version of every fact, with its validity interval, its supersedes links and the
messages it came from; `fact_changes_<agent>` logs every change, and how far consolidation got. This class owns
the tables and the caches of what was read; writing and searching build on it (`writes`, `search`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from agentos.embedders.base import Embedder
from agentos.errors import FactError
from agentos.memory.facts.rows import PROGRESS_KINDS, Fact, FactChange, fact_changes_table_name, facts_table_name
from agentos.memory.tables import open_embedded
from agentos.memory.tier import TierContext
from agentos.messages import Message, utc_now
from agentos.retrieval.search import timestamp_literal
from agentos.storage.failures import storage_errors
from agentos.storage.filters import quote
from agentos.storage.records import row_message
from agentos.storage.schemas import FACT_CHANGES_SCHEMA, facts_schema

COLUMNS = ["id", "text", "subject", "category", "confidence", "valid_from", "valid_to", "recorded_at", "status",
           "supersedes", "superseded_by", "source_ids", "change_id", "ended_by", "last_change", "retrieved_count",
           "last_retrieved_at"]
_INDEXES = {"text": "fts", "id": "btree", "content_hash": "btree"}
_CHANGE_INDEXES = {"id": "btree"}
CURRENT = "status = 'current'"


def believed_at(moment: datetime) -> str:
    """The filter for facts held true at `moment` (undone ones never were)."""
    at = timestamp_literal(moment)
    return f"valid_from <= {at} AND (valid_to IS NULL OR valid_to > {at}) AND status != 'undone'"


class FactTables:
    """One agent's fact tables, opened on first use, and reads of them (a reader re-reads the latest version)."""

    def __init__(self, ctx: TierContext) -> None:
        self.ctx = ctx
        self.table_name = facts_table_name(ctx.agent_id)
        self.changes_name = fact_changes_table_name(ctx.agent_id)
        self._table: Any = None
        self._changes: Any = None
        self._watermark: int | None = None  # cached: this tier is the only writer of its tables, under the lease
        self._skipped: list[FactChange] | None = None  # cached likewise: the skipped batches not read again
        self._current: int | None = None
        self._exists: bool | None = None  # whether the facts table exists (cached for a writer)
        self._retrieved: dict[str, datetime] = {}  # retrievals not yet written (ranking hints: flushed in batches)
        self._retrieved_counts: dict[str, int] = {}
        self._query_vectors: dict[str, list[float]] = {}  # recent query texts' vectors, oldest first
        self._prompt: tuple[int, float, list[str]] | None = None  # (budget, when, lines) of the facts in the prompt
        self._commits = 0  # commits to the facts tables since they were last compacted
        self._writes = 0  # fact writes so far: a cached read is kept only if none happened while it was made
        self._unapplied: str | None = None  # a group whose log rows are written and whose facts are not yet
        self.lock = threading.RLock()  # the consolidator's thread and the agent's own writes take turns

    @property
    def embedder(self) -> Embedder:
        return self.ctx.embedder()

    @property
    def table(self) -> Any:
        """The facts table (created on first use by a writer); None for a reader while there is none."""
        if self._table is None:
            schema = facts_schema(self.embedder.name, self.embedder.dim)
            self._table = open_embedded(self.ctx.db, self.table_name, schema, self.embedder, "fact memory",
                                        _INDEXES, create=self.ctx.writable)
        return self._table

    @property
    def changes_table(self) -> Any:
        if self._changes is None:
            if self.ctx.writable:
                self._changes = self.ctx.db.table(self.changes_name, FACT_CHANGES_SCHEMA, _CHANGE_INDEXES)
            else:
                self._changes = self.ctx.db.existing(self.changes_name)
        return self._changes

    def _reading(self) -> Any:
        """The facts table to read, or None while there is none (reading never creates it)."""
        if self._table is None:
            schema = facts_schema(self.embedder.name, self.embedder.dim)
            self._table = open_embedded(self.ctx.db, self.table_name, schema, self.embedder, "fact memory",
                                        _INDEXES, create=False)
        return self._fresh(self._table)

    def _reading_changes(self) -> Any:
        """The change log to read, or None while there is none."""
        if self._changes is None:
            self._changes = self.ctx.db.existing(self.changes_name)
        return self._fresh(self._changes)

    def _fresh(self, table: Any) -> Any:
        if table is not None and not self.ctx.writable:
            with storage_errors("read fact memory"):
                table.checkout_latest()  # a reader: the writer is another process
        return table

    def flush(self) -> None:
        """Write the retrieval counts gathered since the last flush (they rank facts; losing some costs little)."""
        if not self._retrieved or not self.ctx.writable:
            return
        with self.lock:
            counts, times = self._retrieved_counts, self._retrieved
            self._retrieved_counts, self._retrieved = {}, {}
            table = self.table
            with storage_errors("record fact retrievals"):
                self.ctx.db.check_writable(self.table_name)
                by_count: dict[int, list[str]] = {}
                for fact_id, n in counts.items():
                    by_count.setdefault(n, []).append(fact_id)
                latest = max(times.values())
                for n, ids in by_count.items():
                    where = f"id IN ({', '.join(quote(i) for i in ids)})"
                    table.update(where=where, values_sql={"retrieved_count": f"retrieved_count + {int(n)}",
                                                          "last_retrieved_at": timestamp_literal(latest)})
            self.ctx.wrote(self.table_name)

    def count_current(self) -> int:
        """Current facts; a writer counts once, then after each write (a count made while a write landed is not
        kept)."""
        if self._current is not None and self.ctx.writable:
            return self._current
        writes = self._writes
        table = self._reading()
        with storage_errors("count facts"):
            count = int(table.count_rows(CURRENT)) if table is not None else 0
        if writes == self._writes:
            self._current = count
        return count

    def _rows(self, where: str | None) -> list[Fact]:
        table = self._reading()
        if table is None:
            return []
        with storage_errors("read fact memory"):
            q = table.search().select(COLUMNS).limit(None)
            rows = (q.where(where) if where else q).to_arrow().to_pylist()
        return [Fact.of_row(r) for r in rows]

    def get(self, fact_id: str) -> Fact | None:
        found = self._rows(f"id = {quote(fact_id)}")
        return found[0] if found else None

    def require(self, fact_id: str) -> Fact:
        fact = self.get(fact_id)
        if fact is None:
            raise FactError(f"there is no fact {fact_id!r} in this agent's memory. List them with: agentos facts "
                            f"AGENT list")
        return fact

    def current_hashes(self, hashes: Sequence[str]) -> set[str]:
        """Those of `hashes` that a current fact has (exact duplicates are not stored twice)."""
        table = self._reading()
        if table is None or not hashes:
            return set()
        found: set[str] = set()
        unique = sorted(set(hashes))
        with storage_errors("read fact memory"):
            for start in range(0, len(unique), 500):
                part = ", ".join(quote(h) for h in unique[start : start + 500])
                rows = table.search().where(f"{CURRENT} AND content_hash IN ({part})").select(["content_hash"])
                found.update(rows.limit(None).to_arrow().column("content_hash").to_pylist())
        return found

    def by_ids(self, ids: Iterable[str]) -> dict[str, Fact]:
        wanted = sorted({i for i in ids if i})
        out: dict[str, Fact] = {}
        for start in range(0, len(wanted), 500):
            part = ", ".join(quote(i) for i in wanted[start : start + 500])
            out.update((f.id, f) for f in self._rows(f"id IN ({part})"))
        return out

    def listing(self, *, include_ended: bool = False, as_of: datetime | None = None,
                subject: str | None = None) -> list[Fact]:
        """Facts, newest first: the current ones, those believed at `as_of`, or every version."""
        clauses = [believed_at(as_of) if as_of else (None if include_ended else CURRENT)]
        if subject:
            clauses.append(f"subject = {quote(subject)}")
        where = " AND ".join(c for c in clauses if c) or None
        return sorted(self._rows(where), key=lambda f: (f.valid_from, f.recorded_at, f.id), reverse=True)

    def history(self, fact_id: str) -> list[Fact]:
        """Every version of a fact, oldest first: what it superseded, and what superseded it."""
        fact = self.require(fact_id)
        chain = [fact]
        seen = {fact.id}
        while chain[0].supersedes and chain[0].supersedes not in seen:
            older = self.get(chain[0].supersedes)
            if older is None:
                break
            seen.add(older.id)
            chain.insert(0, older)
        while chain[-1].superseded_by and chain[-1].superseded_by not in seen:
            newer = self.get(chain[-1].superseded_by)
            if newer is None:
                break
            seen.add(newer.id)
            chain.append(newer)
        ids = ", ".join(quote(f.id) for f in chain)
        others = [f for f in self._rows(f"supersedes IN ({ids})") if f.id not in seen]  # versions undone since
        return sorted(chain + others, key=lambda f: (f.recorded_at, f.valid_from, f.id))

    def changes(self, since: datetime | None = None, *, kinds: Sequence[str] = ()) -> list[FactChange]:
        """The change log, oldest first."""
        table = self._reading_changes()
        if table is None:
            return []
        clauses = [f"at >= {timestamp_literal(since)}"] if since else []
        if kinds:
            clauses.append(f"kind IN ({', '.join(quote(k) for k in kinds)})")
        with storage_errors("read the fact change log"):
            q = table.search().limit(None)
            rows = (q.where(" AND ".join(clauses)) if clauses else q).to_arrow().to_pylist()
        return sorted((FactChange.of_row(r) for r in rows), key=lambda c: (c.at, c.id))

    def change(self, change_id: str) -> FactChange:
        table = self._reading_changes()
        rows = [] if table is None else table.search().where(f"id = {quote(change_id)}").limit(1).to_arrow().to_pylist()
        if not rows:
            raise FactError(f"there is no change {change_id!r}. Review them with: agentos facts AGENT changes")
        return FactChange.of_row(rows[0])

    def undone(self, change_id: str) -> bool:
        table = self._reading_changes()
        if table is None:
            return False
        where = f"kind = 'undo' AND target_change = {quote(change_id)}"
        with storage_errors("read the fact change log"):
            return bool(table.count_rows(where))

    def watermark(self) -> int:
        """The seq of the last message consolidated (-1: none yet); a skipped batch read again moves it not."""
        if self._watermark is None or not self.ctx.writable:
            progress = [c for c in self.changes(kinds=PROGRESS_KINDS) if c.through_seq is not None]
            self._watermark = progress[-1].through_seq if progress and progress[-1].through_seq is not None else -1
        return self._watermark

    def skipped(self) -> list[FactChange]:
        """The skipped batches not read again since, oldest first: each a `skip` that no `retry` names."""
        if self._skipped is None or not self.ctx.writable:
            log = self.changes(kinds=("skip", "retry"))
            settled = {c.target_change for c in log if c.kind == "retry"}
            self._skipped = [c for c in log if c.kind == "skip" and c.id not in settled]
        return list(self._skipped)

    def messages_by_id(self, message_ids: Sequence[str]) -> list[tuple[int, Message]]:
        """Those of the messages still stored, as (seq, message), in order (a skipped batch read again)."""
        found: list[tuple[int, Message]] = []
        for start in range(0, len(message_ids), 500):
            ids = ", ".join(quote(i) for i in message_ids[start : start + 500])
            where = f"agent_id = {quote(self.ctx.agent_id)} AND id IN ({ids})"
            with storage_errors("read messages"):
                rows = self.ctx.db.table("messages").search().where(where).limit(None).to_arrow().to_pylist()
            found += [(int(r["seq"]), row_message(r)) for r in rows]
        return sorted(found, key=lambda pair: pair[0])

    def note_retrieved(self, ids: Iterable[str]) -> None:
        now = utc_now()
        for fact_id in ids:
            self._retrieved[fact_id] = now
            self._retrieved_counts[fact_id] = self._retrieved_counts.get(fact_id, 0) + 1

    def sources(self, facts: Sequence[Fact]) -> dict[str, dict[str, Any]]:
        """The messages facts came from, by id: role, name, content and time."""
        ids = sorted({i for f in facts for i in f.source_ids})
        if not ids:
            return {}
        out: dict[str, dict[str, Any]] = {}
        for start in range(0, len(ids), 500):
            part = ", ".join(quote(i) for i in ids[start : start + 500])
            where = f"agent_id = {quote(self.ctx.agent_id)} AND id IN ({part})"
            with storage_errors("read messages"):
                found = self.ctx.db.table("messages").search().where(where).select(
                    ["id", "role", "name", "content", "created_at"]).limit(None).to_arrow().to_pylist()
            out.update((r["id"], r) for r in found)
        return out

    def _seqs(self, message_ids: Sequence[str]) -> list[int]:
        seqs: list[int] = []
        for start in range(0, len(message_ids), 500):
            ids = ", ".join(quote(i) for i in message_ids[start : start + 500])
            where = f"agent_id = {quote(self.ctx.agent_id)} AND id IN ({ids})"
            with storage_errors("read messages"):
                rows = self.ctx.db.table("messages").search().where(where).select(["seq"]).limit(None).to_arrow()
            seqs += [int(s) for s in rows.column("seq").to_pylist()]
        return seqs
