"""Resolvers for times named on the calendar: dates, months, years, decades, seasons and holidays, written with their
year or placed in the most recent year that fits."""

from __future__ import annotations

import re
from datetime import date, datetime

from agentos.retrieval.temporal.ranges import DayRange, month_range, on_or_before, season_range, year_range
from agentos.retrieval.temporal.words import (
    AFTER_MONTH,
    AFTER_YEAR,
    BEFORE_YEAR,
    BETWEEN_TAIL,
    FROM_TAIL,
    HOLIDAY_CONTEXT,
    HOLIDAYS,
    MONTH_CONTEXT,
    SEASON_CONTEXT,
    VERB_MONTHS,
    YEAR_CONTEXT,
    counted_after,
    ending_at,
    month_number,
    verb_month_ok,
    word_before,
)


def iso_date(match: re.Match[str], now: datetime) -> DayRange | None:
    """2023-05-08, 2023/05/08."""
    try:
        day = date(int(match.group("year")), int(match.group("m")), int(match.group("d")))
    except ValueError:
        return None
    return DayRange(day, day, "day", "dated")


def month_day(match: re.Match[str], now: datetime) -> DayRange | None:
    """8 May 2023, May 8th, the 8th of May, May 12-14, 2023."""
    month, day = month_number(match.group("mon")), int(match.group("day"))
    last_day = int(match.group("day2") or day)
    if last_day < day:
        return None
    try:
        if match.group("year"):
            first = date(int(match.group("year")), month, day)
            return DayRange(first, first.replace(day=last_day), "day", "dated")
        if not verb_month_ok(match) or counted_after(match):
            return None
        found = on_or_before(month, day, now.date())
        return None if found is None else DayRange(found, found.replace(day=last_day), "day", "floating")
    except ValueError:
        return None


def month_year(match: re.Match[str], now: datetime) -> DayRange | None:
    """May 2023, May of 2023."""
    return month_range(int(match.group("year")), month_number(match.group("mon")), "dated")


def relative_month(match: re.Match[str], now: datetime) -> DayRange | None:
    """last May, this May, next May."""
    if match.group("mon").lower() in VERB_MONTHS and match.group("mon").islower():
        return None
    today, month, rel = now.date(), month_number(match.group("mon")), match.group("rel").lower()
    year = today.year
    if rel == "last" and month >= today.month:
        year -= 1
    elif rel == "next" and month <= today.month:
        year += 1
    return month_range(year, month, "relative")


def bare_month(match: re.Match[str], now: datetime) -> DayRange | None:
    """in May, since June, from May to July: the most recent such month that has begun."""
    word = word_before(match.string, match.start())
    if word not in MONTH_CONTEXT and not ending_at(AFTER_MONTH, match.string, match.start()):
        return None
    if word == "from" and not FROM_TAIL.match(match.string, match.end()):
        return None
    if word == "between" and not BETWEEN_TAIL.match(match.string, match.end()):
        return None
    today, month = now.date(), month_number(match.group("mon"))
    return month_range(today.year if month <= today.month else today.year - 1, month, "floating")


def year_alone(match: re.Match[str], now: datetime) -> DayRange | None:
    """in 2023, the 2023 election; not "Room 2023" or "2023 people"."""
    in_context = word_before(match.string, match.start()) in YEAR_CONTEXT
    after_year = ending_at(AFTER_YEAR, match.string, match.start())
    if not (in_context or after_year or BEFORE_YEAR.match(match.string, match.end())):
        return None
    if counted_after(match):
        return None
    return year_range(int(match.group("year")), "dated")


def decade(match: re.Match[str], now: datetime) -> DayRange | None:
    """the 1990s."""
    start = int(match.group("dec"))
    return DayRange(date(start, 1, 1), date(start + 9, 12, 31), "decade", "dated")


def season_year(match: re.Match[str], now: datetime) -> DayRange | None:
    """the summer of 2023, winter 2022."""
    return season_range(match.group("season"), int(match.group("year")), "dated")


def relative_season(match: re.Match[str], now: datetime) -> DayRange | None:
    """last summer (the latest one over), this spring, next winter."""
    today, name = now.date(), match.group("season")
    rel = match.group("rel").lower().split()[-1]
    candidates = [season_range(name, year, "relative") for year in range(today.year - 2, today.year + 2)]
    if rel in ("last", "past"):
        return [season for season in candidates if season.last < today][-1]
    if rel == "next":
        return next(season for season in candidates if season.first > today)
    in_winter_tail = name.lower() == "winter" and today.month <= 2
    return season_range(name, today.year - 1 if in_winter_tail else today.year, "relative")


def bare_season(match: re.Match[str], now: datetime) -> DayRange | None:
    """in the summer, during winter: the most recent such season that has begun."""
    if word_before(match.string, match.start()) not in SEASON_CONTEXT:
        return None
    name, written = match.group("season"), match.group(0).lower()
    if name.lower() == "fall" and not written.startswith("the"):
        return None
    today = now.date()
    begun = [season_range(name, year, "floating") for year in range(today.year - 1, today.year + 1)]
    return [season for season in begun if season.first <= today][-1]


def holiday(match: re.Match[str], now: datetime) -> DayRange | None:
    """Christmas 2022, last Christmas, on Halloween, New Year's Eve."""
    key = " ".join(match.group("hol").lower().replace("’", "'").split()).replace("years", "year's")
    key = key.replace("valentines", "valentine's")
    month, day = HOLIDAYS[key]
    today, rel = now.date(), (match.group("rel") or "").lower()
    if match.group("year"):
        found = date(int(match.group("year")), month, day)
        return DayRange(found, found, "day", "dated")
    if rel:
        candidates = [date(year, month, day) for year in range(today.year - 1, today.year + 2)]
        found = {"last": max(d for d in candidates if d < today), "next": min(d for d in candidates if d > today),
                 "this": date(today.year, month, day)}[rel]
        return DayRange(found, found, "day", "relative")
    if word_before(match.string, match.start()) not in HOLIDAY_CONTEXT:
        return None
    latest = on_or_before(month, day, today)
    return None if latest is None else DayRange(latest, latest, "day", "floating")
