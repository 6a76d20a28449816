"""Calendar arithmetic on ranges of whole days: months, years, seasons, weeks and the days beside a range."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta

from dateutil.relativedelta import relativedelta

SEASON_START = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}  # meteorological, northern


@dataclass(frozen=True)
class DayRange:
    """A day range and how it was found."""

    first: date
    last: date
    unit: str = "day"  # day, week, weekend, month, season, year, decade or span
    anchor: str = "relative"  # relative to now, "dated" (its year was written) or "floating" (year guessed)


# A rule's resolver: the range its match names, seen from a reference time (aware UTC), or None when it names none.
Resolver = Callable[[re.Match[str], datetime], DayRange | None]


def shift(day: date, count: int, unit: str) -> date:
    """The day moved by a number of days, weeks, months or years (clamped to the end of a shorter month)."""
    if unit in ("day", "week"):
        return day + timedelta(**{unit + "s": count})
    return day + relativedelta(**{unit + "s": count})


def month_range(year: int, month: int, anchor: str) -> DayRange:
    """A whole calendar month."""
    first = date(year, month, 1)
    return DayRange(first, first + relativedelta(day=31), "month", anchor)


def year_range(year: int, anchor: str) -> DayRange:
    """A whole calendar year."""
    return DayRange(date(year, 1, 1), date(year, 12, 31), "year", anchor)


def season_range(name: str, year: int, anchor: str) -> DayRange:
    """A meteorological season; winter starts in December of its year."""
    first = date(year, SEASON_START[name.lower()], 1)
    return DayRange(first, first + relativedelta(months=3, days=-1), "season", anchor)


def monday_of(day: date) -> date:
    """The Monday of the day's week."""
    return day - timedelta(days=day.weekday())


def on_or_before(month: int, day: int, today: date) -> date | None:
    """The most recent such calendar day not after today (None when no year has it)."""
    for year in range(today.year, today.year - 9, -1):
        try:
            found = date(year, month, day)
        except ValueError:
            continue
        if found <= today:
            return found
    return None


def calendar_period(unit: str, today: date, step: int) -> DayRange:
    """The calendar week, weekend, month or year some steps from the current one."""
    if unit in ("week", "weekend"):
        monday = monday_of(today) + timedelta(weeks=step)
        if unit == "weekend":
            return DayRange(monday + timedelta(days=5), monday + timedelta(days=6), "weekend")
        return DayRange(monday, monday + timedelta(days=6), "week")
    if unit == "month":
        first = today.replace(day=1) + relativedelta(months=step)
        return month_range(first.year, first.month, "relative")
    return year_range(today.year + step, "relative")


def third_of(found: DayRange, index: int) -> DayRange:
    """The early, middle or late third of a month (days 1-10, 11-20, 21-end), year, decade or other range."""
    if found.unit == "month":
        first = found.first.replace(day=(1, 11, 21)[index])
        last = found.last if index == 2 else found.first.replace(day=(10, 20)[index])
    elif found.unit == "year":
        first = found.first.replace(month=1 + 4 * index)
        last = first + relativedelta(months=4, days=-1)
    elif found.unit == "decade":
        years = ((0, 3), (4, 6), (7, 9))[index]
        first, last = date(found.first.year + years[0], 1, 1), date(found.first.year + years[1], 12, 31)
    else:
        days = (found.last - found.first).days + 1
        cuts = (0, days // 3, 2 * days // 3, days)
        first = found.first + timedelta(days=cuts[index])
        last = found.first + timedelta(days=max(cuts[index], cuts[index + 1] - 1))
    return replace(found, first=first, last=last)


def week_of(found: DayRange, which: str) -> DayRange:
    """The day's Monday-to-Sunday week, or that week's Saturday and Sunday."""
    monday = monday_of(found.first)
    if which == "weekend":
        return DayRange(monday + timedelta(days=5), monday + timedelta(days=6), "weekend", found.anchor)
    return DayRange(monday, monday + timedelta(days=6), "week", found.anchor)


def weekday_beside(found: DayRange, weekday: int, backward: bool) -> date:
    """The last such weekday (0 is Monday) before the range, or the first one after it."""
    day = found.first - timedelta(days=1) if backward else found.last + timedelta(days=1)
    while day.weekday() != weekday:
        day += timedelta(days=-1 if backward else 1)
    return day


def weekend_beside(found: DayRange, backward: bool) -> DayRange:
    """The last weekend ending before the range, or the first one starting after it."""
    if backward:
        sunday = found.first - timedelta(days=1)
        while sunday.weekday() != 6:
            sunday -= timedelta(days=1)
        return DayRange(sunday - timedelta(days=1), sunday, "weekend", found.anchor)
    saturday = found.last + timedelta(days=1)
    while saturday.weekday() != 5:
        saturday += timedelta(days=1)
    return DayRange(saturday, saturday + timedelta(days=1), "weekend", found.anchor)


def in_year(found: DayRange, year: int) -> DayRange:
    """The range moved whole to start in another year (29 February becomes the 28th)."""
    years = relativedelta(years=year - found.first.year)
    return replace(found, first=found.first + years, last=found.last + years)
