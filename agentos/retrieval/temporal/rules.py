"""The rule table: one pattern per kind of temporal phrase with the resolver that places it, and the phrases a query
holds (its atoms), each resolved against the reference time."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from agentos.retrieval.temporal.absolute import (
    bare_month,
    bare_season,
    decade,
    holiday,
    iso_date,
    month_day,
    month_year,
    relative_month,
    relative_season,
    season_year,
    year_alone,
)
from agentos.retrieval.temporal.ranges import DayRange, Resolver
from agentos.retrieval.temporal.relative import (
    ago,
    calendar_unit,
    coming,
    fixed_days,
    named_weekday,
    part_of_current,
    rolling,
    two_away,
)
from agentos.retrieval.temporal.words import DATE_LEAD, DAY, DAY2, HOLIDAY, MON, MON_FULL, NUM, ORD, SEASON, UNIT, WD, YEAR


@dataclass(frozen=True)
class Span:
    """A resolved range and where its words lie in the query."""

    start: int
    end: int
    range: DayRange


# A word or digit that every rule's match holds one of (months, weekdays and units as prefixes): text without any
# names no time. It must grow with the rules; the tests' phrases pass through it.
MAY_NAME_TIME = re.compile(
    r"\d|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|mon|tue|wed|thu|fri|sat|sun|spring|summer|autumn|fall|"
    r"winter|christmas|new\s+year|halloween|valentine|today|tonight|yesterday|tomorrow|recently|lately|this|last|next|"
    r"past|coming|other|earlier|later|minute|hour|day|week|month|year|decade)", re.I)


def _rule(pattern: str, resolve: Resolver) -> tuple[re.Pattern[str], Resolver]:
    """A compiled case-insensitive pattern with its resolver."""
    return re.compile(pattern, re.I), resolve


RULES: list[tuple[re.Pattern[str], Resolver]] = [
    _rule(r"(?<![\d/.-])(?P<year>(?:19|20)\d\d|2100)(?P<sep>[-/.])(?P<m>1[0-2]|0?[1-9])(?P=sep)"
          r"(?P<d>3[01]|[12]\d|0?[1-9])(?!\d|[-/.]\d)", iso_date),
    _rule(rf"\b{DATE_LEAD}(?:the\s+)?{DAY}{ORD}?{DAY2}\s+(?:of\s+)?{MON}(?:,?\s+{YEAR})?", month_day),
    _rule(rf"\b{DATE_LEAD}{MON}\s+(?:the\s+)?{DAY}{ORD}?{DAY2}(?![\d:])(?:,?\s+{YEAR})?", month_day),
    _rule(rf"\b{MON}(?:\s+of)?,?\s+{YEAR}", month_year),
    _rule(rf"\b(?<!the\s)(?P<rel>last|this|next)\s+{MON_FULL}", relative_month),
    _rule(rf"\b{MON_FULL}", bare_month),
    _rule(rf"\b(?:the\s+)?{SEASON}(?:\s+of)?,?\s+{YEAR}", season_year),
    _rule(rf"\b(?P<rel>(?:the\s+)?past|this\s+past|(?<!the\s)(?:last|this|next))\s+{SEASON}\b", relative_season),
    _rule(rf"\b(?:the\s+)?{SEASON}\b", bare_season),
    _rule(r"\b(?:the\s+)?(?P<dec>(?:19|20)\d0)['’]?s\b", decade),
    _rule(rf"(?<![\d$#£€.,])\b{YEAR}", year_alone),
    _rule(rf"\b(?:(?<!the\s)(?P<rel>last|this|next)\s+)?{HOLIDAY}(?:,?\s+(?:of\s+)?{YEAR})?(?![\w'’])", holiday),
    _rule(r"\b(?:(?:earlier|later)\s+)?today\b|\btonight\b|\bthis\s+(?:morning|afternoon|evening)\b", fixed_days(0, 0)),
    _rule(r"\b(?:the\s+)?day\s+before\s+yesterday\b", fixed_days(-2, -2)),
    _rule(r"\byesterday(?:\s+(?:morning|afternoon|evening|night))?\b", fixed_days(-1, -1)),
    _rule(r"\b(?<!the\s)last\s+night\b(?!\s+of\b)", fixed_days(-1, 0)),
    _rule(r"\b(?:the\s+)?day\s+after\s+tomorrow\b", fixed_days(2, 2)),
    _rule(r"\btomorrow(?:\s+(?:morning|afternoon|evening|night))?\b", fixed_days(1, 1)),
    _rule(r"\b(?:recently|lately)\b", fixed_days(-30, 0)),
    _rule(r"\bthe\s+other\s+day\b", fixed_days(-7, -1)),
    _rule(r"\b(?<!the\s)(?P<rel>last|this|next|this\s+past(?=\s+weekend))\s+(?P<unit>weekend|week|month|year)\b"
          r"(?!\s+of\b)", calendar_unit),
    _rule(r"\bthe\s+(?P<unit>weekend|week|month|year)\s+(?P<dir>before\s+last|after\s+next)\b", two_away),
    _rule(rf"\b(?P<num>{NUM})\s+{UNIT}\s+(?P<dir>ago|from\s+now)\b", ago),
    _rule(rf"\b(?:(?:the|this)\s+(?:last|past)\s+(?:(?P<num>{NUM})\s+)?|(?:last|past)\s+(?P<num2>{NUM})\s+)"
          rf"{UNIT}\b(?!\s+(?:of|before|after)\b)", rolling),
    _rule(rf"\b(?:(?:in|within|over|during)\s+the\s+(?:next|coming)|the\s+coming)\s+(?:(?P<num>{NUM})\s+)?"
          rf"{UNIT}\b", coming),
    _rule(r"\b(?P<dir>earlier|later)\s+this\s+(?P<unit>week|month|year)\b", part_of_current),
    _rule(rf"\b(?P<rel>this\s+past|(?<!the\s)(?:last|this|next)|on)\s+(?P<wd>{WD})\b", named_weekday),
    _rule(rf"\b(?P<wd>{WD})\b", named_weekday),
]


def rule_atoms(query: str, now: datetime) -> list[Span]:
    """Every rule's matches, longest first at each position, without overlaps."""
    found = [Span(m.start(), m.end(), r) for pattern, resolve in RULES for m in pattern.finditer(query)
             if (r := resolve(m, now)) is not None]
    found.sort(key=lambda s: (s.start, s.start - s.end))
    chosen: list[Span] = []
    for span in found:
        if not chosen or span.start >= chosen[-1].end:
            chosen.append(span)
    return chosen
