"""Times in one place: ISO dates and date-times read as aware UTC, whole UTC days, durations back from now.

Every moment agentos keeps is aware and in UTC; a naive one (from storage or a file) is taken to be UTC already.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta

from agentos.errors import AgentOSError, ToolError

MAX_DATE_CHARS = 40  # a longer value is refused before it is parsed
_DATE_ONLY = re.compile(r"\d{4}-\d{2}-\d{2}")
_DURATION = re.compile(r"(\d+)\s*([smhdw])")
_DURATION_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def as_utc(moment: datetime) -> datetime:
    """An aware UTC datetime; a naive one is taken as UTC, as storage takes it."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def day_start(day: date) -> datetime:
    """The first microsecond of a UTC day."""
    return datetime.combine(day, time.min, tzinfo=UTC)


def day_end(day: date) -> datetime:
    """The last microsecond of a UTC day."""
    return datetime.combine(day, time.max, tzinfo=UTC)


def iso_moment(text: str) -> datetime:
    """An ISO 8601 date-time (a trailing Z meaning UTC) as aware UTC, naive taken as UTC. Raises ValueError for text
    that is no date-time, TypeError for a value that is not text, OverflowError for an offset past year 1 or 9999."""
    if not isinstance(text, str):
        raise TypeError(f"an ISO date-time is text, not {type(text).__name__}")
    return as_utc(datetime.fromisoformat(text.replace("Z", "+00:00")))


def parse_date(value: str | None, what: str, *, end: bool = False) -> datetime | None:
    """`YYYY-MM-DD` or an ISO date-time, as aware UTC; a date-only end bound covers the whole day. None when blank;
    a `ToolError` naming `what` when it is no date."""
    if value is None or not str(value).strip():
        return None
    text = str(value).strip()
    if len(text) > MAX_DATE_CHARS:
        raise ToolError(f"{what} is not a date: use YYYY-MM-DD or YYYY-MM-DDTHH:MM.")
    try:
        if _DATE_ONLY.fullmatch(text):
            day = date.fromisoformat(text)
            return day_end(day) if end else day_start(day)
        return iso_moment(text)
    except ValueError:
        raise ToolError(f"{what} {text!r} is not a date: use YYYY-MM-DD or YYYY-MM-DDTHH:MM.") from None
    except OverflowError:
        raise ToolError(f"{what} {text!r} is out of range: use a date between 0001-01-02 and 9999-12-30.") from None


def date_range(start_date: str | None, end_date: str | None,
               names: tuple[str, str] = ("start_date", "end_date")) -> tuple[datetime | None, datetime | None]:
    """The bounds of a date search, the end bound inclusive; errors name the bounds as the caller calls them."""
    start = parse_date(start_date, names[0])
    end = parse_date(end_date, names[1], end=True)
    if start and end and start > end:
        raise ToolError(f"{names[0]} is after {names[1]}.")
    return start, end


def parse_duration(text: str) -> timedelta | None:
    """A duration such as 30s, 30m, 2h, 3d or 1w; None when the text is not one. Raises OverflowError when it is
    longer than a timedelta holds."""
    found = _DURATION.fullmatch(text.strip().lower())
    if found is None:
        return None
    return timedelta(**{_DURATION_UNITS[found.group(2)]: int(found.group(1))})


def moment_or_ago(value: str | None, what: str, now: datetime | None = None) -> datetime | None:
    """A moment given as a date (YYYY-MM-DD or an ISO time, UTC) or as a duration back from `now` (30m, 2h, 3d,
    1w); None when no value is given. Errors name the value as `what`."""
    if value is None:
        return None
    try:
        back = parse_duration(value)
        if back is not None:
            return (now or datetime.now(UTC)) - back
    except OverflowError:
        raise AgentOSError(f"{what} {value!r} reaches back past year 1; give a shorter duration.") from None
    if not re.match(r"\d{4}-", value.strip().lower()):
        raise AgentOSError(f"{what} {value!r} is not a date or a duration: use YYYY-MM-DD, an ISO time "
                           f"(YYYY-MM-DDTHH:MM), or a duration back from now such as 30m, 2h, 3d, 1w.")
    return parse_date(value, what)
