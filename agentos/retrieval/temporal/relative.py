"""Resolvers for times counted from the reference time: today, yesterday, last week, three days ago, the past month,
next Friday."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from agentos.retrieval.temporal.ranges import DayRange, Resolver, calendar_period, monday_of, shift
from agentos.retrieval.temporal.words import WEEKDAYS, parse_count, word_before


def fixed_days(first: int, last: int) -> Resolver:
    """A resolver for a range a fixed number of days from today (yesterday, last night)."""

    def resolve(match: re.Match[str], now: datetime) -> DayRange | None:
        today = now.date()
        return DayRange(today + timedelta(days=first), today + timedelta(days=last))

    return resolve


def calendar_unit(match: re.Match[str], now: datetime) -> DayRange | None:
    """last week, this month, next year, last weekend, this past weekend."""
    rel = match.group("rel").lower()
    step = -1 if "past" in rel else {"last": -1, "this": 0, "next": 1}[rel]
    return calendar_period(match.group("unit").lower(), now.date(), step)


def two_away(match: re.Match[str], now: datetime) -> DayRange | None:
    """the week before last, the month after next."""
    step = -2 if "last" in match.group("dir").lower() else 2
    return calendar_period(match.group("unit").lower(), now.date(), step)


def ago(match: re.Match[str], now: datetime) -> DayRange | None:
    """three days ago, a few weeks ago, two months from now, an hour ago."""
    count, vague = parse_count(match.group("num"))
    unit, today = match.group("unit").lower(), now.date()
    sign = -1 if match.group("dir").lower() == "ago" else 1
    if unit in ("hour", "minute"):
        then = (now + sign * timedelta(**{unit + "s": count})).date()
        return DayRange(min(then, today), max(then, today))
    if vague:
        ends = sorted((shift(today, sign * (count + 1), unit), shift(today, sign * (count - 1), unit)))
        return DayRange(ends[0], ends[1], unit)
    centre = shift(today, sign * count, unit)
    half = {"day": 0, "week": 3, "month": 15, "year": 182}[unit]
    return DayRange(centre - timedelta(days=half), centre + timedelta(days=half), unit)


def rolling(match: re.Match[str], now: datetime) -> DayRange | None:
    """the past week, the last 3 days, this past month: a window ending today."""
    return _window(match, now, -1)


def coming(match: re.Match[str], now: datetime) -> DayRange | None:
    """in the next two weeks, the coming month: a window starting today."""
    return _window(match, now, 1)


def _window(match: re.Match[str], now: datetime, sign: int) -> DayRange:
    """A window of some units that ends (sign -1) or starts (sign 1) today."""
    groups = match.groupdict()
    count, vague = parse_count(groups.get("num") or groups.get("num2") or "1")
    count += int(vague)
    unit, today = match.group("unit").lower(), now.date()
    if unit in ("hour", "minute"):
        then = (now + sign * timedelta(**{unit + "s": count})).date()
    else:
        then = shift(today, sign * count, unit)
    return DayRange(min(then, today), max(then, today), "span")


def part_of_current(match: re.Match[str], now: datetime) -> DayRange | None:
    """earlier this year, later this month."""
    today = now.date()
    current = calendar_period(match.group("unit").lower(), today, 0)
    if match.group("dir").lower() == "earlier":
        return DayRange(current.first, today, "span")
    return DayRange(today, current.last, "span")


def named_weekday(match: re.Match[str], now: datetime) -> DayRange | None:
    """last Monday, on Friday, this Thursday, next Tuesday, since Monday."""
    today, wanted = now.date(), WEEKDAYS.index(match.group("wd").lower())
    words = (match.groupdict().get("rel") or "since").lower().split()
    rel = "last" if "past" in words else words[0]
    if rel == "since" and word_before(match.string, match.start()) != "since":
        return None
    if rel == "next":
        found = today + timedelta(days=(wanted - today.weekday()) % 7 or 7)
    elif rel == "this":
        found = monday_of(today) + timedelta(days=wanted)
    else:
        found = today - timedelta(days=(today.weekday() - wanted) % 7 or 7)
    return DayRange(found, found)
