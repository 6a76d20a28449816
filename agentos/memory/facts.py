"""Fact memory: short facts consolidated from the conversation, every version kept, each change logged.

The tier owns two tables: `facts_<agent>` (every version of every fact, with its validity interval,
its supersedes links and the messages it came from) and `fact_changes_<agent>` (the log of every
change, and how far consolidation got). A group of changes is written in one order: its log rows
first (the commit point), then the fact rows in one merge. A crash between the two is finished when
the agent is next opened for writing, from the log rows, which carry the facts they made.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import pyarrow as pa

from agentos.embedders.base import Embedder, vector_array
from agentos.errors import FactError, StorageError
from agentos.memory.fact_rows import (
    FACT_CHANGES,
    PROGRESS_KINDS,
    Fact,
    FactChange,
    effects,
    fact_changes_table_name,
    facts_table_name,
    undo_effects,
)
from agentos.memory.retention import by_retention, last_use, retention
from agentos.memory.tables import open_embedded, reembed_table
from agentos.memory.tier import MemoryStats, Progress, Tier, TierContext
from agentos.messages import new_id, utc_now
from agentos.retrieval.search import (
    MAX_CANDIDATES,
    PAGE_SIZE,
    VECTOR_CANDIDATES,
    as_utc,
    check_page,
    clean_query,
    fts_rows,
    nearest_rows,
    parse_date,
    query_vector,
    rrf,
    shorten,
    timestamp_literal,
)
from agentos.storage.db import quote, storage_errors
from agentos.storage.schemas import FACT_CHANGES_SCHEMA, facts_schema
from agentos.text import valid_text
from agentos.tokens import EstimateCounter
from agentos.tools.context import ToolContext
from agentos.tools.decorator import Tool, tool

KEYWORD_WEIGHT, VECTOR_WEIGHT, RETENTION_WEIGHT = 1.0, 0.5, 0.25  # the ranked lists fused into one fact ranking
QUERY_VECTORS_KEPT = 256
PROMPT_LINES_SECONDS = 600.0  # the facts offered in the prompt are chosen again after a write, or this often
COMPACT_EVERY_COMMITS = 16  # consolidation compacts the facts tables this often (each batch is a commit or two)
_COLUMNS = ["id", "text", "subject", "category", "confidence", "valid_from", "valid_to", "recorded_at", "status",
            "supersedes", "superseded_by", "source_ids", "change_id", "ended_by", "last_change", "retrieved_count",
            "last_retrieved_at"]
_INDEXES = {"text": "fts", "id": "btree", "content_hash": "btree"}
_CHANGE_INDEXES = {"id": "btree"}
CURRENT = "status = 'current'"


@dataclass
class FactPage:
    """One page of ranked facts, with the true total."""

    facts: list[Fact]
    total: int
    page: int
    page_size: int
    note: str | None = None


def believed_at(moment: datetime) -> str:
    """The filter for facts held true at `moment` (undone ones never were)."""
    at = timestamp_literal(moment)
    return f"valid_from <= {at} AND (valid_to IS NULL OR valid_to > {at}) AND status != 'undone'"


class FactTier(Tier):
    """One agent's facts and their change log."""

    name = "facts"

    def __init__(self, ctx: TierContext) -> None:
        super().__init__(ctx)
        self.table_name = facts_table_name(ctx.agent_id)
        self.changes_name = fact_changes_table_name(ctx.agent_id)
        self._table: Any = None
        self._changes: Any = None
        self._watermark: int | None = None  # cached: this tier is the only writer of its tables, under the lease
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

    @classmethod
    def table_names(cls, agent_id: str) -> list[str]:
        return [facts_table_name(agent_id), fact_changes_table_name(agent_id)]

    @property
    def embedder(self) -> Embedder:
        return self.ctx.embedder()

    @property
    def settings(self) -> Any:
        return getattr(self.ctx.settings(), "facts", None) if self.ctx.settings else None

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

    @property
    def in_use(self) -> bool:
        """Whether this agent consolidates facts, or has any."""
        settings = self.settings
        if settings is not None and settings.mode != "off":
            return True
        if self._exists is None or not self.ctx.writable:  # only this writer creates the table while it holds the agent
            self._exists = self.ctx.db.exists(self.table_name)
        return self._exists

    # -- the tier interface ----------------------------------------------------------------------

    def tools(self) -> list[Tool]:
        return [fact_search] if self.in_use else []

    def metadata(self, stats: MemoryStats) -> list[str]:
        if not self.in_use:
            return []
        lines = [f"Fact memory: {self.count_current():,} current facts, consolidated in the background from the "
                 f"conversation; find them with fact_search."]
        budget = getattr(self.settings, "prompt_tokens", 0) or 0
        if budget > 0:
            lines += self.prompt_lines(budget)
        return lines

    def prompt_lines(self, budget: int) -> list[str]:
        """The most retained current facts about the user, as many as fit in `budget` tokens; chosen again after a
        write, or every PROMPT_LINES_SECONDS (a writer keeps them: it is the only one who changes them)."""
        cached = self._prompt
        if (self.ctx.writable and cached is not None and cached[0] == budget
                and time.monotonic() - cached[1] < PROMPT_LINES_SECONDS):
            return cached[2]
        writes = self._writes
        lines = self._choose_prompt_lines(budget)
        if writes == self._writes:  # none landed while they were chosen
            self._prompt = (budget, time.monotonic(), lines)
        return lines

    def _choose_prompt_lines(self, budget: int) -> list[str]:
        table = self._reading()
        if table is None:
            return []
        with storage_errors("read fact memory"):
            rows = table.search().where(f"{CURRENT} AND subject = 'user'").select(_COLUMNS).limit(None).to_arrow()
        facts = {f.id: f for f in (Fact.of_row(r) for r in rows.to_pylist())}
        head = "Facts about the user (from fact memory; newest first where they conflict):"
        counter = EstimateCounter()
        lines, used = [], counter.count(head)
        for fact_id in by_retention(list(facts.values()), utc_now()):
            line = f"- {facts[fact_id].text} (since {facts[fact_id].valid_from:%Y-%m-%d})"
            cost = counter.count(line)
            if used + cost > budget:
                break
            lines.append(line)
            used += cost
        return [head, *lines] if lines else []

    def discard(self, message_ids: Sequence[str]) -> None:
        """Messages taken back (a rewind, or a step that never landed): undo what consolidation made of them, and
        consolidate again from before the first of them."""
        if not message_ids or self.ctx.db.count_rows(self.changes_name) is None:
            return
        gone = set(message_ids)
        seqs = self._seqs(message_ids)
        with self.lock:
            made = [c for c in self.changes() if c.by == "consolidator" and c.kind in FACT_CHANGES
                    and gone.intersection(c.message_ids) and not self.undone(c.id)]
            group = new_id("grp")
            undos = [FactChange(kind="undo", by="consolidator", group_id=group, target_change=c.id,
                                reason="its messages were taken back") for c in reversed(made)]
            watermark = self.watermark()
            back_to = min(seqs) - 1 if seqs else watermark
            rows: list[FactChange] = [*undos]
            if back_to < watermark:
                rows.append(FactChange(kind="rewind", by="consolidator", group_id=group, through_seq=back_to,
                                       reason=f"{len(gone)} message(s) taken back"))
            if rows:
                self.commit(rows, tolerate_conflicts=True)

    def _seqs(self, message_ids: Sequence[str]) -> list[int]:
        seqs: list[int] = []
        for start in range(0, len(message_ids), 500):
            ids = ", ".join(quote(i) for i in message_ids[start : start + 500])
            where = f"agent_id = {quote(self.ctx.agent_id)} AND id IN ({ids})"
            with storage_errors("read messages"):
                rows = self.ctx.db.table("messages").search().where(where).select(["seq"]).limit(None).to_arrow()
            seqs += [int(s) for s in rows.column("seq").to_pylist()]
        return seqs

    def reindex(self, embedder: Embedder, progress: Progress) -> int:
        """Re-embed every version of every fact with `embedder`, in a new table that replaces the old one."""
        self._table = None
        keep = [f.name for f in facts_schema("none", 0) if f.name != "embedder"]
        return reembed_table(self.ctx.db, self.table_name, facts_schema, keep, embedder, "facts", progress)

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

    # -- reading -------------------------------------------------------------------------------

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
            q = table.search().select(_COLUMNS).limit(None)
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
        """The seq of the last message consolidated (-1: none yet)."""
        if self._watermark is None or not self.ctx.writable:
            progress = self.changes(kinds=PROGRESS_KINDS)
            self._watermark = progress[-1].through_seq if progress and progress[-1].through_seq is not None else -1
        return self._watermark

    def search(self, query: str, *, as_of: datetime | None = None, include_ended: bool = False,
               subject: str | None = None, page: int = 0, page_size: int = PAGE_SIZE,
               record: bool = True) -> FactPage:
        """Facts ranked by keywords, meaning and retention, fused by reciprocal rank: current ones, or those
        believed at `as_of`, or every version. An empty query lists the newest."""
        query = clean_query(query)
        clauses = [believed_at(as_of) if as_of else ("status != 'undone'" if include_ended else CURRENT)]
        if subject:
            clauses.append(f"subject = {quote(subject)}")
        where = " AND ".join(clauses)
        table = self._reading()
        if table is None:
            return FactPage([], 0, page, page_size)
        if not query:
            listed = self.listing(include_ended=include_ended, as_of=as_of, subject=subject)
            shown = listed[page * page_size : (page + 1) * page_size]
            return FactPage(shown, len(listed), page, page_size)
        with storage_errors("search fact memory"):
            vector, note = self._query_vector(query)
            reads = self.ctx.db.reads
            rows, near = reads.gather(*self._candidate_reads(query, vector, where))
        ranked = self._ranked(rows, near)
        shown = [f for f, _ in ranked[page * page_size : (page + 1) * page_size]]
        if record:
            self.note_retrieved(f.id for f in shown)
        return FactPage(shown, len(ranked), page, page_size, note=note)

    def ranked_messages(self, query: str, limit: int) -> list[str] | None:
        """The messages the best current facts for `query` came from, in the facts' order: fact memory joins recall
        search as its `facts` path. Not counted as retrievals (what the model sees are the messages)."""
        if not (query or "").strip():
            return None
        facts = self.search(query, page_size=limit, record=False).facts
        return list(dict.fromkeys(key for fact in facts for key in fact.source_ids))[:limit]

    def _candidate_reads(self, query: str, vector: list[float] | None, where: str) -> list[Any]:
        """The keyword read and (with a vector) the nearest-neighbour read of one query, to gather at once."""
        handle = self.ctx.db.reads.handle(self.table_name)
        return [fts_rows(handle, query, "text", where, MAX_CANDIDATES, _COLUMNS[1:]),
                nearest_rows(handle, vector, where, VECTOR_CANDIDATES, _COLUMNS[1:]) if vector else None]

    @staticmethod
    def _ranked(rows: list[dict[str, Any]], near: list[dict[str, Any]] | None) -> list[tuple[Fact, float]]:
        """Keyword matches, nearest vectors and retention fused by weighted reciprocal rank, best first; equal
        matches within a list are ordered by retention (it breaks ties, then ranks as a list of its own)."""
        known = {r["id"]: Fact.of_row(r) for r in rows + (near or [])}
        now = utc_now()
        kept = {key: retention(fact, now) for key, fact in known.items()}
        rows = sorted(rows, key=lambda r: (-round(r["_score"], 6), -kept[r["id"]]))
        lists: list[list[str]] = [[r["id"] for r in rows]]
        weights = [KEYWORD_WEIGHT]
        if near is not None:
            near = sorted(near, key=lambda r: (round(r["_distance"], 6), -kept[r["id"]]))
            lists.append([r["id"] for r in near])
            weights.append(VECTOR_WEIGHT)
        lists.append(by_retention(list(known.values()), now))
        weights.append(RETENTION_WEIGHT)
        return [(known[key], score) for key, score in rrf(lists, weights)]

    def _query_vector(self, query: str) -> tuple[list[float] | None, str | None]:
        """The query's vector (None without an embedder), kept a while: a fact written next reuses it."""
        if not self.embedder.enabled:
            return None, None
        if query in self._query_vectors:
            return list(self._query_vectors[query]), None
        vector, note = query_vector(self.embedder, query)
        if vector is not None:
            self._query_vectors[query] = vector
            while len(self._query_vectors) > QUERY_VECTORS_KEPT:
                self._query_vectors.pop(next(iter(self._query_vectors)))
        return vector, note

    def similar(self, texts: Sequence[str], k: int) -> list[list[Fact]]:
        """For each text, the `k` current facts most like it (what consolidation compares new facts with); the
        searches of all the texts run at once."""
        queries = [clean_query(t) for t in texts]
        if self._reading() is None or not any(queries):
            return [[] for _ in texts]
        with storage_errors("search fact memory"):
            vectors = [self._query_vector(q)[0] if q else None for q in queries]
            reads = [r for q, v in zip(queries, vectors) for r in (self._candidate_reads(q, v, CURRENT) if q
                                                                    else [None, None])]
            found = self.ctx.db.reads.gather(*reads)
        out: list[list[Fact]] = []
        for i in range(len(queries)):
            rows, near = found[2 * i], found[2 * i + 1]
            out.append([f for f, _ in self._ranked(rows, near)[:k]] if rows is not None else [])
        return out

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

    # -- writing -------------------------------------------------------------------------------

    def commit(self, changes: Sequence[FactChange], *, tolerate_conflicts: bool = False) -> list[FactChange]:
        """Log and apply a group of changes (one commit each for the log and the facts); the changes made.

        A change that cannot be made raises FactError before anything is written, or, with
        `tolerate_conflicts`, is left out."""
        self.ctx.check_writable("change fact memory")
        with self.lock:
            self._finish_unapplied()
            touched = [c.old_fact_id for c in changes] + [c.fact_id for c in changes]
            targets = {c.target_change: self.change(c.target_change) for c in changes if c.target_change}
            touched += [i for t in targets.values() for i in (t.fact_id, t.old_fact_id)]
            known = self.by_ids(i for i in touched if i)
            written: dict[str, Fact] = {}
            made: list[FactChange] = []
            for change in changes:
                try:
                    if change.kind == "undo":
                        rows = undo_effects(targets[change.target_change or ""], change.id, known)
                    elif change.kind in FACT_CHANGES:
                        rows = effects(change, known)
                    else:
                        rows = []
                except FactError:
                    if not tolerate_conflicts:
                        raise
                    continue
                for fact in rows:
                    known[fact.id] = written[fact.id] = fact
                made.append(change)
            if not made:
                return []
            self._write(made, list(written.values()))
        return made

    def _write(self, changes: list[FactChange], facts: list[Fact]) -> None:
        """The log rows (the commit point), then the facts. Everything that can fail before the commit point
        (embedding, above all) is done first; a failure after it leaves the group to finish before the next one."""
        data = self._fact_rows(facts) if facts else None
        db = self.ctx.db
        with storage_errors("write fact memory"):
            db.check_writable(self.changes_name)
            self.changes_table.add(pa.Table.from_pylist([c.row() for c in changes], schema=FACT_CHANGES_SCHEMA))
        self.ctx.wrote(self.changes_name)
        progress = [c for c in changes if c.kind in PROGRESS_KINDS and c.through_seq is not None]
        if progress:
            self._watermark = progress[-1].through_seq
        if data is not None:
            self._unapplied = changes[0].group_id
            self._apply(data)
            self._unapplied = None

    def _finish_unapplied(self) -> None:
        """Apply the facts of a group whose log rows are written but whose facts failed to be (a storage error)."""
        if self._unapplied is not None:
            self.repair()
            self._unapplied = None

    def _fact_rows(self, facts: list[Fact]) -> pa.Table:
        """The rows of `facts`, whole, with their vectors, in the table's schema."""
        table = self.table
        schema = table.schema
        rows = [f.row(self.embedder.name) for f in facts]
        data = pa.Table.from_pylist(rows, schema=pa.schema([schema.field(n) for n in schema.names if n != "vector"]))
        if self.embedder.enabled:
            data = data.append_column(schema.field("vector"), vector_array(self._vectors(facts)))
        return data.select(schema.names).cast(schema)

    def _apply(self, data: pa.Table) -> None:
        """Write fact rows whole, new or changed, in one merge (doing it twice changes nothing)."""
        table = self.table
        with storage_errors("write fact memory"):
            self.ctx.db.check_writable(self.table_name)
            table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(data)
        self._current, self._exists, self._prompt = None, True, None
        self._writes += 1
        self._commits += 1
        self.ctx.wrote(self.table_name)

    def _vectors(self, facts: list[Fact]) -> np.ndarray:
        """An (n, dim) array of the facts' vectors: kept for a fact already stored, reused from the search that
        compared it (consolidation searches with each candidate's text), else embedded."""
        stored: dict[str, Any] = {}
        ids = [f.id for f in facts]
        if self._reading() is not None and ids:
            where = f"id IN ({', '.join(quote(i) for i in ids)})"
            for r in self.table.search().where(where).select(["id", "vector"]).limit(None).to_arrow().to_pylist():
                stored[r["id"]] = r["vector"]
        reuse = self._query_vectors if self.embedder.symmetric else {}  # a query vector is a document's only then
        fresh = sorted({f.text for f in facts if f.id not in stored and f.text not in reuse})
        embedded = dict(zip(fresh, self.embedder.embed_documents(fresh))) if fresh else {}
        rows = [stored[f.id] if f.id in stored else embedded.get(f.text, self._query_vectors.get(f.text))
                for f in facts]
        return np.asarray(rows, dtype=np.float32).reshape(len(facts), self.embedder.dim)

    def compact_if_due(self) -> None:
        """Compact the facts tables after every COMPACT_EVERY_COMMITS commits (consolidation's thread calls this:
        searches of a table of many small fragments, whose newest rows no index covers, slow it down)."""
        if self._commits < COMPACT_EVERY_COMMITS:
            return
        self._commits = 0
        for name in self.table_names(self.ctx.agent_id):
            try:
                self.ctx.db.optimize(name)
            except Exception:  # noqa: BLE001 - background maintenance's own runs retry it
                return

    def recover(self) -> None:
        self.repair()

    def repair(self) -> int:
        """Apply the last group of logged changes again if a crash left its facts unwritten; how many facts."""
        if self.ctx.db.count_rows(self.changes_name) is None:
            return 0
        log = self.changes()
        if not log:
            return 0
        group = [c for c in log if c.group_id == log[-1].group_id]
        expected: dict[str, str] = {}
        for change in group:
            for fact_id in (change.fact_id, change.old_fact_id):
                if fact_id and change.kind in FACT_CHANGES:
                    expected[fact_id] = change.id
            if change.kind == "undo" and change.target_change:
                target = self.change(change.target_change)
                for fact_id in (target.fact_id, target.old_fact_id):
                    if fact_id:
                        expected[fact_id] = change.id
        found = self.by_ids(expected)
        if all(fact_id in found and found[fact_id].last_change == change for fact_id, change in expected.items()):
            return 0
        known = dict(found)
        written: dict[str, Fact] = {}
        for change in group:
            try:
                if change.kind == "undo":
                    rows = undo_effects(self.change(change.target_change or ""), change.id, known)
                elif change.kind in FACT_CHANGES:
                    rows = effects(change, known)
                else:
                    continue
            except FactError:
                continue  # already applied (a later part of the group was written)
            for fact in rows:
                known[fact.id] = written[fact.id] = fact
        if written:
            self._apply(self._fact_rows(list(written.values())))
        return len(written)

    # -- people's decisions --------------------------------------------------------------------

    def correct(self, fact_id: str, text: str, reason: str = "") -> FactChange:
        """The user's correction: a new version of the fact, which supersedes the old one."""
        text = valid_text(" ".join((text or "").split()))
        reason = valid_text(reason)
        if not text:
            raise FactError("the corrected text is empty; give the fact as it should read.")
        old = self.require(fact_id)
        if old.text == text:
            raise FactError(f"fact {fact_id} already reads {text!r}.")
        now = utc_now()
        new = Fact(text=text, subject=old.subject, category=old.category, confidence=1.0, valid_from=now,
                   recorded_at=now, supersedes=old.id, source_ids=old.source_ids)
        change = FactChange(kind="correct", by="user", group_id=new_id("grp"), fact=new, old_fact_id=old.id,
                            reason=reason or "corrected by the user")
        return self.commit([change])[0]

    def retract(self, fact_id: str, reason: str = "") -> FactChange:
        """The user's retraction: the fact no longer holds (kept, and shown as retracted)."""
        self.require(fact_id)
        change = FactChange(kind="retract", by="user", group_id=new_id("grp"), old_fact_id=fact_id,
                            reason=valid_text(reason) or "retracted by the user")
        return self.commit([change])[0]

    def undo(self, change_id: str, by: str = "user") -> FactChange:
        """Reverse one change: what it made is marked undone, what it ended holds again."""
        target = self.change(change_id)
        if self.undone(change_id):
            raise FactError(f"change {change_id} was already undone.")
        change = FactChange(kind="undo", by=by, group_id=new_id("grp"), target_change=change_id,
                            reason=f"undo of {target.kind} {change_id}")
        return self.commit([change])[0]

    def prunable(self, *, older_than: datetime | None, min_confidence: float | None) -> list[Fact]:
        """Current facts last used before `older_than` and/or less confident than `min_confidence`."""
        if older_than is None and min_confidence is None:
            raise FactError("say what to prune: --older-than DATE and/or --min-confidence N.")
        out = []
        for fact in self.listing():
            if older_than is not None and last_use(fact) >= older_than:
                continue
            if min_confidence is not None and fact.confidence >= min_confidence:
                continue
            out.append(fact)
        return out

    def prune(self, facts: Sequence[Fact], reason: str) -> list[FactChange]:
        group = new_id("grp")
        return self.commit([FactChange(kind="prune", by="user", group_id=group, old_fact_id=f.id, reason=reason)
                            for f in facts])


def describe(fact: Fact, sources: dict[str, dict[str, Any]] | None = None) -> str:
    """One line about a fact for the model: its text, dates, status and where it came from."""
    since = f"since {fact.valid_from:%Y-%m-%d}"
    until = f", until {fact.valid_to:%Y-%m-%d} ({fact.status})" if fact.valid_to else ""
    origin = ""
    first = next((sources[i] for i in fact.source_ids if sources and i in sources), None)
    if first is not None:
        who = first.get("name") or first["role"]
        origin = f"; from {who} on {first['created_at']:%Y-%m-%d}: \"{shorten(first['content'] or '', 160)}\""
    elif fact.source_ids:
        origin = f"; from {len(fact.source_ids)} message(s)"
    return f"- [{fact.id}] {fact.text} ({fact.subject}, {fact.category}; {since}{until}{origin})"


def _as_of(value: str | None) -> datetime | None:
    moment = parse_date(value, "as_of", end=True)
    return as_utc(moment) if moment else None


@tool
def fact_search(query: str, ctx: ToolContext, as_of: str | None = None, page: int = 0) -> str:
    """Search the facts consolidated from your conversations: current facts, with their dates and sources.

    Args:
        query: What to look for, e.g. "where does the user work"; leave empty to list the newest facts.
        as_of: Show what was believed on this date instead (YYYY-MM-DD), including facts that changed since.
        page: Which page of results to show, starting at 0.
    """
    facts = ctx.memory.tier(FactTier)
    moment = _as_of(as_of)
    result = facts.search(query, as_of=moment, page=check_page(page))
    what = f"facts believed on {moment:%Y-%m-%d}" if moment else "current facts"
    note = f"\n{result.note}" if result.note else ""
    if not result.total:
        return f"No {what} found" + (f" for {query!r}." if query else ".") + note
    if not result.facts:
        return f"Page {page} is past the end: {result.total} {what}." + note
    first = page * result.page_size
    head = f"Showing {what} {first + 1}-{first + len(result.facts)} of {result.total}." + note
    try:
        sources = facts.sources(result.facts)
    except StorageError:
        sources = {}
    return "\n".join([head, *(describe(f, sources) for f in result.facts)])
