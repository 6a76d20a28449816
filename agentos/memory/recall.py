"""Recall memory: every message, searched by BM25 (and by meaning when an embedder is set)."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import pyarrow as pa

from agentos.errors import ToolError
from agentos.memory.embedders import Embedder, vector_array
from agentos.memory.fresh import nearest, place, rows_of, within
from agentos.memory.search import (
    MAX_CANDIDATES, PAGE_SIZE, VECTOR_CANDIDATES, Hit, Page, as_utc, clean_query, date_clauses, fts_rows, fuse,
    nearest_rows, query_vector,
)
from agentos.memory.tables import open_embedded
from agentos.messages import Message
from agentos.storage.db import Database, quote, storage_errors
from agentos.storage.reads import gather
from agentos.storage.records import embed_text, search_text_of
from agentos.storage.schemas import recall_vectors_schema

SEARCH_ROLES = ("user", "assistant")
_SHOWN = ["role", "content", "name", "created_at", "seq"]


def vectors_table_name(agent_id: str) -> str:
    return f"recall_vectors_{agent_id}"


class Recall:
    """Searches one agent's messages; tool traffic and the agent's own search calls are left out."""

    def __init__(self, db: Database, agent_id: str, embedder: Embedder,
                 unwritten: Callable[[str], list[Any]] | None = None) -> None:
        self.db = db
        self.agent_id = agent_id
        self.embedder = embedder
        self.unwritten = unwritten  # the store's rows saved but not yet committed, by table
        self._vectors: Any = None

    @property
    def vectors(self) -> Any:
        """The vector table, or None in BM25-only mode."""
        if self._vectors is None and self.embedder.enabled:
            schema = recall_vectors_schema(self.embedder.name, self.embedder.dim)
            self._vectors = open_embedded(self.db, vectors_table_name(self.agent_id), schema, self.embedder, "recall memory")
        return self._vectors

    def vector_rows(self, messages: Sequence[Message]) -> pa.Table | None:
        """Rows for the vector table: one per searchable message (embedded in one batch)."""
        todo = [(m, t) for m in messages if (t := embed_text(m))]
        if not self.embedder.enabled or not todo:
            return None
        columns = {
            "id": [m.id for m, _ in todo], "role": [m.role for m, _ in todo],
            "created_at": [m.created_at for m, _ in todo],
            "vector": vector_array(self.embedder.embed([t for _, t in todo])),
        }
        return pa.Table.from_pydict(columns, schema=self.vectors.schema)

    def _where(self, start: Any, end: Any, roles: Sequence[str] | None, *, with_agent: bool) -> str:
        clauses = [f"agent_id = {quote(self.agent_id)}", "search_text IS NOT NULL"] if with_agent else []
        if roles:
            bad = [r for r in roles if r not in SEARCH_ROLES]
            if bad:
                raise ToolError(f"roles must be among {', '.join(SEARCH_ROLES)}; got {str(bad[0])[:40]!r}.")
            clauses.append(f"role IN ({', '.join(quote(r) for r in dict.fromkeys(roles))})")
        clauses += date_clauses("created_at", start, end)
        return " AND ".join(clauses) or "true"

    def fresh_rows(self, table: str) -> list[dict[str, Any]]:
        """Rows saved to `table` for this agent but not yet committed (none without a writer to ask)."""
        if self.unwritten is None:
            return []
        return [r for r in rows_of(self.unwritten(table)) if r.get("agent_id", self.agent_id) == self.agent_id]

    def search(
        self,
        query: str,
        *,
        page: int = 0,
        page_size: int = PAGE_SIZE,
        start: Any = None,
        end: Any = None,
        roles: Sequence[str] | None = None,
    ) -> Page:
        """Ranked messages (hybrid RRF, or BM25 alone); an empty query with dates lists by time.

        Messages saved a moment ago whose commit is still running are matched in memory (see `fresh`),
        so nothing waits for a commit."""
        query = clean_query(query)
        start, end = (None if m is None else as_utc(m) for m in (start, end))
        where = self._where(start, end, roles, with_agent=True)
        if not query and start is None and end is None:
            raise ToolError("give a query, or start_date and/or end_date for a date search.")
        # Taken before the table is read: a row missing here was committed already, so the search sees it.
        fresh = [r for r in self.fresh_rows("messages") if r["search_text"] and within(r, start, end, roles)]
        fresh_vectors = [r for r in self.fresh_rows(vectors_table_name(self.agent_id)) if within(r, start, end, roles)]
        messages = self.db.table("messages")
        note = None
        with storage_errors("search recall memory"):
            known: dict[str, dict[str, Any]] = {r["id"]: r for r in fresh}
            if not query:
                rows = messages.search().where(where).select(["id", "seq"]).limit(None).to_arrow().to_pylist()
                order = [r["id"] for r in sorted(rows + fresh, key=lambda r: r["seq"])]
                ranked = [(key, 0.0) for key in dict.fromkeys(order)]
                capped = False
            else:
                table = self.vectors
                vector, note = query_vector(self.embedder, query) if table is not None else (None, None)
                vwhere = self._where(start, end, roles, with_agent=False)
                rows, near = gather(  # keyword and vector search run together
                    fts_rows(messages, query, where.replace(" AND search_text IS NOT NULL", ""), MAX_CANDIDATES, _SHOWN),
                    None if vector is None else nearest_rows(
                        table, vector, None if vwhere == "true" else vwhere, VECTOR_CANDIDATES),
                )
                capped = len(rows) >= MAX_CANDIDATES
                keyword = [r["id"] for r in rows]
                if fresh:
                    keyword = place(query, [(r["id"], search_text_of(r)) for r in rows],
                                    [(r["id"], r["search_text"]) for r in fresh])
                nearby = None if near is None else [r["id"] for r in near]
                if vector is not None and fresh_vectors:
                    nearby = nearest(vector, [(r["id"], r["_distance"]) for r in near or []],
                                     [(r["id"], r["vector"]) for r in fresh_vectors], VECTOR_CANDIDATES)
                known.update((r["id"], r) for r in rows if r["id"] not in known)
                ranked = fuse(keyword, nearby)
            chosen = ranked[page * page_size : (page + 1) * page_size]
            hits = self._hits(chosen, known)
        return Page(hits=hits, total=len(ranked), page=page, page_size=page_size, capped=capped, note=note)

    def _hits(self, chosen: list[tuple[str, float]], known: dict[str, dict[str, Any]]) -> list[Hit]:
        by_id = {key: known[key] for key, _ in chosen if key in known}
        missing = [key for key, _ in chosen if key not in by_id]
        if missing:
            ids = ", ".join(quote(i) for i in missing)
            rows = (
                self.db.table("messages").search()
                .where(f"agent_id = {quote(self.agent_id)} AND id IN ({ids})")
                .select(["id", *_SHOWN]).limit(len(missing)).to_arrow().to_pylist()
            )
            by_id.update((r["id"], r) for r in rows)
        hits = []
        for key, score in chosen:
            r = by_id.get(key)
            if r is not None:
                text = f"{r['name']}: {r['content']}" if r.get("name") else r["content"] or ""
                hits.append(Hit(id=key, text=text, created_at=r["created_at"], role=r["role"], score=score))
        return hits
