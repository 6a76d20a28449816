"""Archival memory: passages the agent chose to keep, chunked, deduplicated, searched hybrid.

The tier owns the table `archival_<agent>` and the tools `archival_insert` and `archival_search`.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from agentos.embedders.base import Embedder, vector_array
from agentos.errors import ToolError
from agentos.memory.audited import audited
from agentos.memory.secret_gate import SecretGate, describe, gate_of
from agentos.memory.tables import open_embedded, reembed_table
from agentos.memory.tier import MemoryStats, Progress, Tier, TierContext
from agentos.messages import new_id, utc_now
from agentos.retrieval.page import Hit, Page, format_page, given
from agentos.retrieval.pipeline import RankedPath, page_of, rank_paths
from agentos.retrieval.search import (
    MAX_CANDIDATES,
    PAGE_SIZE,
    VECTOR_CANDIDATES,
    VECTOR_WEIGHT,
    QueryVector,
    after_ranking,
    check_page,
    clean_query,
    clean_tags,
    date_clauses,
    nearest_rows,
    tag_clause,
    timestamp_literal,
)
from agentos.retrieval.table_paths import KeywordPath, VectorPath
from agentos.storage.failures import storage_errors
from agentos.storage.filters import quote
from agentos.storage.schemas import archival_schema
from agentos.storage.vector_index import ensure_vector_index
from agentos.times import date_range
from agentos.tools.context import ToolContext
from agentos.tools.decorator import Tool, tool

CHUNK_CHARS = 1200  # about 300 tokens
MAX_INSERT_CHARS = 200_000
_SHOWN = ["text", "tags", "created_at"]
_KEEP = ["id", "text", "tags", "created_at", "source", "content_hash"]  # what a reindex carries over
_INDEXES = {"text": "fts", "id": "btree", "content_hash": "btree", "tags": "labellist"}


def archival_table_name(agent_id: str) -> str:
    return f"archival_{agent_id}"


def content_hash(text: str) -> str:
    return hashlib.sha256(" ".join(text.split()).encode("utf-8", "surrogatepass")).hexdigest()


def chunk_text(text: str, limit: int = CHUNK_CHARS) -> list[str]:
    """Split on paragraphs, then sentences, then words, into pieces of at most `limit` characters."""
    pieces: list[str] = []
    for unit in re.split(r"(?<=[.!?])\s+|\n\s*\n", text.strip()):
        unit = unit.strip()
        while len(unit) > limit:
            cut = unit.rfind(" ", 0, limit)
            cut = cut if cut > limit // 2 else limit
            pieces.append(unit[:cut].strip())
            unit = unit[cut:].strip()
        if unit:
            pieces.append(unit)
    chunks: list[str] = []
    for piece in pieces:
        if chunks and len(chunks[-1]) + 1 + len(piece) <= limit:
            chunks[-1] = f"{chunks[-1]} {piece}"
        else:
            chunks.append(piece)
    return chunks


@dataclass
class Inserted:
    """What an insert did: new passage ids, ids of passages that already held a chunk, and the secrets the secret
    gate replaced by placeholders before storing (how many of each kind)."""

    ids: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    secrets: dict[str, int] = field(default_factory=dict)


class ArchivalTier(Tier):
    """One agent's archival passages in their own LanceDB table."""

    name = "archival"

    def __init__(self, ctx: TierContext) -> None:
        super().__init__(ctx)
        self.table_name = archival_table_name(ctx.agent_id)
        self._table: Any = None
        self._count: int | None = None  # kept current by this tier's own writes (the only writer, under the lease)

    @classmethod
    def table_names(cls, agent_id: str) -> list[str]:
        return [archival_table_name(agent_id)]

    @property
    def embedder(self) -> Embedder:
        return self.ctx.embedder()

    @property
    def table(self) -> Any:
        """The passages table (created on first use by a writer); None for a reader when there is none yet."""
        if self._table is None:
            schema = archival_schema(self.embedder.name, self.embedder.dim)
            self._table = open_embedded(self.ctx.db, self.table_name, schema, self.embedder, "archival memory",
                                        _INDEXES, create=self.ctx.writable)
        return self._table

    def _read_table(self) -> Any:
        """The table to read: a reader first looks at the latest version (the writer is another process)."""
        table = self.table
        if table is not None and not self.ctx.writable:
            with storage_errors("read archival memory"):
                table.checkout_latest()
        return table

    # -- the tier interface ----------------------------------------------------------------------

    def tools(self) -> list[Tool]:
        return [archival_insert, archival_search]

    def metadata(self, stats: MemoryStats) -> list[str]:
        return [f"Passages in archival memory: {self.count()}"]

    def reindex(self, embedder: Embedder, progress: Progress) -> int:
        """Re-embed every passage with `embedder` in a new table that replaces the old one crash-safely."""
        self._table = None
        return reembed_table(self.ctx.db, self.table_name, archival_schema, _KEEP, embedder, "archival passages",
                             progress)

    # -- passages ------------------------------------------------------------------------------

    def count(self) -> int:
        """Passages stored; counted once, then kept current by inserts and deletes (a reader counts each time)."""
        if not self.ctx.writable:
            return self.ctx.db.count_rows(self.table_name) or 0
        if self._count is None:
            stored = self.ctx.db.count_rows(self.table_name)
            self._count = int(stored or 0)
        return self._count

    def insert(self, content: str, tags: Sequence[str] | None = None, source: str = "agent") -> Inserted:
        """Chunk and store `content`; chunks already stored are reported, not stored again."""
        if not content or not content.strip():
            raise ToolError("content is empty; give the text to remember.")
        if len(content) > MAX_INSERT_CHARS:
            raise ToolError(f"content is {len(content):,} characters; insert at most {MAX_INSERT_CHARS:,} at a time.")
        kept = self._gate().redact(content)  # whole, so that no chunk boundary splits a secret
        done = self.insert_many(chunk_text(kept.text), tags=tags, source=source)
        done.secrets = dict(Counter(kept.found) + Counter(done.secrets))
        return done

    def _gate(self) -> SecretGate:
        """The agent's secret gate (on when the tier was built without the agent's settings)."""
        return gate_of(self.ctx.settings() if self.ctx.settings is not None else None)

    @audited("change", "archival")
    def insert_many(
        self, texts: Sequence[str], tags: Sequence[str] | None = None, source: str = "agent",
        created_at: datetime | None = None,
    ) -> Inserted:
        """Store passages as given (no chunking) in one commit, embedded in batches."""
        self.ctx.check_writable("store archival passages")
        clean = clean_tags(tags)
        result = Inserted()
        gate = self._gate()
        kept = [gate.redact(t) for t in texts]  # each passage is stored without its secrets
        texts = [k.text for k in kept]
        result.secrets = dict(sum((Counter(k.found) for k in kept), Counter[str]()))
        hashes = [content_hash(t) for t in texts]
        existing = self._existing(hashes)
        fresh: list[tuple[str, str]] = []
        seen: dict[str, str] = {}
        for text, digest in zip(texts, hashes):
            if digest in existing:
                result.duplicates.append(existing[digest])
            elif digest in seen:
                result.duplicates.append(seen[digest])
            else:
                seen[digest] = new_id("arch")
                fresh.append((text, digest))
        if not fresh:
            return result
        n = len(fresh)
        columns: dict[str, Any] = {
            "id": [seen[d] for _, d in fresh], "text": [t for t, _ in fresh], "tags": [clean] * n,
            "created_at": [created_at or utc_now()] * n, "source": [source] * n,
            "content_hash": [d for _, d in fresh], "embedder": [self.embedder.name] * n,
        }
        if self.embedder.enabled:
            columns["vector"] = vector_array(self.embedder.embed_documents(columns["text"]))
        stored = self.count()
        self.ctx.db.add(self.table_name, pa.Table.from_pydict(columns, schema=self.table.schema))
        result.ids = columns["id"]
        self._count = stored + n
        self.ctx.wrote(self.table_name)
        return result

    def _existing(self, hashes: list[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        unique = sorted(set(hashes))
        with storage_errors("read archival memory"):
            for start in range(0, len(unique), 500):
                part = ", ".join(quote(h) for h in unique[start : start + 500])
                rows = self.table.search().where(f"content_hash IN ({part})").select(["id", "content_hash"])
                for r in rows.limit(None).to_arrow().to_pylist():
                    found[r["content_hash"]] = r["id"]
        return found

    def _where(self, tags: Sequence[str] | None, start: Any, end: Any) -> str | None:
        clauses = [c for c in [tag_clause(tags), *date_clauses("created_at", start, end)] if c]
        return " AND ".join(clauses) or None

    @audited("read", "archival")
    def search(
        self, query: str, *, page: int = 0, page_size: int = PAGE_SIZE, tags: Sequence[str] | None = None,
        start: Any = None, end: Any = None,
    ) -> Page[Hit]:
        """Ranked passages: keywords and meaning (or keywords alone) fused by reciprocal rank (retrieval.pipeline);
        an empty query lists the newest first."""
        query = clean_query(query)
        where = self._where(tags, start, end)
        filters = given(tags=clean_tags(tags) or None, start=start, end=end)
        table = self._read_table()
        if table is None:
            return Page(hits=[], total=0, page=page, page_size=page_size, query=query, filters=filters)
        if not query:
            return self._newest(where, page, page_size, query, filters)
        with storage_errors("search archival memory"):
            vector = QueryVector(self.embedder, query) if self.embedder.enabled else None
            kept = after_ranking(table, where, scanned=bool(start or end))  # no index serves date ranges
            handle = self.ctx.db.reads.handle(self.table_name)
            paths: list[RankedPath] = [KeywordPath("keyword", 1.0, handle, query, "text", where, MAX_CANDIDATES, _SHOWN,
                                                   kept=kept)]
            if vector:  # each path's read brings its rows' shown columns
                paths.append(VectorPath("vector", VECTOR_WEIGHT, handle, vector, where, VECTOR_CANDIDATES, _SHOWN,
                                        kept=kept, floor=self.embedder.relevance_floor))
            ranking = rank_paths(paths, self.ctx.db.reads.gather)
            note = vector.note() if vector is not None else None
            known = ranking.rows
            return page_of(ranking.fused(), page, page_size,
                           lambda chosen: [self._hit(known[key], score) for key, score in chosen],
                           capped=ranking.full("keyword"), note=note, query=query, filters=filters)

    def _newest(self, where: str | None, page: int, page_size: int, query: str = "",
                filters: dict[str, Any] | None = None) -> Page[Hit]:
        """A page of passages, newest first; sorted in Arrow, so listing 1M passages builds no 1M dicts."""
        with storage_errors("list archival memory"):
            q = self.table.search().select(["id", "created_at"]).with_row_id(True).limit(None)
            listing = (q.where(where) if where else q).to_arrow()
            order = pc.sort_indices(listing, sort_keys=[("created_at", "descending"), ("_rowid", "descending")])
            shown = listing.take(order[page * page_size : (page + 1) * page_size]).to_pylist()
            hits = self._hits([(r["id"], 0.0) for r in shown], {r["id"]: r["_rowid"] for r in shown})
        return Page(hits=hits, total=listing.num_rows, page=page, page_size=page_size, query=query,
                    filters=dict(filters or {}))

    def _hits(self, chosen: list[tuple[str, float]], row_ids: dict[str, int]) -> list[Hit]:
        """The shown columns of one page of listed passages: taken by row id, or by id for rows a
        compaction renumbered since the listing (or that came without a row id)."""
        columns = ["id", *_SHOWN]
        by_id: dict[str, dict[str, Any]] = {}
        known = [row_ids[key] for key, _ in chosen if key in row_ids]
        if known:
            try:
                by_id = {r["id"]: r for r in self.table.take_row_ids(known).select(columns).to_arrow().to_pylist()}
            except Exception:  # noqa: BLE001 - row ids gone since the listing: fetch by id below
                by_id = {}
        missing = [key for key, _ in chosen if key not in by_id]
        if missing:
            ids = ", ".join(quote(key) for key in missing)
            rows = self.table.search().where(f"id IN ({ids})").select(columns).limit(len(missing))
            by_id.update((r["id"], r) for r in rows.to_arrow().to_pylist())
        return [self._hit(by_id[key], score) for key, score in chosen if key in by_id]

    @staticmethod
    def _hit(row: dict[str, Any], score: float) -> Hit:
        return Hit(id=row["id"], text=row["text"], created_at=row["created_at"], tags=row["tags"] or [], score=score)

    @audited("change", "archival", target="passage_id")
    def delete(self, passage_id: str) -> bool:
        """Delete one passage by id; False when there was none."""
        self.ctx.check_writable("delete archival passages")
        where = f"id = {quote(passage_id)}"
        with storage_errors("delete an archival passage"):
            self.ctx.db.check_writable(self.table_name)
            if not self.table.count_rows(where):
                return False
            stored = self.count()
            self.table.delete(where)
        self._count = max(0, stored - 1)
        self.ctx.wrote(self.table_name)
        return True

    def rewind(self, to: datetime) -> int:
        """Delete the passages stored after `to` (a rewind to a point before them)."""
        self.ctx.check_writable("rewind archival memory")
        if self.ctx.db.count_rows(self.table_name) is None:
            return 0
        where = f"created_at > {timestamp_literal(to)}"
        with storage_errors("rewind archival memory"):
            self.ctx.db.check_writable(self.table_name)
            removed = int(self.table.count_rows(where))
            if removed:
                self.table.delete(where)
        self._count = None
        self.ctx.wrote(self.table_name)
        return removed

    def nearest(self, query: str, k: int = 10, *, exact: bool = False) -> list[str]:
        """Ids of the k nearest passages by vector alone (exact=True bypasses the ANN index)."""
        vector = self.embedder.embed_query([query])[0].tolist()
        if not exact:
            reads = self.ctx.db.reads
            (rows,) = reads.gather(nearest_rows(reads.handle(self.table_name), vector, None, k))
            return [r["id"] for r in rows]
        q = self.table.search(vector, vector_column_name="vector").distance_type("cosine").select(["id", "_distance"])
        return [r["id"] for r in q.bypass_vector_index().limit(k).to_arrow().to_pylist()]

    def optimize(self) -> None:
        """Compact the table and fold new rows into its indexes now (benchmarks, bulk loads)."""
        with storage_errors("optimize archival memory"):
            self.table.optimize(cleanup_older_than=timedelta(minutes=1))

    def ensure_ann_index(self, min_rows: int | None = None) -> bool:
        """Build the vector index now if the table is large enough (maintenance does this in the background)."""
        if not self.embedder.enabled:
            return False
        with storage_errors("index archival vectors"):
            return ensure_vector_index(self.table, min_rows)


@tool
def archival_insert(content: str, ctx: ToolContext, tags: list[str] | None = None) -> str:
    """Save text to your archival memory, a long-term store you can search later. Long text is split into passages.

    Args:
        content: The text to remember; self-contained, with names and dates spelled out.
        tags: Optional labels to filter by later, e.g. ["project", "preferences"].
    """
    archival = ctx.memory.tier(ArchivalTier)
    done = archival.insert(content, tags=tags)
    if not done.ids:
        return f"Already in archival memory (passage {', '.join(dict.fromkeys(done.duplicates))}); nothing stored twice."
    text = f"Stored {len(done.ids)} passage(s): {', '.join(done.ids)}."
    if done.duplicates:
        text += f" {len(done.duplicates)} part(s) were already stored and were skipped."
    if done.secrets:
        text += f" The secret gate stored {describe(done.secrets)} as a placeholder; the secret itself was not kept."
    return f"{text} Archival memory now holds {archival.count()} passage(s)."


@tool
def archival_search(
    query: str,
    ctx: ToolContext,
    page: int = 0,
    tags: list[str] | None = None,
    start_date: str | None = None,
    end_date: str | None = None,
) -> str:
    """Search your archival memory by words and meaning.

    Args:
        query: What to look for; leave empty to list passages, newest first.
        page: Which page of results to show, starting at 0.
        tags: Only passages carrying any of these tags.
        start_date: Only passages saved on or after this date (YYYY-MM-DD or YYYY-MM-DDTHH:MM, UTC).
        end_date: Only passages saved on or before this date (YYYY-MM-DD or YYYY-MM-DDTHH:MM, UTC).
    """
    start, end = date_range(start_date, end_date)
    result = ctx.memory.tier(ArchivalTier).search(query, page=check_page(page), tags=tags, start=start, end=end)
    return format_page(result, "passages", query)
