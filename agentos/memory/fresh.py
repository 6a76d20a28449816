"""Messages saved but not yet committed: matched in memory, so a search finds a message at once.

A LanceDB commit takes a few milliseconds; in that window a message lives only in the writer's
queue. Recall searches those rows here and ranks them with the table's results: by meaning
exactly (cosine, as the index re-ranks), by keywords approximately (BM25 scores need the
index's term statistics, so a fresh message is placed by how many query words it holds).
"""

from __future__ import annotations

import re
import unicodedata
from datetime import datetime, timezone
from typing import Any, Iterable, Sequence

import numpy as np

# The English stop words the BM25 index leaves out (the common Lucene list), so neither side counts them.
STOP_WORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there "
    "these they this to was will with".split()
)
_WORD = re.compile(r"\w+")
_SUFFIXES = ("ingly", "edly", "ing", "ies", "ied", "ed", "es", "ly", "s")


def stem(word: str) -> str:
    """A light English stem, applied alike to queries and messages ("running", "runs", "run" -> "run")."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)] + ("y" if suffix in ("ies", "ied") else "")
            break
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiouls":
        word = word[:-1]  # running -> runn -> run
    return word[:-1] if len(word) > 3 and word.endswith("e") else word  # hoping/hope -> hop


def terms(text: str) -> set[str]:
    """The distinct stemmed words of `text`: lower-cased, accents folded, stop words left out."""
    folded = unicodedata.normalize("NFKD", text.lower())
    folded = "".join(c for c in folded if not unicodedata.combining(c))
    return {stem(w) for w in _WORD.findall(folded) if w not in STOP_WORDS and len(w) <= 40}


def place(query: str, hits: Sequence[tuple[str, str]], fresh: Sequence[tuple[str, str]]) -> list[str]:
    """Ids of the keyword ranking with fresh matches merged in; `hits` are (id, text) best first, `fresh`
    oldest first. A fresh message goes before the first hit holding fewer of the query's words, so among
    equals it comes after the committed ones, as it will once committed; fresh messages holding none of
    the words are left out."""
    wanted = terms(query)
    scored = [(len(wanted & terms(text)), key) for key, text in fresh]
    waiting = sorted(((n, key) for n, key in scored if n), key=lambda s: -s[0])
    shown = {key for _, key in waiting}
    out: list[str] = []
    for key, text in hits:
        if key in shown:
            continue  # committed while we searched: the fresh copy stands
        held = len(wanted & terms(text))
        while waiting and waiting[0][0] > held:
            out.append(waiting.pop(0)[1])
        out.append(key)
    return out + [key for _, key in waiting]


def nearest(query_vector: Sequence[float], hits: Sequence[tuple[str, float]],
            fresh: Iterable[tuple[str, Sequence[float]]], limit: int) -> list[str]:
    """Ids of the `limit` nearest by cosine distance: the table's (id, distance) hits and fresh (id, vector).
    Equal distances (to 6 places, as both sides round differently) are ordered by id, as in `nearest_rows`."""
    q = np.asarray(query_vector, dtype=np.float32)
    q = q / (np.linalg.norm(q) or 1.0)
    merged = dict(hits)
    for key, vector in fresh:
        v = np.asarray(vector, dtype=np.float32)
        merged[key] = float(1.0 - q @ v / (np.linalg.norm(v) or 1.0))
    return [key for key, _ in sorted(merged.items(), key=lambda kv: (round(kv[1], 6), kv[0]))[:limit]]


def within(row: dict[str, Any], start: datetime | None, end: datetime | None, roles: Sequence[str] | None) -> bool:
    """Whether a fresh row passes the search's date and role filters."""
    when = row["created_at"]
    if when.tzinfo is None:  # stored as UTC, as LanceDB does with a naive time (bounds come as UTC)
        when = when.replace(tzinfo=timezone.utc)
    return (
        (not roles or row["role"] in roles)
        and (start is None or when >= start)
        and (end is None or when <= end)
    )


def rows_of(parts: Iterable[Any]) -> list[dict[str, Any]]:
    """Row dicts from the writer's queued parts (lists of dicts, or pyarrow tables)."""
    out: list[dict[str, Any]] = []
    for part in parts:
        out.extend(part if isinstance(part, list) else part.to_pylist())
    return out
