"""Spans and merging: the words around a resolved phrase that change it ("early", "the week of", "two days before",
"since"), two phrases joined into one range, a year shared across a query, offsets from undated events, and the span
the query means."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import date, datetime, timedelta

from agentos.retrieval.temporal.ranges import (
    DayRange,
    in_year,
    shift,
    third_of,
    week_of,
    weekday_beside,
    weekend_beside,
)
from agentos.retrieval.temporal.rules import Span, rule_atoms
from agentos.retrieval.temporal.words import NUM, WD, WEEKDAYS, ending_at, parse_count

_THIRDS = re.compile(r"\b(?:(?:the\s+)?(?P<mod>early|mid|middle|late)(?:\s+in)?|the\s+(?P<part>beginning|start|middle|end)\s+of)"
                     r"(?:\s+|\s*-\s*)$", re.I)
_THIRD_INDEX = {"early": 0, "beginning": 0, "start": 0, "mid": 1, "middle": 1, "late": 2, "end": 2}
_WEEK_OF = re.compile(r"\bthe\s+(?P<which>week|weekend)\s+of\s+$", re.I)
_OFFSET = re.compile(rf"\b(?:(?P<num>{NUM})\s+(?P<unit>day|week|month|year)s?|"
                     rf"(?:the\s+(?:last\s+)?|last\s+)(?P<the>day|weekend|week|month|year|{WD})|(?P<weekday>{WD}))"
                     r"\s+(?P<dir>before|after|prior\s+to)\s+$", re.I)
_RANGE_LEAD = re.compile(r"\b(?P<lead>between|from)\s+$", re.I)
_RANGE_JOIN = re.compile(r"\s*(?P<join>and|to|until|till|through|thru|-|–|—)\s*", re.I)
_OPEN = re.compile(r"\b(?P<dir>before|after|since|until|till|prior\s+to|up\s+to|earlier\s+than|later\s+than)\s+$", re.I)
_PREPOSITION = re.compile(r"\b(?:back\s+in|some\s*time\s+in|sometime|in|on|at|during|over|throughout|within|around|"
                          r"circa|for|from|of)\s+$", re.I)

# Offsets from an event the query does not date: "two days before the trip", "a week later", "the next day".
_EVENT_UNIT = r"minute|hour|day|night|morning|afternoon|evening|weekend|week|month|year"
_EVENT_OFFSETS = [
    re.compile(rf"\b(?:(?P<num>{NUM})\s+(?P<unit>{_EVENT_UNIT})s?|the\s+(?P<the>{_EVENT_UNIT}))\s+"
               r"(?P<dir>before|after|prior\s+to|earlier|later|afterwards?|beforehand|following|preceding)\b", re.I),
    re.compile(rf"\bthe\s+(?P<dir>next|following|previous|preceding|prior)\s+(?P<the>{_EVENT_UNIT})\b", re.I),
]
_BACKWARD = frozenset({"before", "prior", "earlier", "beforehand", "preceding", "previous"})


def _offset(found: DayRange, match: re.Match[str]) -> DayRange:
    """"two days before X" (X moved) or "the week after X" (the unit next to X)."""
    backward = match.group("dir").lower().startswith(("before", "prior"))
    if named := match.group("the") or match.group("weekday"):  # "the week before X", "Sunday before X"
        unit = named.lower()
        if unit == "day":
            day = found.first - timedelta(days=1) if backward else found.last + timedelta(days=1)
            return replace(found, first=day, last=day, unit="day")
        if unit == "weekend":
            return weekend_beside(found, backward)
        if unit in WEEKDAYS:
            day = weekday_beside(found, WEEKDAYS.index(unit), backward)
            return replace(found, first=day, last=day, unit="day")
        if backward:
            return replace(found, first=shift(found.first, -1, unit), last=found.first - timedelta(days=1), unit="span")
        return replace(found, first=found.last + timedelta(days=1), last=shift(found.last, 1, unit), unit="span")
    count, vague = parse_count(match.group("num"))
    unit, sign = match.group("unit").lower(), -1 if backward else 1
    if vague:
        near, far = shift(found.first, sign * (count - 1), unit), shift(found.last, sign * (count + 1), unit)
        return replace(found, first=min(near, far), last=max(near, far), unit="span")
    return replace(found, first=shift(found.first, sign * count, unit), last=shift(found.last, sign * count, unit))


def _modify(query: str, span: Span) -> Span:
    """Apply the words just before a span: early/mid/late, the week or weekend of, two days before."""
    third = ending_at(_THIRDS, query, span.start)
    if third and span.range.unit != "day":
        index = _THIRD_INDEX[(third.group("mod") or third.group("part")).lower()]
        span = Span(third.start(), span.end, third_of(span.range, index))
    week = ending_at(_WEEK_OF, query, span.start)
    if week and span.range.unit == "day":
        span = Span(week.start(), span.end, week_of(span.range, week.group("which").lower()))
    offset = ending_at(_OFFSET, query, span.start)
    if offset:
        span = Span(offset.start(), span.end, _offset(span.range, offset))
    return span


def _join(query: str, left: Span, right: Span) -> Span | None:
    """"between X and Y", "from X to Y", "X-Y" as one span, or None when the two are not a range."""
    join = _RANGE_JOIN.fullmatch(query, left.end, right.start)
    if join is None:
        return None
    lead = ending_at(_RANGE_LEAD, query, left.start)
    if join.group("join").lower() == "and" and (lead is None or lead.group("lead").lower() != "between"):
        return None
    first, last = _align_years(left.range, right.range)
    if last.last < first.first:
        return None
    return Span(lead.start() if lead else left.start, right.end, DayRange(first.first, last.last, "span"))


def _align_years(left: DayRange, right: DayRange) -> tuple[DayRange, DayRange]:
    """Give a yearless end of a range the other end's year ("from May 3 to May 10, 2023")."""
    if left.anchor == "floating" and right.anchor != "floating":
        left = in_year(left, right.last.year)
        if left.first > right.last:
            left = in_year(left, right.last.year - 1)
    elif right.anchor == "floating" and left.anchor != "floating":
        right = in_year(right, left.first.year)
    if right.anchor == "floating" and right.last < left.first:
        right = in_year(right, right.first.year + 1)
    return left, right


def _merge(query: str, spans: list[Span]) -> list[Span]:
    """Spans with each "from X to Y" pair made one."""
    merged: list[Span] = []
    index = 0
    while index < len(spans):
        pair = _join(query, spans[index], spans[index + 1]) if index + 1 < len(spans) else None
        merged.append(pair or spans[index])
        index += 2 if pair else 1
    return merged


def _inherit_year(spans: list[Span]) -> list[Span]:
    """Yearless dates take the one year the query names elsewhere ("in 2022 ... on May 8")."""
    years = {s.range.first.year for s in spans if s.range.first.year == s.range.last.year
             and (s.range.anchor == "dated" or s.range.unit == "year")}
    if len(years) != 1:
        return spans
    (year,) = years
    return [replace(s, range=in_year(s.range, year)) if s.range.anchor == "floating" else s for s in spans]


def _open(query: str, span: Span, today: date) -> Span:
    """"before X", "after X" (a year on the open side), "since X" (up to today), "until X"."""
    found = ending_at(_OPEN, query, span.start)
    if found is None:
        return span
    word, r = found.group("dir").lower().split()[0], span.range
    if word in ("before", "prior", "earlier"):
        first, last = shift(r.first, -1, "year"), r.first - timedelta(days=1)
    elif word in ("after", "later"):
        first, last = r.last + timedelta(days=1), shift(r.last, 1, "year")
    elif word == "since":
        first, last = r.first, max(today, r.last)
    else:
        first, last = shift(r.last, -1, "year"), r.last
    return Span(found.start(), span.end, DayRange(first, last, "span"))


def _absorb(query: str, span: Span) -> Span:
    """The span widened over the preposition that introduces it ("in", "on", "during")."""
    found = ending_at(_PREPOSITION, query, span.start)
    return replace(span, start=found.start()) if found else span


def find_spans(query: str, now: datetime) -> list[Span]:
    """The query's temporal phrases, resolved and composed, in order."""
    today = now.date()
    atoms = rule_atoms(query, now)
    modified = [_modify(query, s) for s in atoms]
    # "the Sunday before May 8" takes in "Sunday", which alone would be the Sunday before today; so does "on Sunday
    # before May 8", whose "on Sunday" it only overlaps
    grown = [m for atom, m in zip(atoms, modified, strict=True) if m.start < atom.start]

    def taken_in(s: Span) -> bool:
        covered = any(t is not s and t.start <= s.start and s.end <= t.end for t in modified)
        overlapped = all(s is not g for g in grown) and any(t.start < s.end and s.start < t.end for t in grown)
        return covered or overlapped

    modified = [s for s in modified if not taken_in(s)]
    spans = _merge(query, modified)
    spans = [_open(query, s, today) for s in _inherit_year(spans)]
    return [_absorb(query, s) for s in spans]


def event_offsets(query: str, spans: list[Span]) -> list[re.Match[str]]:
    """Offsets from undated events, outside the phrases already resolved."""
    found = [m for pattern in _EVENT_OFFSETS for m in pattern.finditer(query)]
    return [m for m in found if not any(s.start < m.end() and m.start() < s.end for s in spans)]


def widen(found: DayRange, offset: re.Match[str]) -> DayRange:
    """The range grown by an event offset on its side, so it still holds the answer."""
    groups = offset.groupdict()
    count, vague = parse_count(groups.get("num") or "1")
    unit = (groups.get("unit") or groups.get("the") or "day").lower()
    unit = {"weekend": "week", "minute": "day", "hour": "day"}.get(unit, unit)
    unit = unit if unit in ("day", "week", "month", "year") else "day"
    count += int(vague or not groups.get("num"))
    if offset.group("dir").lower().split()[0] in _BACKWARD:
        return replace(found, first=shift(found.first, -count, unit))
    return replace(found, last=shift(found.last, count, unit))


def chosen_span(spans: list[Span]) -> Span:
    """The first span, or the narrowest one whose range lies inside it."""
    first = spans[0]
    inside = [s for s in spans[1:] if first.range.first <= s.range.first and s.range.last <= first.range.last]
    return min(inside, key=lambda s: s.range.last - s.range.first) if inside else first
