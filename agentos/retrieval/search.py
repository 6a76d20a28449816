"""Shared search plumbing: validated filters, keyword and vector reads, reciprocal-rank fusion."""

from __future__ import annotations

import asyncio
import math
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from datetime import datetime
from typing import Any

from agentos.errors import EmbedderError, ToolError
from agentos.storage.filters import quote
from agentos.storage.reads import Read
from agentos.storage.vector_index import tune
from agentos.times import as_utc

PAGE_SIZE = 5
# Reciprocal-rank fusion: rank-based, so it needs no calibration between BM25 scores and any
# embedder's cosines. Sweep on LoCoMo (categories 1-4) with all-MiniLM-L6-v2 (BM25 alone: hit@10 0.692,
# MRR 0.470): k=10, equal weights 0.712/0.414; k=2, vector weight 0.5: 0.722/0.480 (the best MRR of 75 settings).
RRF_K = 2
VECTOR_WEIGHT = 0.5
MAX_CANDIDATES = 50  # keyword matches ranked per query (10 pages; totals above say "50+"); 100 cost 1M-row search ~5 ms
VECTOR_CANDIDATES = 50  # nearest neighbours fused with the keyword matches
POSTFILTER_FROM = 0.5  # a filter keeping at least this share of rows is applied after ranking,
POSTFILTER_MIN_ROWS = 300_000  # in tables this large (at 100k rows counting cost more than it saved)
SCANNED_POSTFILTER_FROM = 0.2  # the share for a filter no index serves (date ranges): at 1M passages,
# filtering first took 67-79 ms p50 for ranges keeping 20-40%, after ranking 45-53 ms (at 10% both 63-65 ms)
POSTFILTER_MARGIN = 1.6  # rows asked for after ranking: limit x margin / share kept; with 1.25, 1-8% of searches
# at 1M came up short and ran again filtered first, with 1.6 none of 240
MAX_QUERY_CHARS = 2000
MAX_PAGE = 10_000
TEXT_LIMIT = 600  # characters of one result shown to the model
_TAG = re.compile(r"^[^\x00-\x1f]{1,64}$")


def timestamp_literal(moment: datetime) -> str:
    """A LanceDB timestamp literal from a datetime we parsed (never raw model text)."""
    utc = as_utc(moment)
    return f"timestamp '{utc.year:04d}-{utc.strftime('%m-%d %H:%M:%S.%f')}'"  # %Y leaves years below 1000 short


def date_clauses(column: str, start: datetime | None, end: datetime | None) -> list[str]:
    """LanceDB filter clauses keeping rows whose `column` lies within the inclusive bounds (None: no bound)."""
    clauses = []
    if start:
        clauses.append(f"{column} >= {timestamp_literal(start)}")
    if end:
        clauses.append(f"{column} <= {timestamp_literal(end)}")
    return clauses


def tag_clause(tags: Sequence[str] | None) -> str | None:
    """Passages carrying any of `tags`; each tag validated and quoted."""
    clean = clean_tags(tags)
    if not clean:
        return None
    return f"array_has_any(tags, [{', '.join(quote(t) for t in clean)}])"


def clean_tags(tags: Iterable[str] | None) -> list[str]:
    out: list[str] = []
    for tag in tags or []:
        tag = str(tag).strip()
        if not _TAG.match(tag):
            raise ToolError(f"bad tag {tag[:40]!r}: tags are 1-64 printable characters.")
        if tag not in out:
            out.append(tag)
    if len(out) > 32:
        raise ToolError("at most 32 tags.")
    return out


def clean_query(query: str | None) -> str:
    """The query text, whitespace-normalised and cut to MAX_QUERY_CHARS."""
    return " ".join((query or "").replace("\x00", " ").split())[:MAX_QUERY_CHARS]


def check_page(page: int) -> int:
    if page < 0 or page > MAX_PAGE:
        raise ToolError(f"page must be between 0 and {MAX_PAGE}.")
    return page


def rrf(rankings: Sequence[Sequence[str]], weights: Sequence[float] = (), k: int = RRF_K) -> list[tuple[str, float]]:
    """Fuse ranked id lists by weighted reciprocal rank (weight 1 where none is given); ties keep first-seen order."""
    scores: dict[str, float] = {}
    for i, ranking in enumerate(rankings):
        weight = weights[i] if i < len(weights) else 1.0
        for rank, key in enumerate(ranking):
            scores[key] = scores.get(key, 0.0) + weight / (k + rank + 1)
    return sorted(scores.items(), key=lambda kv: -kv[1])


def kept_share(table: Any, where: str | None) -> float | None:
    """The share of a table's rows that `where` keeps, counted; it decides whether searches filter before
    or after ranking. None without a filter, or below POSTFILTER_MIN_ROWS, where filtering first is cheaper
    than counting."""
    if not where:
        return None
    total = table.count_rows()
    return table.count_rows(where) / total if total >= POSTFILTER_MIN_ROWS else None


def after_ranking(table: Any, where: str | None, *, scanned: bool = False) -> float | None:
    """The share of rows `where` keeps when it is best applied after ranking, else None (filter first).
    That is from POSTFILTER_FROM of a large table, or SCANNED_POSTFILTER_FROM for a filter no index
    serves (`scanned`: date ranges), which is dearer to apply first."""
    kept = kept_share(table, where)
    return kept if kept is not None and kept >= (SCANNED_POSTFILTER_FROM if scanned else POSTFILTER_FROM) else None


async def _filtered(search: Callable[[int], Any], where: str | None, limit: int, kept: float | None,
                    order: Callable[[dict[str, Any]], Any]) -> list[dict[str, Any]]:
    """The best `limit` rows of `search(n)` (an async query limited to n rows) in `order`, with `where`
    applied before ranking, or after it when `kept` (from `after_ranking`) is given, asking for more
    rows. At 1M passages a filter keeping nearly every row cost the vector search 20 ms more as a
    prefilter (a date filter 60 ms), and nothing as a postfilter. When the filtered rows fall short
    (the filter and the query disagree), the search runs again filtered first, so no match is lost."""
    rows: list[dict[str, Any]] = []
    if where and kept:
        query = search(math.ceil(limit * POSTFILTER_MARGIN / kept)).where(where).postfilter()
        rows = (await query.to_arrow()).to_pylist()
    if len(rows) < limit:
        q = search(limit)
        rows = (await (q.where(where) if where else q).to_arrow()).to_pylist()
    return sorted(rows, key=order)[:limit]


def fts_rows(table: Any, query: str, column: str, where: str | None, limit: int, columns: Sequence[str] = (),
             kept: float | None = None) -> Read:
    """BM25 matches of `query`'s words in `column`, best first: id, score and `columns`; a read of an async
    table handle, to run with `Reads.gather` beside the vector search. With `kept` (from `after_ranking`) the
    filter is applied after ranking.

    The query is words to match, never query syntax: quotes, colons and operators from the model are text
    (as syntax, a quote asks for a phrase query, which the index, built without positions, refuses).

    Equal scores are ordered by `seq` (when selected), then id: LanceDB's order of ties changes as
    the index is rebuilt, and pages of one ranking must not shift between calls."""

    from lancedb.query import MatchQuery

    match = MatchQuery(query, column)  # type: ignore[call-arg]  # pydantic fields with defaults, seen as required

    def search(n: int) -> Any:
        return table.query().nearest_to_text(match).select(["id", "_score", *columns]).limit(n)

    return _filtered(search, where, limit, kept, lambda r: (-r["_score"], r.get("seq") or 0, r["id"]))


def nearest_rows(table: Any, vector: list[float], where: str | None, limit: int, columns: Sequence[str] = (),
                 kept: float | None = None) -> Read:
    """The nearest vectors by cosine distance, best first: id, distance and `columns`; a read, as
    `fts_rows`. The index settings are always given: a table without the index ignores them, so one
    built meanwhile is used right. Equal distances are ordered by id."""

    def search(n: int) -> Any:
        q = table.query().nearest_to(vector).column("vector").distance_type("cosine")
        return tune(q.select(["id", "_distance", *columns]).limit(n), n)

    return _filtered(search, where, limit, kept, lambda r: (round(r["_distance"], 6), r["id"]))


def query_vector(embedder: Any, query: str) -> tuple[list[float] | None, str | None]:
    """The query's vector; when the embedding service fails, None and a note (search falls back to keywords)."""
    try:
        return embedder.embed_query([query])[0].tolist(), None
    except EmbedderError as exc:
        return None, keyword_only_note(exc)


def keyword_only_note(exc: EmbedderError) -> str:
    """What a search says when its embedder failed and it answered with keywords alone."""
    return f"Meaning-based search is unavailable ({exc}); these are keyword matches only."


class QueryVector:
    """A query's vector (`query_vector`), embedded on a thread of its own from the moment it is made, so that a
    search's other reads run meanwhile instead of after it (and a slow embedding service holds up no other search)."""

    def __init__(self, embedder: Any, query: str) -> None:
        self._embedded: Future[tuple[list[float] | None, str | None]] = Future()
        threading.Thread(target=self._embed, args=(embedder, query), daemon=True, name="agentos-query-vector").start()

    def _embed(self, embedder: Any, query: str) -> None:
        if not self._embedded.set_running_or_notify_cancel():
            return  # the search was given up before the embedding began
        try:
            self._embedded.set_result(query_vector(embedder, query))
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits for the vector
            self._embedded.set_exception(exc)

    async def wait(self) -> list[float] | None:
        """The vector, once embedded (None when the embedder failed)."""
        return (await asyncio.wrap_future(self._embedded))[0]

    def result(self) -> tuple[list[float] | None, str | None]:
        """The vector (None when the embedder failed) and why it is missing; waits for the embedding."""
        return self._embedded.result()

    def note(self) -> str | None:
        """Why meaning-based search was left out, when the embedder failed; waits for the embedding."""
        return self.result()[1]


def shorten(text: str, limit: int = TEXT_LIMIT) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit].rstrip() + f" [... {len(text) - limit:,} more characters]"
