"""Search scores that look past a turn's own words: who spoke it, and what was said around it.

- speakers: a name in the query that is the name of someone in the conversation asks about what that person
  said, so it is matched against who spoke, not as a word of the text: it leaves the BM25 query and the query
  that is embedded, that person's own turns score (1 + SPEAKER_BOOST) times their BM25, and SPEAKER_NEARER is
  added to their cosine similarity in the vector list. As a word, a speaker's name is in a share of all turns
  and lifts short ones that only say it ("Thanks, Sam!"). Once every path is fused and neighbours have spread,
  their turns score (1 + SPEAKER_FIRST) times (`speakers_first`), when lists or stages that do not weigh who
  spoke are among them: the others' turns that match, often questions put to them about it, come after theirs
  unless they match much better.
- neighbours: a hit's fused score (from every path) spreads to the turns around it, most to the replies after
  it: an answer is often in the reply to the turn that matched the question, and a story is told across turns.
  Turns are counted among the searchable ones, so tool traffic between them is skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from datetime import datetime
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from agentos.retrieval.query import content_words
from agentos.retrieval.search import MAX_CANDIDATES
from agentos.times import as_utc

SPEAKER_BOOST = 1.0
SPEAKER_NEARER = 0.02  # chosen on each half of LoCoMo (0.01-1.0 tried), confirmed on the other: docs/evaluation.md
SPEAKER_FIRST = 2.0  # chosen on each half of LoCoMo (0.5-100 tried), confirmed on the other: docs/evaluation.md
FOLLOWING = (0.4, 0.2, 0.1)  # the share of a turn's score that the 1st, 2nd and 3rd turns after it receive
PRECEDING = (0.2, 0.1)  # the share that the turns before it receive


class Asked(NamedTuple):
    """A search's query, the speakers it names, and its words without them (what keywords and vectors match)."""

    query: str
    named: set[str]
    words: str


def named_speakers(query: str, speakers: Collection[str]) -> tuple[set[str], str]:
    """The speakers a query names (`speaker_words`) and the query without them; the names stay in it when nothing
    else would be left to match ("Who is Sam?")."""
    whole, parts = speaker_words(speakers)
    if not whole and not parts:
        return set(), query
    named: set[str] = set()
    kept: list[str] = []
    for at, word in enumerate(query.split()):
        plain = _bare(word)
        speaker = whole.get(plain) or (parts.get(plain) if at else None)  # a question's first word is capitalised anyway
        if speaker and plain[:1].isupper():
            named.add(speaker)
        else:
            kept.append(word)
    rest = " ".join(kept)
    return named, rest if content_words(rest) else query


def speaker_words(speakers: Collection[str]) -> tuple[dict[str, str], dict[str, str]]:
    """The speakers named by one word, capitalised, with or without a possessive 's: by their whole name ("Sam"),
    and by a word of a longer name that no other speaker's name has ("Ada" or "Lovelace" for "Ada Lovelace")."""
    speakers = tuple(speakers)  # a copy taken at once: the writer's thread may add a speaker meanwhile
    whole = {s: s for s in speakers if len(s) > 1 and " " not in s}
    owners: dict[str, set[str]] = {}
    for speaker in speakers:
        for word in {_bare(w) for w in speaker.split()} if " " in speaker else ():
            if len(word) > 1 and word not in whole:
                owners.setdefault(word, set()).add(speaker)
    return whole, {word: next(iter(named)) for word, named in owners.items() if len(named) == 1}


def _bare(word: str) -> str:
    """A word without the punctuation around it or a possessive ending."""
    core = word.strip(".,;:!?\"()[]“”‘")
    return core.removesuffix("'s").removesuffix("’s").removesuffix("'").removesuffix("’")


def speaker_scores(rows: Iterable[dict[str, Any]], named: Collection[str]) -> dict[str, float]:
    """BM25 scores by id, with the named speakers' own turns boosted."""
    return {r["id"]: float(r["_score"]) * (1.0 + SPEAKER_BOOST if r.get("name") in named else 1.0) for r in rows}


def spread(scores: dict[str, float], order: TurnOrder) -> list[tuple[str, float]]:
    """Every turn's score plus the shares its neighbours in conversation order pass to it, best first; ties keep
    conversation order. Hits the order does not hold (yet) keep their own score."""
    total: dict[str, float] = {}
    place: dict[str, int] = {}
    for key, score in scores.items():
        total[key] = total.get(key, 0.0) + score
        at = order.position(key)
        if at is None:
            continue
        place[key] = at
        for steps, shares in ((1, FOLLOWING), (-1, PRECEDING)):
            for distance, share in enumerate(shares, start=1):
                other = order.id_at(at + steps * distance)
                if other is not None:
                    total[other] = total.get(other, 0.0) + share * score
                    place.setdefault(other, at + steps * distance)
    return sorted(total.items(), key=lambda kv: (-kv[1], place.get(kv[0], len(order))))


def vector_ranking(rows: Sequence[dict[str, Any]], named: Collection[str], order: TurnOrder) -> list[str]:
    """The vector list: nearest first by cosine similarity, the named speakers' turns SPEAKER_NEARER nearer."""
    def similarity(row: dict[str, Any]) -> float:
        return 1.0 - float(row["_distance"]) + (SPEAKER_NEARER if order.name_of(row["id"]) in named else 0.0)
    return [r["id"] for r in sorted(rows, key=lambda r: -similarity(r))]  # stable: equals keep the read's order


def speakers_first(ranked: Sequence[tuple[str, float]], named: Collection[str],
                   order: TurnOrder) -> list[tuple[str, float]]:
    """The fused list with the named speakers' own turns scoring (1 + SPEAKER_FIRST) times, best first; ties keep
    the list's order, and a hit the order does not hold keeps its score."""
    if not named:
        return list(ranked)
    scored = [(key, score * (1.0 + SPEAKER_FIRST) if order.name_of(key) in named else score) for key, score in ranked]
    return sorted(scored, key=lambda kv: -kv[1])


def keyword_ranking(pool: Sequence[dict[str, Any]], named: Collection[str]) -> list[str]:
    """The keyword list: the BM25 pool with the named speakers' turns boosted."""
    scores = speaker_scores(pool, named)
    return [key for key, _ in sorted(scores.items(), key=lambda kv: -kv[1])]


def around(fused: Sequence[tuple[str, float]], order: TurnOrder, allowed: Callable[[str], bool]) -> list[tuple[str, float]]:
    """The fused list with every score spread to its neighbours: the ids that pass `allowed` (the search's
    filters), no more of them than the fusion had or MAX_CANDIDATES, whichever is more."""
    ranked = [kv for kv in spread(dict(fused), order) if allowed(kv[0])]
    return ranked[: max(len(fused), MAX_CANDIDATES)]


class TurnOrder:
    """One agent's searchable turns in conversation order, and who spoke them: read whole (`turns_after`) at the
    first search that needs them, then extended with each committed step, so that searches read nothing more."""

    def __init__(self, turns: pa.Table | None = None) -> None:
        self.ids: list[str] = []
        self._index: dict[str, int] = {}
        self._roles: list[str] = []
        self._names: list[str | None] = []
        self._times: list[float] = []  # POSIX seconds, for the search filters
        self.speakers: set[str] = set()
        self.last_seq = -1
        if turns is not None:
            self.catch_up(turns)

    def __len__(self) -> int:
        return len(self.ids)

    def catch_up(self, turns: pa.Table) -> None:
        """Take in turns read by `turns_after` (those held are skipped)."""
        turns = turns.filter(pc.greater(turns.column("seq"), self.last_seq)).sort_by("seq")
        if not turns.num_rows:
            return
        start = len(self.ids)
        fresh = turns.column("id").to_pylist()
        self.ids += fresh
        self._index.update((key, start + at) for at, key in enumerate(fresh))
        self._roles += turns.column("role").to_pylist()
        self._names += turns.column("name").to_pylist()
        self._times += (pc.cast(turns.column("created_at"), pa.int64()).to_numpy() / 1e6).tolist()
        self.speakers.update(n for n in pc.unique(turns.column("name")).to_pylist() if n)
        self.last_seq = int(turns.column("seq")[-1].as_py())

    def extend(self, messages: Iterable[tuple[str, str, datetime, str | None]]) -> None:
        """Append searchable turns, as (id, role, created_at, name), after those held."""
        for key, role, created, name in messages:
            if key in self._index:
                continue
            self._index[key] = len(self.ids)
            self.ids.append(key)
            self._roles.append(role)
            self._names.append(name)
            self._times.append(as_utc(created).timestamp())
            if name:
                self.speakers.add(name)

    def position(self, key: str) -> int | None:
        return self._index.get(key)

    def name_of(self, key: str) -> str | None:
        """Who spoke a turn held here (None: not held, or no name)."""
        at = self._index.get(key)
        return None if at is None else self._names[at]

    def id_at(self, position: int) -> str | None:
        return self.ids[position] if 0 <= position < len(self.ids) else None

    def allows(self, key: str, start: datetime | None, end: datetime | None, roles: Collection[str] | None) -> bool:
        """Whether a turn held here passes a search's role and date filters."""
        at = self._index.get(key)
        if at is None:
            return False
        when = self._times[at]
        return ((not roles or self._roles[at] in roles) and (start is None or when >= start.timestamp())
                and (end is None or when <= end.timestamp()))


TURN_COLUMNS = ["id", "seq", "role", "created_at", "name"]


async def turns_after(handle: Any, where: str, seq: int) -> pa.Table:
    """The searchable turns that `where` keeps (the agent's) after `seq`, as a table of TURN_COLUMNS."""
    query = handle.query().where(f"{where} AND seq > {seq} AND search_text IS NOT NULL").select(TURN_COLUMNS)
    return await query.to_arrow()
