"""Searching fact memory: keyword matches, nearest vectors and retention fused by weighted reciprocal rank."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agentos.memory.audited import audited
from agentos.memory.facts.retention import by_retention, retention
from agentos.memory.facts.rows import Fact
from agentos.memory.facts.tables import COLUMNS, CURRENT, FactTables, believed_at
from agentos.messages import utc_now
from agentos.retrieval.page import Page, given
from agentos.retrieval.pipeline import Ranked, RankedPath, page_of, rank_many, rank_paths
from agentos.retrieval.search import MAX_CANDIDATES, PAGE_SIZE, VECTOR_CANDIDATES, QueryVector, clean_query
from agentos.retrieval.table_paths import KeywordPath, Rows, VectorPath
from agentos.storage.failures import storage_errors
from agentos.storage.filters import quote

KEYWORD_WEIGHT, VECTOR_WEIGHT, RETENTION_WEIGHT = 1.0, 0.5, 0.25  # the ranked lists fused into one fact ranking
QUERY_VECTORS_KEPT = 256


def _tied_by_retention(key: Callable[[dict[str, Any]], float], now: datetime) -> Callable[[Rows], list[str]]:
    """A path's order: by `key` (a match's score, lower first), equal matches by retention, higher first."""
    def order(rows: Rows) -> list[str]:
        return [r["id"] for r in sorted(rows, key=lambda r: (round(key(r), 6), -retention(Fact.of_row(r), now)))]
    return order


@dataclass(frozen=True)
class RetentionPath:
    """The facts the paths before it found, ranked by retention: how well used and how recent (a list of its own)."""

    now: datetime
    name: str = "retention"
    weight: float = RETENTION_WEIGHT

    def read(self) -> None:
        return None

    def rank(self, found: None, before: Mapping[str, Ranked]) -> Ranked:
        known = {r["id"]: Fact.of_row(r) for ranked in before.values() for r in ranked.rows}
        return Ranked(by_retention(list(known.values()), self.now))


class FactSearch(FactTables):
    """Ranked reads of one agent's facts: for the model's fact_search, recall's `facts` path and consolidation."""

    @audited("read", "facts")
    def search(self, query: str, *, as_of: datetime | None = None, include_ended: bool = False,
               subject: str | None = None, page: int = 0, page_size: int = PAGE_SIZE,
               record: bool = True) -> Page[Fact]:
        """Facts ranked by keywords, meaning and retention, fused by reciprocal rank: current ones, or those
        believed at `as_of`, or every version. An empty query lists the newest."""
        query = clean_query(query)
        filters = given(as_of=as_of, include_ended=include_ended or None, subject=subject)
        clauses = [believed_at(as_of) if as_of else ("status != 'undone'" if include_ended else CURRENT)]
        if subject:
            clauses.append(f"subject = {quote(subject)}")
        where = " AND ".join(clauses)
        if self._reading() is None:
            return Page([], 0, page, page_size, query=query, filters=filters)
        if not query:
            listed = self.listing(include_ended=include_ended, as_of=as_of, subject=subject)
            shown = listed[page * page_size : (page + 1) * page_size]
            return Page(shown, len(listed), page, page_size, query=query, filters=filters)
        with storage_errors("search fact memory"):
            vector = self._query_vector(query)  # embedded while the keyword read runs
            ranking = rank_paths(self._paths(query, vector, where, floor=self.embedder.relevance_floor),
                                 self.ctx.db.reads.gather)
            note = self._kept(query, vector)
        rows = ranking.rows
        found = page_of(ranking.fused(), page, page_size, lambda scored: [Fact.of_row(rows[k]) for k, _ in scored],
                        note=note, query=query, filters=filters)
        if record:
            self.note_retrieved(f.id for f in found.hits)
        return found

    def ranked_messages(self, query: str, limit: int) -> list[str] | None:
        """The messages the best current facts for `query` came from, in the facts' order: fact memory joins recall
        search as its `facts` path. Not counted as retrievals (what the model sees are the messages)."""
        if not (query or "").strip():
            return None
        facts = self.search(query, page_size=limit, record=False).hits
        return list(dict.fromkeys(key for fact in facts for key in fact.source_ids))[:limit]

    def _paths(self, query: str, vector: list[float] | QueryVector | None, where: str, *,
               floor: float | None) -> list[RankedPath]:
        """A fact search's ranked lists: keyword matches, nearest vectors at least `floor` similar (with an
        embedder), retention; equal matches within a list are ordered by retention (it breaks ties, then ranks as a
        list of its own)."""
        now = utc_now()
        handle = self.ctx.db.reads.handle(self.table_name)
        paths: list[RankedPath] = [KeywordPath("keyword", KEYWORD_WEIGHT, handle, query, "text", where, MAX_CANDIDATES,
                                               COLUMNS[1:], order=_tied_by_retention(lambda r: -r["_score"], now))]
        if vector is not None:
            paths.append(VectorPath("vector", VECTOR_WEIGHT, handle, vector, where, VECTOR_CANDIDATES, COLUMNS[1:],
                                    order=_tied_by_retention(lambda r: r["_distance"], now), floor=floor))
        return [*paths, RetentionPath(now)]

    def _query_vector(self, query: str) -> list[float] | QueryVector | None:
        """The query's vector: kept from an earlier search, or being embedded (None without an embedder)."""
        if not self.embedder.enabled:
            return None
        if query in self._query_vectors:
            return list(self._query_vectors[query])
        return QueryVector(self.embedder, query)

    def _kept(self, query: str, vector: list[float] | QueryVector | None) -> str | None:
        """Keep a newly embedded query's vector a while (a fact written next reuses it); why it is missing, when
        the embedder failed."""
        if not isinstance(vector, QueryVector):
            return None
        embedded, note = vector.result()
        if embedded is not None:
            self._query_vectors[query] = embedded
            while len(self._query_vectors) > QUERY_VECTORS_KEPT:
                self._query_vectors.pop(next(iter(self._query_vectors)))
        return note

    def similar(self, texts: Sequence[str], k: int) -> list[list[Fact]]:
        """For each text, the `k` current facts most like it (what consolidation compares new facts with); the
        searches of all the texts run at once."""
        queries = [clean_query(t) for t in texts]
        if self._reading() is None or not any(queries):
            return [[] for _ in texts]
        with storage_errors("search fact memory"):
            vectors = {q: self._query_vector(q) for q in dict.fromkeys(queries) if q}  # a text given twice: once
            # no relevance floor: it was measured on questions against turns, not on facts against facts, and
            # consolidation's model decides what is related anyway
            searches = [self._paths(q, vectors[q], CURRENT, floor=None) if q else [] for q in queries]
            rankings = rank_many(searches, self.ctx.db.reads.gather)
            for query, vector in vectors.items():
                self._kept(query, vector)
        out: list[list[Fact]] = []
        for ranking in rankings:
            rows = ranking.rows
            out.append([Fact.of_row(rows[key]) for key, _ in ranking.fused()[:k]])
        return out
