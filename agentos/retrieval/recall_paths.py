"""The ranked lists recall search fuses: keywords, the question's rewritten variants, meaning, time and the entity
graph. Each path gives message ids best first; weighted reciprocal-rank fusion joins any number of them, so a path
that finds nothing costs nothing, and one that fails is left out.

Paths (names used in settings and by the eval's ablation):
- keyword: BM25 over the question, over a pool of MAX_CANDIDATES matches;
- speakers: a speaker the question names is matched against who spoke, not as a word (retrieval.turn_context);
- neighbours: not a list: every hit's fused score spreads to the turns around it, where an answer often is
  (retrieval.turn_context);
- variants: BM25 over its content words (retrieval.query);
- vector: nearest neighbours by meaning (with an embedder);
- exchange: BM25 over every turn joined with the turn before it, credited to the later turn: a question's words
  are often in the turn that asked and its answer in the reply (memory.exchanges);
- time: a temporal expression in the question, resolved against the agent's time, ranks the messages in that range
  (BM25 within it), with the turns said near it that place what they tell inside it: a boost, never a filter; a
  question that asks when ranks the keyword hits that say when;
- graph: messages linked to the entities of the question, with one- and two-hop expansion (when the entity graph
  tier is installed);
- facts: the messages the facts that best match the question came from (when consolidation has made facts);
- rewrite: BM25 over the keyword queries a language model writes for the question (retrieval.model_stages);
- rerank: not a list: a language model reorders the fused list's best candidates (retrieval.model_stages);
- cross: not a list: a cross-encoder bundled with the `bge` extra reorders them (retrieval.cross_encoder).

rewrite and rerank need a model for search (the agent's, or `search.model`); each costs a model call per new
question, so they are off unless chosen.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from agentos.retrieval.search import MAX_CANDIDATES, VECTOR_CANDIDATES, date_clauses, fts_rows, nearest_rows, rrf
from agentos.retrieval.turn_context import TurnOrder

PATHS = ("keyword", "speakers", "neighbours", "time", "exchange", "variants", "graph", "facts", "vector", "rewrite", "rerank",
         "cross")
# what agents search with unless their settings say; in the LoCoMo ablation (README) neighbours, time, exchange and
# vectors gained overall (exchange +0.030 hit@10 on top of the others); speakers, on top of neighbours, lifts MRR
# (0.496 -> 0.527) for 0.009 of hit@10
DEFAULT_PATHS = ["keyword", "speakers", "neighbours", "time", "exchange", "vector"]
FORMER_DEFAULTS = [["keyword", "speakers", "neighbours", "time", "vector"]]  # agents saved with these get DEFAULT_PATHS
MATCHING_PATHS = ["keyword", "vector"]  # searches typed by a person (TUI, CLI): what matches, no neighbours
STAGES = ("speakers", "neighbours", "rerank", "cross")  # not lists of their own: they reorder what the others found
MODEL_PATHS = ("rewrite", "rerank")  # those that ask a language model
# how far from a question's time a turn may be said and still tell of it: "yesterday", "last week", "last month"
TOLD_WITHIN = timedelta(days=31)
TOLD_CHARS = 1000  # of a turn, read for the time it tells of
DEFAULT_WEIGHTS = {"keyword": 1.0, "exchange": 0.5, "variants": 0.5, "vector": 0.5, "time": 0.5, "graph": 0.5, "facts": 0.5,
                   "rewrite": 0.5}


@dataclass
class Lists:
    """Ranked id lists by path, and the rows already read for some of the ids."""

    ranked: dict[str, list[str]] = field(default_factory=dict)
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    capped: bool = False
    order: TurnOrder | None = None  # the turns in order, when the fused scores spread to neighbours

    def add(self, path: str, rows: Sequence[dict[str, Any]] | None, *, keep_rows: bool = True) -> None:
        if rows is None:
            return
        self.ranked[path] = [r["id"] for r in rows]
        if keep_rows:
            for r in rows:
                self.rows.setdefault(r["id"], r)

    def fused(self, weights: dict[str, float]) -> list[tuple[str, float]]:
        paths = [p for p in PATHS if p in self.ranked]
        return rrf([self.ranked[p] for p in paths], [weights.get(p, 1.0) for p in paths])


def variant_reads(handle: Any, queries: Sequence[str], where: str, columns: Sequence[str]) -> list[Any]:
    """BM25 reads of a question's variants or rewrites, to gather with the others."""
    return [fts_rows(handle, q, "search_text", where, MAX_CANDIDATES, columns) for q in queries]


@dataclass
class TimeReads:
    """What the time path read for a question that names a time: BM25 within its range, and near it."""

    hint: Any  # the question's TimeHint
    within: list[dict[str, Any]]
    near: list[dict[str, Any]]


async def time_read(handle: Any, question: str, where: str, now: datetime, columns: Sequence[str]) -> TimeReads | None:
    """For a question that names a time: BM25 within that range, and within TOLD_WITHIN either side of it (ranked by
    `time_ranked` once read); None for a question without a time. `columns` must hold content and created_at."""
    from agentos.retrieval.temporal import resolve_time, without_time

    hint = resolve_time(question, now)
    if hint is None:
        return None
    words = without_time(question).strip() or question
    reach = max(TOLD_WITHIN, hint.end - hint.start)
    inside = date_clauses("created_at", hint.start, hint.end)
    near = [*date_clauses("created_at", hint.start - reach, hint.end + reach), f"NOT ({' AND '.join(inside)})"]
    tasks = [asyncio.ensure_future(fts_rows(handle, words, "search_text", " AND ".join([where, *clauses]),
                                            MAX_CANDIDATES, columns)) for clauses in (inside, near)]
    try:
        within, around = await asyncio.gather(*tasks)
    except BaseException:  # the other is cancelled, and the error itself raised (not an ExceptionGroup)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    return TimeReads(hint, within, around)


def time_ranked(reads: TimeReads) -> list[dict[str, Any]]:
    """The turns said within the question's range, and those said near it that place what they tell inside it
    ("yesterday I was in Boston", said the day after the date asked about), by BM25 score. A told time much wider
    than the range ("this year", "since 2019") does not count. Parsed on the caller's thread, not the reads' loop."""
    hint = reads.hint
    widest = max(hint.end - hint.start, timedelta(days=7))
    told = [r for r in reads.near if (said := told_time(r)) is not None
            and said.start <= hint.end and said.end >= hint.start and said.end - said.start <= widest]
    return sorted(reads.within + told, key=lambda r: (-r["_score"], r.get("seq") or 0, r["id"]))[:MAX_CANDIDATES]


def told_time(row: dict[str, Any]) -> Any | None:
    """The time a turn's words place what it tells ("last month", "on May 8"), resolved against when it was said;
    None when they name none. Only its first TOLD_CHARS are read: parsing costs about 3 µs a character."""
    from agentos.retrieval.temporal import resolve_time

    return resolve_time(row["content"][:TOLD_CHARS], row["created_at"]) if row.get("content") else None


def dated_ids(question: str, rows: Sequence[dict[str, Any]]) -> list[str] | None:
    """For a question that asks when: the keyword hits that say when something happened (a temporal expression
    that resolves against the message's own time), in their keyword order; None for other questions."""
    from agentos.retrieval.temporal import asks_when

    if not asks_when(question):
        return None
    return [r["id"] for r in rows if told_time(r) is not None]


def vector_read(handle: Any, vector: list[float] | None, where: str | None) -> Any | None:
    return None if handle is None or vector is None else nearest_rows(handle, vector, where, VECTOR_CANDIDATES)


def chosen_paths(paths: Collection[str] | None, defaults: Collection[str]) -> set[str]:
    """The paths a search uses: those asked for, else the agent's defaults; unknown names are an error."""
    chosen = set(defaults if paths is None else paths)
    unknown = chosen - set(PATHS)
    if unknown:
        raise ValueError(f"unknown search path(s) {', '.join(sorted(unknown))}: use {', '.join(PATHS)}")
    return chosen
