"""The ranked paths over a table that every tier's search configures: BM25 over a column, nearest vectors, and
several queries' BM25 joined into one list (see retrieval.pipeline)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentos.retrieval.pipeline import Ranked
from agentos.retrieval.search import QueryVector, fts_rows, nearest_rows, rrf
from agentos.storage.reads import Read, together

log = logging.getLogger(__name__)

Rows = list[dict[str, Any]]
Order = Callable[[Rows], list[str]]  # a path's ids from the rows its read found (default: in the read's order)


def in_read_order(rows: Rows) -> list[str]:
    return [r["id"] for r in rows]


class OnceReads:
    """The reads of one search, each run once: paths that rank the same rows in their own ways share one read."""

    def __init__(self) -> None:
        self._running: dict[Hashable, asyncio.Future[Any]] = {}

    async def read(self, key: Hashable, make: Callable[[], Read]) -> Any:
        """The result of the read `key` names, made by `make` for the first path that asks (on the reads' loop)."""
        running = self._running.get(key)
        if running is None:
            running = self._running[key] = asyncio.ensure_future(make())
        return await running  # the search's reads are cancelled together (reads.together), so this one with them


@dataclass(frozen=True)
class KeywordPath:
    """BM25 matches of `query` in `column`, best first, over a pool of `limit`; with `kept` (retrieval.search's
    `after_ranking`) the filter is applied after ranking. `keep_rows`: whether a page may show the rows it read;
    `optional`: a failing read leaves the path out (logged) instead of failing the search; `once`: paths that read
    alike through one `OnceReads` share the read."""

    name: str
    weight: float
    handle: Any
    query: str
    column: str
    where: str | None
    limit: int
    columns: Sequence[str] = ()
    kept: float | None = None
    order: Order = in_read_order
    keep_rows: bool = True
    optional: bool = False
    once: OnceReads | None = None

    def read(self) -> Read:
        def make() -> Read:
            return fts_rows(self.handle, self.query, self.column, self.where, self.limit, self.columns, kept=self.kept)

        key = (id(self.handle), self.query, self.column, self.where, self.limit, tuple(self.columns), self.kept)
        read = self.once.read(key, make) if self.once is not None else make()
        return left_out_on_error(self.name, read) if self.optional else read

    def rank(self, found: Rows | None, before: Mapping[str, Ranked]) -> Ranked | None:
        if found is None:
            return None
        return Ranked(self.order(found), found if self.keep_rows else (), full=len(found) >= self.limit)


@dataclass(frozen=True)
class VectorPath:
    """The `limit` nearest vectors to `vector` by cosine distance, best first, less those less similar than `floor`
    (the embedder's `relevance_floor`); given a `QueryVector`, the read waits for it (left out when the embedder
    failed)."""

    name: str
    weight: float
    handle: Any
    vector: list[float] | QueryVector
    where: str | None
    limit: int
    columns: Sequence[str] = ()
    kept: float | None = None
    order: Order = in_read_order
    keep_rows: bool = True
    floor: float | None = None

    def read(self) -> Read:
        return self._nearest()

    async def _nearest(self) -> Rows | None:
        vector = await self.vector.wait() if isinstance(self.vector, QueryVector) else self.vector
        if vector is None:
            return None
        rows = await nearest_rows(self.handle, vector, self.where, self.limit, self.columns, kept=self.kept)
        return rows if self.floor is None else [r for r in rows if 1.0 - r["_distance"] >= self.floor]

    def rank(self, found: Rows | None, before: Mapping[str, Ranked]) -> Ranked | None:
        if found is None:
            return None
        return Ranked(self.order(found), found if self.keep_rows else ())


@dataclass(frozen=True)
class QueriesPath:
    """BM25 over each of several queries (a question's variants, a model's rewrites), their lists fused by reciprocal
    rank into one; left out when there are no queries."""

    name: str
    weight: float
    handle: Any
    queries: Sequence[str]
    column: str
    where: str | None
    limit: int
    columns: Sequence[str] = ()

    def read(self) -> Read | None:
        if not self.queries:
            return None
        return together([fts_rows(self.handle, q, self.column, self.where, self.limit, self.columns)
                         for q in self.queries])

    def rank(self, found: list[Rows] | None, before: Mapping[str, Ranked]) -> Ranked | None:
        if not found:
            return None
        ids = [key for key, _ in rrf([[r["id"] for r in rows] for rows in found])]
        return Ranked(ids, [r for rows in found for r in rows])


async def left_out_on_error(path: str, read: Read) -> Any | None:
    """A path's read, or None when it fails (a table replaced meanwhile): the other paths still answer."""
    try:
        return await read
    except Exception as exc:  # noqa: BLE001 - a failing path is left out; search still answers
        log.warning("%s search left out: %s", path, exc)
        return None
