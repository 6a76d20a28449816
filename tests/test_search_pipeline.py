"""The search pipeline on its own: fake ranked paths with known lists, their fusion, stages, pages and filters."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from agentos.retrieval.page import Page, given
from agentos.retrieval.pipeline import Ranked, Scored, page_of, rank_many, rank_paths, reordered
from agentos.retrieval.search import RRF_K, QueryVector
from agentos.retrieval.table_paths import together


def gather(*reads: Any) -> list[Any]:
    """`Reads.gather` without storage: the reads run at once on a fresh loop."""
    async def run() -> list[Any]:
        return list(await asyncio.gather(*(r for r in reads if r is not None)))

    done = iter(asyncio.run(run()))
    return [None if r is None else next(done) for r in reads]


async def rows_of(ids: list[str]) -> list[dict[str, Any]]:
    return [{"id": key, "text": f"text of {key}"} for key in ids]


@dataclass(frozen=True)
class Listed:
    """A path whose read finds `ids`, in that order."""

    name: str
    weight: float
    ids: list[str]
    pool: int = 100

    def read(self) -> Any:
        return rows_of(self.ids)

    def rank(self, found: list[dict[str, Any]], before: Mapping[str, Ranked]) -> Ranked:
        return Ranked([r["id"] for r in found], found, full=len(found) >= self.pool)


@dataclass
class Echo:
    """A path that reads nothing and ranks what the paths before it ranked, reversed (as recall's time path looks at
    the keyword matches); left out when there were none."""

    name: str = "echo"
    weight: float = 1.0
    seen: list[str] = field(default_factory=list)

    def read(self) -> None:
        return None

    def rank(self, found: None, before: Mapping[str, Ranked]) -> Ranked | None:
        self.seen = list(before)
        ids = [key for ranked in before.values() for key in ranked.ids]
        return Ranked(ids[::-1]) if ids else None


def test_paths_are_fused_by_weighted_reciprocal_rank_in_their_order() -> None:
    ranking = rank_paths([Listed("keyword", 1.0, ["a", "b", "c"]), Listed("vector", 0.5, ["c", "d"])], gather)
    fused = ranking.fused()
    assert [key for key, _ in fused] == ["c", "a", "b", "d"]  # c, found by both, first
    assert dict(fused)["c"] == 1.0 / (RRF_K + 3) + 0.5 / (RRF_K + 1)
    tied = rank_paths([Listed("one", 1.0, ["x"]), Listed("two", 1.0, ["y"])], gather).fused()
    assert [key for key, _ in tied] == ["x", "y"]  # equal scores keep the paths' order


def test_a_path_sees_the_lists_before_it_and_one_that_ranks_nothing_is_left_out() -> None:
    echo = Echo()
    ranking = rank_paths([Listed("keyword", 1.0, ["a", "b"]), echo], gather)
    assert echo.seen == ["keyword"] and ranking.lists["echo"].ids == ["b", "a"]
    alone = rank_paths([Echo()], gather)
    assert alone.lists == {} and alone.fused() == []


def test_several_searches_read_at_once_and_rank_apart() -> None:
    calls: list[int] = []

    def counted(*reads: Any) -> list[Any]:
        calls.append(len(reads))
        return gather(*reads)

    first, second = rank_many([[Listed("keyword", 1.0, ["a"]), Echo()], [Listed("keyword", 1.0, ["b", "c"])]], counted)
    assert calls == [3]  # one gather for both searches
    assert first.lists["echo"].ids == ["a"] and [key for key, _ in second.fused()] == ["b", "c"]


def test_rows_come_from_the_first_path_that_read_them_and_a_full_pool_is_told() -> None:
    ranking = rank_paths([Listed("keyword", 1.0, ["a", "b"], pool=2), Listed("vector", 0.5, ["b", "c"])], gather)
    assert set(ranking.rows) == {"a", "b", "c"} and ranking.rows["b"]["text"] == "text of b"
    assert ranking.full("keyword") and not ranking.full("vector") and not ranking.full("missing")


def test_stages_reorder_the_fused_list_in_turn_and_say_why_when_left_out() -> None:
    def backwards(scored: Scored) -> tuple[Scored, str | None]:
        return scored[::-1], None

    def unavailable(scored: Scored) -> tuple[Scored, str | None]:
        return scored, "The reranker is unavailable."

    scored, notes = reordered([("a", 0.3), ("b", 0.2), ("c", 0.1)], [backwards, unavailable])
    assert [key for key, _ in scored] == ["c", "b", "a"] and notes == ["The reranker is unavailable."]


def test_pages_are_cut_from_the_ranked_list_with_the_true_total() -> None:
    scored = [(f"m{i}", 1.0 / (i + 1)) for i in range(12)]
    first = page_of(scored, 0, 5, lambda chosen: [key for key, _ in chosen], query="harbour")
    assert first.hits == ["m0", "m1", "m2", "m3", "m4"] and first.total == 12 and first.pages == 3
    assert first.has_more and first.next_page == 1 and first.query == "harbour"
    last = page_of(scored, 2, 5, lambda chosen: [key for key, _ in chosen])
    assert last.hits == ["m10", "m11"] and not last.has_more and last.next_page is None
    past = page_of(scored, 7, 5, lambda chosen: [key for key, _ in chosen])
    assert past.hits == [] and past.total == 12 and past.next_page is None


def test_a_page_names_the_filters_it_was_given_and_only_those() -> None:
    filters = given(start=None, end="2024-05-01", roles=[], tags=["pets"])
    assert filters == {"end": "2024-05-01", "tags": ["pets"]}
    page: Page[str] = page_of([("a", 1.0)], 0, 5, lambda chosen: [key for key, _ in chosen], filters=filters)
    assert page.filters == filters and page.filters is not filters
    assert Page(hits=[], total=0, page=0, page_size=5).pages == 1


def test_reads_run_together_and_one_failing_cancels_the_others() -> None:
    async def slow() -> str:
        await asyncio.sleep(10)
        return "never"

    async def failing() -> str:
        raise OSError("the table is gone")

    async def run() -> str:
        try:
            await together([slow(), failing()])
        except OSError as exc:
            return str(exc)
        return "no error"

    assert asyncio.run(asyncio.wait_for(run(), 5)) == "the table is gone"


def test_a_query_vector_given_up_while_it_is_embedded_ends_quietly(monkeypatch: pytest.MonkeyPatch) -> None:
    """A search whose other read failed cancels its wait for the vector; the embedding thread then finishes without
    an exception of its own (which Python would print as "Exception in thread ...")."""
    raised: list[object] = []
    monkeypatch.setattr(threading, "excepthook", raised.append)
    release = threading.Event()

    class Slow:
        def embed_query(self, texts: list[str]) -> np.ndarray:
            release.wait(5)
            return np.zeros((len(texts), 4), dtype=np.float32)

    vector = QueryVector(Slow(), "where did we go in May")

    async def give_up() -> None:
        waiting = asyncio.ensure_future(vector.wait())
        await asyncio.sleep(0.05)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting

    asyncio.run(give_up())
    release.set()
    for thread in [t for t in threading.enumerate() if t.name == "agentos-query-vector"]:
        thread.join(5)
    assert raised == []
