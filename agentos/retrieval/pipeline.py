"""One search pipeline for every tier: ranked paths, read at once and fused by weighted reciprocal rank, then stages
that reorder the fused list, then a page cut from it.

A tier's search is a configuration of it: which paths (each a `RankedPath`: a name, a weight, and a ranked list of
ids), which stages, and how a page's ids become its hits. Recall fuses many paths (retrieval.recall_paths); archival
fuses keywords and meaning; facts fuse keywords, meaning and retention.

A path ranks in two steps so that every path's storage read runs at once (on the reads' event loop): `read()` gives
the read it needs, if any, and `rank()` turns what it found into ids on the caller's thread, where a path may also
look at the lists of the paths before it (recall's time path falls back on the keyword matches).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from agentos.retrieval.page import Page
from agentos.retrieval.search import rrf
from agentos.storage.reads import Read

H = TypeVar("H")  # what a page's hits are: `Hit`s of messages and passages, facts
Scored = list[tuple[str, float]]  # ids best first, with their fused scores
Stage = Callable[[Scored], tuple[Scored, str | None]]  # reorders a fused list, with a note when it could not
Gather = Callable[..., list[Any]]  # runs reads at once, results in order (`Reads.gather`)


@dataclass(frozen=True)
class Ranked:
    """One path's list: ids best first, the rows its read brought that a page may show, and whether its pool of
    candidates was full (there may be more matches than it ranked)."""

    ids: list[str]
    rows: Sequence[dict[str, Any]] = ()
    full: bool = False


class RankedPath(Protocol):
    """One ranked list a search fuses."""

    @property
    def name(self) -> str: ...

    @property
    def weight(self) -> float: ...

    def read(self) -> Read | None:
        """The storage read this path needs, run at once with the other paths' (None: it reads nothing)."""
        ...

    def rank(self, found: Any, before: Mapping[str, Ranked]) -> Ranked | None:
        """Its list from what its read found (None when it read nothing), given the lists of the paths before it;
        None leaves the path out of this search."""
        ...


@dataclass
class Ranking:
    """What a search's paths ranked: each path's list by name (in the paths' order) and their weights."""

    lists: dict[str, Ranked] = field(default_factory=dict)
    weights: dict[str, float] = field(default_factory=dict)

    @property
    def rows(self) -> dict[str, dict[str, Any]]:
        """The rows the paths read, by id (the first path's, where several read one)."""
        rows: dict[str, dict[str, Any]] = {}
        for ranked in self.lists.values():
            for row in ranked.rows:
                rows.setdefault(row["id"], row)
        return rows

    def full(self, name: str) -> bool:
        """Whether path `name` filled its pool of candidates (a page then says there may be more)."""
        return name in self.lists and self.lists[name].full

    def fused(self) -> Scored:
        """The lists fused by weighted reciprocal rank; ties keep the order of the paths, then of first sight."""
        names = list(self.lists)
        return rrf([self.lists[n].ids for n in names], [self.weights[n] for n in names])


def rank_paths(paths: Sequence[RankedPath], gather: Gather) -> Ranking:
    """Every path's list: their reads run at once through `gather`, then each ranks in order."""
    return rank_many([paths], gather)[0]


def rank_many(searches: Sequence[Sequence[RankedPath]], gather: Gather) -> list[Ranking]:
    """The rankings of several searches (each a sequence of paths), every read of all of them run at once."""
    found = iter(gather(*(path.read() for paths in searches for path in paths)))
    rankings = []
    for paths in searches:
        ranking = Ranking()
        for path in paths:
            ranked = path.rank(next(found), ranking.lists)
            if ranked is not None:
                ranking.lists[path.name] = ranked
                ranking.weights[path.name] = path.weight
        rankings.append(ranking)
    return rankings


def reordered(scored: Scored, stages: Sequence[Stage]) -> tuple[Scored, list[str]]:
    """The fused list after each stage in turn (neighbours, cross-encoder, a model's rerank), and the notes of the
    stages that were left out."""
    notes = []
    for stage in stages:
        scored, note = stage(scored)
        notes += [note] if note else []
    return scored, notes


def page_of(scored: Scored, page: int, page_size: int, hits: Callable[[Scored], list[H]], *, capped: bool = False,
            note: str | None = None, query: str = "", filters: Mapping[str, Any] | None = None) -> Page[H]:
    """Page `page` of a ranked list: its slice made into hits by `hits`, with the list's length as the total."""
    return Page(hits=hits(scored[page * page_size : (page + 1) * page_size]), total=len(scored), page=page,
                page_size=page_size, capped=capped, note=note, query=query, filters=dict(filters or {}))
