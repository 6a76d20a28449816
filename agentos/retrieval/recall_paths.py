"""The ranked lists recall search fuses: keywords, the question's rewritten variants, meaning, time and the entity
graph. Each path gives message ids best first (a retrieval.pipeline `RankedPath`: the generic ones are in
retrieval.table_paths, recall's own below); weighted reciprocal-rank fusion joins any number of them, so a path
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
- window: BM25 over the same two-turn windows, each turn scored by the best window that holds it, whichever turn of
  it it is (retrieval.windows);
- answer: the same exchanges, credited to the later turn only when the earlier one asks (retrieval.windows);
- time: a temporal expression in the question, resolved against the agent's time, ranks the messages in that range
  (BM25 within it), with the turns said near it that place what they tell inside it: a boost, never a filter; a
  question that asks when ranks the keyword hits that say when;
- graph: messages linked to the entities of the question, with one- and two-hop expansion (when the entity graph
  tier is installed);
- facts: the messages the facts that best match the question came from (when consolidation has made facts);
- rewrite: BM25 over the keyword queries a language model writes for the question (retrieval.model_stages);
- rerank: not a list: a language model reorders the fused list's best candidates (retrieval.model_stages);
- cross: not a list: a cross-encoder (its model in the same wheel as bge's) reorders them (retrieval.cross_encoder).

rewrite and rerank need a model for search (the agent's, or `search.model`); each costs a model call per new
question, so they are off unless chosen.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from agentos.retrieval.pipeline import Ranked
from agentos.retrieval.search import MAX_CANDIDATES, date_clauses, fts_rows
from agentos.retrieval.table_paths import together
from agentos.retrieval.temporal.questions import asks_when
from agentos.retrieval.temporal.resolver import resolve_time, without_time
from agentos.storage.reads import Read

log = logging.getLogger(__name__)

PATHS = ("keyword", "speakers", "neighbours", "time", "exchange", "window", "answer", "variants", "graph", "facts", "vector",
         "rewrite", "rerank", "cross")
EXCHANGE_PATHS = ("exchange", "window", "answer")  # those that read the exchanges table
# what agents search with unless their settings say: keyword and the paths whose gain over keywords alone excludes
# zero on both held-out folds of LoCoMo (`python -m agentos.eval locomo FILE --ablation --folds 2`, docs/evaluation.md)
DEFAULT_PATHS = ["keyword", "speakers", "neighbours", "exchange", "window", "answer", "vector"]
FORMER_DEFAULTS = [["keyword", "speakers", "neighbours", "time", "vector"],  # agents saved with these get DEFAULT_PATHS
                   ["keyword", "speakers", "neighbours", "time", "exchange", "vector"]]
MATCHING_PATHS = ["keyword", "vector"]  # searches typed by a person (TUI, CLI): what matches, no neighbours
STAGES = ("speakers", "neighbours", "rerank", "cross")  # not lists of their own: they reorder what the others found
# the lists that weigh a named speaker themselves (speakers on), and the stages that come after the speakers' one:
# when no other list found anything and no other stage is chosen, putting the named speakers' turns first again
# would count the preference twice
SPEAKER_AWARE = ("keyword", "vector", "speakers", "rerank", "cross")
MODEL_PATHS = ("rewrite", "rerank")  # those that ask a language model
# how far from a question's time a turn may be said and still tell of it: "yesterday", "last week", "last month"
TOLD_WITHIN = timedelta(days=31)
TOLD_CHARS = 1000  # of a turn, read for the time it tells of
# RRF weights; vector's 1.0 was chosen from a grid (0.25, 0.5, 1.0; bge-small-en-v1.5) on each LoCoMo fold and held on
# the other: +0.012 [+0.001, +0.024] and +0.013 [+0.001, +0.025] hit@10 over 0.5; the others kept 0.5 on both folds
DEFAULT_WEIGHTS = {"keyword": 1.0, "exchange": 0.5, "window": 0.5, "answer": 0.5, "variants": 0.5, "vector": 1.0, "time": 0.5,
                   "graph": 0.5, "facts": 0.5, "rewrite": 0.5}


@dataclass
class TimeReads:
    """What the time path read for a question that names a time: BM25 within its range, and near it."""

    hint: Any  # the question's TimeHint
    within: list[dict[str, Any]]
    near: list[dict[str, Any]]


async def time_read(handle: Any, question: str, where: str, now: datetime, columns: Sequence[str]) -> TimeReads | None:
    """For a question that names a time: BM25 within that range, and within TOLD_WITHIN either side of it (ranked by
    `time_ranked` once read); None for a question without a time. `columns` must hold content and created_at."""
    hint = resolve_time(question, now)
    if hint is None:
        return None
    words = without_time(question).strip() or question
    reach = max(TOLD_WITHIN, hint.end - hint.start)
    inside = date_clauses("created_at", hint.start, hint.end)
    near = [*date_clauses("created_at", hint.start - reach, hint.end + reach), f"NOT ({' AND '.join(inside)})"]
    within, around = await together([fts_rows(handle, words, "search_text", " AND ".join([where, *clauses]),
                                              MAX_CANDIDATES, columns) for clauses in (inside, near)])
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
    return resolve_time(row["content"][:TOLD_CHARS], row["created_at"]) if row.get("content") else None


def dated_ids(question: str, rows: Sequence[dict[str, Any]]) -> list[str] | None:
    """For a question that asks when: the keyword hits that say when something happened (a temporal expression
    that resolves against the message's own time), in their keyword order; None for other questions."""
    if not asks_when(question):
        return None
    return [r["id"] for r in rows if told_time(r) is not None]


def chosen_paths(paths: Collection[str] | None, defaults: Collection[str]) -> set[str]:
    """The paths a search uses: those asked for, else the agent's defaults; unknown names are an error."""
    chosen = set(defaults if paths is None else paths)
    unknown = chosen - set(PATHS)
    if unknown:
        raise ValueError(f"unknown search path(s) {', '.join(sorted(unknown))}: use {', '.join(PATHS)}")
    return chosen


@dataclass(frozen=True)
class TimePath:
    """The time path: for a question that names a time, the turns said in it or telling of it (`time_read`,
    `time_ranked`); for one that asks when, the keyword matches that say when (`dated_ids`)."""

    weight: float
    handle: Any
    question: str
    where: str
    now: datetime
    columns: Sequence[str]
    name: str = "time"

    def read(self) -> Read:
        return time_read(self.handle, self.question, self.where, self.now, self.columns)

    def rank(self, found: TimeReads | None, before: Mapping[str, Ranked]) -> Ranked | None:
        if found is not None:
            rows = time_ranked(found)
            return Ranked([r["id"] for r in rows], rows)
        keyword = before.get("keyword")
        dated = dated_ids(self.question, keyword.rows) if keyword is not None and keyword.rows else None
        return Ranked(dated) if dated else None


class MessageRanker(Protocol):
    """A tier that ranks messages for a query (the entity graph, fact memory)."""

    name: str

    def ranked_messages(self, query: str, limit: int) -> list[str] | None: ...


@dataclass(frozen=True)
class RankerPath:
    """A tier's ranked messages as a path (graph, facts): it reads through its own tier, on the caller's thread; when
    it fails or finds nothing it is left out."""

    name: str
    weight: float
    ranker: MessageRanker
    query: str
    limit: int = MAX_CANDIDATES

    def read(self) -> None:
        return None

    def rank(self, found: None, before: Mapping[str, Ranked]) -> Ranked | None:
        try:
            ranked = self.ranker.ranked_messages(self.query, self.limit)
        except Exception as exc:  # noqa: BLE001 - a failing path is left out; search still answers
            log.warning("%s search left out: %s", self.name, exc)
            return None
        return Ranked(list(ranked)) if ranked else None
