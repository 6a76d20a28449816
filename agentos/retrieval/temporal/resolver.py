"""The temporal resolver: `resolve_time` places a query's temporal expression as a range of whole UTC days against a
reference time, and `without_time` takes those words out so keyword search sees only the rest."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from agentos.retrieval.temporal.rules import MAY_NAME_TIME
from agentos.retrieval.temporal.spans import chosen_span, event_offsets, find_spans, widen
from agentos.times import as_utc, day_end, day_start


@dataclass(frozen=True)
class TimeHint:
    """A range of whole UTC days that a query refers to, with the words it came from."""

    start: datetime  # aware UTC, the first microsecond of the first day
    end: datetime  # aware UTC, inclusive: the last microsecond of the last day
    phrase: str

    def contains(self, moment: datetime) -> bool:
        """Whether the moment falls inside the range (naive moments count as UTC)."""
        return self.start <= as_utc(moment) <= self.end

    def distance(self, moment: datetime) -> timedelta:
        """Zero inside the range, otherwise how far the moment lies outside it."""
        at = as_utc(moment)
        if at < self.start:
            return self.start - at
        if at > self.end:
            return at - self.end
        return timedelta(0)


def resolve_time(query: str, now: datetime) -> TimeHint | None:
    """The query's first (or, when nested, most specific) temporal expression as a UTC day range."""
    if not MAY_NAME_TIME.search(query):  # most turns: a tenth of the cost of trying every rule
        return None
    now = as_utc(now)
    spans = find_spans(query, now)
    if not spans:
        return None
    chosen = chosen_span(spans)
    found = chosen.range
    for offset in event_offsets(query, spans):
        found = widen(found, offset)
    return TimeHint(day_start(found.first), day_end(found.last), query[chosen.start:chosen.end].strip())


def without_time(query: str) -> str:
    """The query with its temporal phrases and event offsets taken out, for keyword search."""
    spans = find_spans(query, datetime.now(UTC))  # where the phrases lie does not depend on the reference time
    cuts = sorted([(s.start, s.end) for s in spans] + [(m.start(), m.end()) for m in event_offsets(query, spans)])
    kept, position = [], 0
    for start, end in cuts:
        if start >= position:
            kept.append(query[position:start])
            position = end
    kept.append(query[position:])
    return _tidy(" ".join(kept))


def _tidy(text: str) -> str:
    """Single spaces, no space before punctuation, no stray commas at the ends."""
    text = re.sub(r"\s+", " ", text)
    text = re.sub(r"\s+([?.!,;:])", r"\1", text)
    text = re.sub(r"([,;:])+(?=[?.!,;:])", "", text)
    return text.strip(" ,;:")
