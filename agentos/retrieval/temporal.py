"""Temporal expressions in a query, resolved against a reference time into a range of whole UTC days.

Pure parsing, no storage. `resolve_time` finds "last week", "in May 2023", "two days ago", "before
Christmas" and the like; `asks_when` says whether the answer to a question is itself a time;
`without_time` strips the temporal words so keyword search sees only the rest.

Conventions:
- ranges are whole days in UTC, with inclusive ends (the last microsecond of the last day);
- weeks start on Monday; a weekend is the Saturday and Sunday of its Monday-to-Sunday week;
- "last Friday" and "on Friday" are the most recent Friday strictly before today (1 to 7 days back),
  "next Friday" the first one strictly after today, "this Friday" the Friday of the current week;
- "N days ago" is that day; "N weeks/months/years ago" is a window one unit wide centred on that point;
  "a couple of" counts 2 and "a few"/"several" 3, both widened by one unit each way;
- a date or month written without its year is the most recent one not after today, unless the query
  names a single year elsewhere ("in 2022, on May 8" is 8 May 2022);
- seasons are northern-hemisphere meteorological ones; the winter of Y runs from December Y to February Y+1;
- "before/after X" is the year before X starts or after X ends; "since X" runs from X to today;
- "two days before X", "the week after X", "the Sunday before X" and "last weekend before X" are placed against X
  (a weekday strictly before or after it), not against today;
- an offset from an event ("two days before the trip") cannot be placed: alone it resolves to nothing,
  next to a resolvable time it widens that range by the offset, so the range still holds the answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta

__all__ = ["TimeHint", "asks_when", "resolve_time", "without_time"]


@dataclass(frozen=True)
class TimeHint:
    """A range of whole UTC days that a query refers to, with the words it came from."""

    start: datetime  # aware UTC, the first microsecond of the first day
    end: datetime  # aware UTC, inclusive: the last microsecond of the last day
    phrase: str

    def contains(self, moment: datetime) -> bool:
        """Whether the moment falls inside the range (naive moments count as UTC)."""
        return self.start <= _as_utc(moment) <= self.end

    def distance(self, moment: datetime) -> timedelta:
        """Zero inside the range, otherwise how far the moment lies outside it."""
        at = _as_utc(moment)
        if at < self.start:
            return self.start - at
        if at > self.end:
            return at - self.end
        return timedelta(0)


@dataclass(frozen=True)
class _Range:
    """A day range and how it was found."""

    first: date
    last: date
    unit: str = "day"  # day, week, weekend, month, season, year, decade or span
    anchor: str = "relative"  # relative to now, "dated" (its year was written) or "floating" (year guessed)


@dataclass(frozen=True)
class _Span:
    """A resolved range and where its words lie in the query."""

    start: int
    end: int
    range: _Range


_Resolver = Callable[[re.Match[str], datetime], "_Range | None"]

# ---------------------------------------------------------------- vocabulary

_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
           "october", "november", "december")
_MONTH_ALT = "|".join(_MONTHS) + "|sept|jan|feb|mar|apr|jun|jul|aug|sep|oct|nov|dec"
_MON = rf"(?P<mon>{_MONTH_ALT})(?![a-z])\.?"
_MON_FULL = rf"(?P<mon>{'|'.join(_MONTHS)})(?![a-z'’])"
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WD = "|".join(_WEEKDAYS)
_SEASON_START = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
_SEASON = r"(?P<season>spring|summer|autumn|fall|winter)"
_HOLIDAYS = {"christmas eve": (12, 24), "christmas": (12, 25), "christmas day": (12, 25), "new year's eve": (12, 31),
             "new year's day": (1, 1), "halloween": (10, 31), "valentine's day": (2, 14)}
_HOLIDAY = r"(?P<hol>christmas\s+eve|christmas(?:\s+day)?|new\s+year['’]?s\s+(?:eve|day)|halloween|valentine['’]?s\s+day)"
_NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
                 "ten": 10, "eleven": 11, "twelve": 12}
_NUM = (r"(?:\d{1,3}|a\s+couple(?:\s+of)?|couple\s+of|a\s+few|few|several|"
        + "|".join(_NUMBER_WORDS) + r"|an?)")
_YEAR = r"(?P<year>(?:19|20)\d\d|2100)(?![\w%])"
_ORD = r"(?:st|nd|rd|th)"
_DAY = r"(?<![\d.,:/-])(?P<day>3[01]|[12]\d|0?[1-9])"
_DAY2 = rf"(?:\s*[-–]\s*(?P<day2>3[01]|[12]\d|0?[1-9]){_ORD}?)?"
_DATE_LEAD = rf"(?:(?:on\s+)?(?:{_WD}),?\s+)?"
_UNIT = r"(?P<unit>minute|hour|day|week|month|year)s?"

# Words after a number that make it a count, not a year or a day ("2023 people", "may 5 people").
_COUNTED = re.compile(
    r"\s*(?:%|(?:percent|people|persons?|kids|children|adults|guests|dogs|cats|pets|animals|times|items|things|"
    r"words|pages|books|songs|photos|pictures|steps|miles|km|kilomet(?:er|re)s|met(?:er|re)s|feet|inches|"
    r"pounds|lbs|kg|kilos|grams|dollars|bucks|euros|yen|rupees|points|calories|members|followers|students|"
    r"users|votes|views|likes|copies|units|rooms|cars|hours|minutes|seconds|days|weeks|months|years)\b)", re.I)

# The word just before a bare month, season, year or holiday that makes it a time and not a name or a count.
_MONTH_CONTEXT = frozenset({"in", "during", "throughout", "since", "before", "after", "until", "till", "of", "early",
                            "mid", "late", "around", "through", "from", "between"})
_SEASON_CONTEXT = _MONTH_CONTEXT | {"over", "by"}
_DAY_CONTEXT = _MONTH_CONTEXT | {"on", "by"}
_YEAR_CONTEXT = _MONTH_CONTEXT | {"circa", "the", "my", "our", "your", "his", "her", "their", "its", "year"}
_HOLIDAY_CONTEXT = _MONTH_CONTEXT | {"at", "on", "over", "by"}
_VERB_MONTHS = frozenset({"may", "march"})  # also verbs: lowercase, without a day or year, they need context

_LOOK = 48  # how far before (or after) a phrase its context words are looked for
_LAST_WORD = re.compile(r"([^\W\d_]+)(?:\s+|\s*-\s*)$")
_AFTER_MONTH = re.compile(rf"\b(?:{_MONTH_ALT})\.?(?:\s+\d{{1,2}}{_ORD}?)?(?:,?\s+\d{{4}})?\s*"
                          r"(?:and|to|through|thru|until|till|or|-|–|—)\s*$", re.I)
_AFTER_YEAR = re.compile(r"\b(?:19|20)\d\d\s*(?:and|to|through|thru|until|till|or|-|–|—)\s*$", re.I)
_BEFORE_YEAR = re.compile(r"\s*[-–—]\s*(?:19|20)\d\d(?!\d)")
_FROM_TAIL = re.compile(r"\s*(?:to|until|till|through|thru|-|–|—)\s", re.I)
_BETWEEN_TAIL = re.compile(r"\s*and\s", re.I)

# ---------------------------------------------------------------- dates


def _as_utc(moment: datetime) -> datetime:
    """The moment as an aware UTC datetime; a naive one is taken to be UTC already."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def _day_start(day: date) -> datetime:
    """The first microsecond of a UTC day."""
    return datetime.combine(day, time.min, tzinfo=UTC)


def _day_end(day: date) -> datetime:
    """The last microsecond of a UTC day."""
    return datetime.combine(day, time.max, tzinfo=UTC)


def _add_months(day: date, months: int) -> date:
    """The same day some months later (or earlier), clamped to the end of a shorter month."""
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    return date(year, month + 1, min(day.day, _month_length(year, month + 1)))


def _month_length(year: int, month: int) -> int:
    """How many days the month has."""
    following = date(year + month // 12, month % 12 + 1, 1)
    return (following - timedelta(days=1)).day


def _shift(day: date, count: int, unit: str) -> date:
    """The day moved by a number of days, weeks, months or years."""
    if unit == "day":
        return day + timedelta(days=count)
    if unit == "week":
        return day + timedelta(weeks=count)
    return _add_months(day, count * (12 if unit == "year" else 1))


def _shift_years(day: date, years: int) -> date:
    """The same calendar day in another year (29 February becomes the 28th)."""
    return _add_months(day, 12 * years)


def _month(year: int, month: int, anchor: str) -> _Range:
    """A whole calendar month."""
    return _Range(date(year, month, 1), date(year, month, _month_length(year, month)), "month", anchor)


def _year(year: int, anchor: str) -> _Range:
    """A whole calendar year."""
    return _Range(date(year, 1, 1), date(year, 12, 31), "year", anchor)


def _season(name: str, year: int, anchor: str) -> _Range:
    """A meteorological season; winter starts in December of its year."""
    first = date(year, _SEASON_START[name.lower()], 1)
    return _Range(first, _add_months(first, 3) - timedelta(days=1), "season", anchor)


def _monday(day: date) -> date:
    """The Monday of the day's week."""
    return day - timedelta(days=day.weekday())


def _on_or_before(month: int, day: int, today: date) -> date | None:
    """The most recent such calendar day not after today (None when no year has it)."""
    for year in range(today.year, today.year - 9, -1):
        try:
            found = date(year, month, day)
        except ValueError:
            continue
        if found <= today:
            return found
    return None


def _month_number(word: str) -> int:
    """1 to 12 for a month name or its abbreviation."""
    return [name[:3] for name in _MONTHS].index(word.lower().rstrip(".")[:3]) + 1


def _count(words: str) -> tuple[int, bool]:
    """The number a count word means, and whether it is vague ("a few")."""
    text = " ".join(words.lower().split())
    if text.isdigit():
        return int(text), False
    if "couple" in text:
        return 2, True
    if "few" in text or "several" in text:
        return 3, True
    return _NUMBER_WORDS.get(text, 1), False


def _ending_at(pattern: re.Pattern[str], text: str, index: int) -> re.Match[str] | None:
    """The pattern's match (anchored with $) among the few words just before a position."""
    return pattern.search(text, max(0, index - _LOOK), index)


def _word_before(text: str, index: int) -> str:
    """The word just before a position, lowercased ("" when none)."""
    found = _ending_at(_LAST_WORD, text, index)
    return found.group(1).lower() if found else ""


def _counted_after(match: re.Match[str]) -> bool:
    """Whether the number just matched counts things ("2023 people")."""
    return _COUNTED.match(match.string, match.end()) is not None


def _verb_month_ok(match: re.Match[str]) -> bool:
    """False for a lowercase "may" or "march" without a day, year or temporal word before it."""
    word = match.group("mon")
    if word.lower() not in _VERB_MONTHS or not word.islower():
        return True
    return match.group(0).lower().startswith("on ") or _word_before(match.string, match.start()) in _DAY_CONTEXT


# ---------------------------------------------------------------- resolvers: absolute


def _iso(match: re.Match[str], now: datetime) -> _Range | None:
    """2023-05-08, 2023/05/08."""
    try:
        day = date(int(match.group("year")), int(match.group("m")), int(match.group("d")))
    except ValueError:
        return None
    return _Range(day, day, "day", "dated")


def _month_day(match: re.Match[str], now: datetime) -> _Range | None:
    """8 May 2023, May 8th, the 8th of May, May 12-14, 2023."""
    month, day = _month_number(match.group("mon")), int(match.group("day"))
    last_day = int(match.group("day2") or day)
    if last_day < day:
        return None
    try:
        if match.group("year"):
            first = date(int(match.group("year")), month, day)
            return _Range(first, first.replace(day=last_day), "day", "dated")
        if not _verb_month_ok(match) or _counted_after(match):
            return None
        found = _on_or_before(month, day, now.date())
        return None if found is None else _Range(found, found.replace(day=last_day), "day", "floating")
    except ValueError:
        return None


def _month_year(match: re.Match[str], now: datetime) -> _Range | None:
    """May 2023, May of 2023."""
    return _month(int(match.group("year")), _month_number(match.group("mon")), "dated")


def _relative_month(match: re.Match[str], now: datetime) -> _Range | None:
    """last May, this May, next May."""
    if match.group("mon").lower() in _VERB_MONTHS and match.group("mon").islower():
        return None
    today, month, rel = now.date(), _month_number(match.group("mon")), match.group("rel").lower()
    year = today.year
    if rel == "last" and month >= today.month:
        year -= 1
    elif rel == "next" and month <= today.month:
        year += 1
    return _month(year, month, "relative")


def _bare_month(match: re.Match[str], now: datetime) -> _Range | None:
    """in May, since June, from May to July: the most recent such month that has begun."""
    word = _word_before(match.string, match.start())
    if word not in _MONTH_CONTEXT and not _ending_at(_AFTER_MONTH, match.string, match.start()):
        return None
    if word == "from" and not _FROM_TAIL.match(match.string, match.end()):
        return None
    if word == "between" and not _BETWEEN_TAIL.match(match.string, match.end()):
        return None
    today, month = now.date(), _month_number(match.group("mon"))
    return _month(today.year if month <= today.month else today.year - 1, month, "floating")


def _year_alone(match: re.Match[str], now: datetime) -> _Range | None:
    """in 2023, the 2023 election; not "Room 2023" or "2023 people"."""
    in_context = _word_before(match.string, match.start()) in _YEAR_CONTEXT
    after_year = _ending_at(_AFTER_YEAR, match.string, match.start())
    if not (in_context or after_year or _BEFORE_YEAR.match(match.string, match.end())):
        return None
    if _counted_after(match):
        return None
    return _year(int(match.group("year")), "dated")


def _decade(match: re.Match[str], now: datetime) -> _Range | None:
    """the 1990s."""
    start = int(match.group("dec"))
    return _Range(date(start, 1, 1), date(start + 9, 12, 31), "decade", "dated")


def _season_year(match: re.Match[str], now: datetime) -> _Range | None:
    """the summer of 2023, winter 2022."""
    return _season(match.group("season"), int(match.group("year")), "dated")


def _relative_season(match: re.Match[str], now: datetime) -> _Range | None:
    """last summer (the latest one over), this spring, next winter."""
    today, name = now.date(), match.group("season")
    rel = match.group("rel").lower().split()[-1]
    candidates = [_season(name, year, "relative") for year in range(today.year - 2, today.year + 2)]
    if rel in ("last", "past"):
        return [season for season in candidates if season.last < today][-1]
    if rel == "next":
        return next(season for season in candidates if season.first > today)
    in_winter_tail = name.lower() == "winter" and today.month <= 2
    return _season(name, today.year - 1 if in_winter_tail else today.year, "relative")


def _bare_season(match: re.Match[str], now: datetime) -> _Range | None:
    """in the summer, during winter: the most recent such season that has begun."""
    if _word_before(match.string, match.start()) not in _SEASON_CONTEXT:
        return None
    name, written = match.group("season"), match.group(0).lower()
    if name.lower() == "fall" and not written.startswith("the"):
        return None
    today = now.date()
    begun = [_season(name, year, "floating") for year in range(today.year - 1, today.year + 1)]
    return [season for season in begun if season.first <= today][-1]


def _holiday(match: re.Match[str], now: datetime) -> _Range | None:
    """Christmas 2022, last Christmas, on Halloween, New Year's Eve."""
    key = " ".join(match.group("hol").lower().replace("’", "'").split()).replace("years", "year's")
    key = key.replace("valentines", "valentine's")
    month, day = _HOLIDAYS[key]
    today, rel = now.date(), (match.group("rel") or "").lower()
    if match.group("year"):
        found = date(int(match.group("year")), month, day)
        return _Range(found, found, "day", "dated")
    if rel:
        candidates = [date(year, month, day) for year in range(today.year - 1, today.year + 2)]
        found = {"last": max(d for d in candidates if d < today), "next": min(d for d in candidates if d > today),
                 "this": date(today.year, month, day)}[rel]
        return _Range(found, found, "day", "relative")
    if _word_before(match.string, match.start()) not in _HOLIDAY_CONTEXT:
        return None
    latest = _on_or_before(month, day, today)
    return None if latest is None else _Range(latest, latest, "day", "floating")


# ---------------------------------------------------------------- resolvers: relative


def _fixed(first: int, last: int) -> _Resolver:
    """A resolver for a range a fixed number of days from today (yesterday, last night)."""

    def resolve(match: re.Match[str], now: datetime) -> _Range | None:
        today = now.date()
        return _Range(today + timedelta(days=first), today + timedelta(days=last))

    return resolve


def _period(unit: str, today: date, step: int) -> _Range:
    """The calendar week, weekend, month or year some steps from the current one."""
    if unit in ("week", "weekend"):
        monday = _monday(today) + timedelta(weeks=step)
        if unit == "weekend":
            return _Range(monday + timedelta(days=5), monday + timedelta(days=6), "weekend")
        return _Range(monday, monday + timedelta(days=6), "week")
    if unit == "month":
        first = _add_months(today.replace(day=1), step)
        return _month(first.year, first.month, "relative")
    return _year(today.year + step, "relative")


def _calendar(match: re.Match[str], now: datetime) -> _Range | None:
    """last week, this month, next year, last weekend, this past weekend."""
    rel = match.group("rel").lower()
    step = -1 if "past" in rel else {"last": -1, "this": 0, "next": 1}[rel]
    return _period(match.group("unit").lower(), now.date(), step)


def _two_away(match: re.Match[str], now: datetime) -> _Range | None:
    """the week before last, the month after next."""
    step = -2 if "last" in match.group("dir").lower() else 2
    return _period(match.group("unit").lower(), now.date(), step)


def _ago(match: re.Match[str], now: datetime) -> _Range | None:
    """three days ago, a few weeks ago, two months from now, an hour ago."""
    count, vague = _count(match.group("num"))
    unit, today = match.group("unit").lower(), now.date()
    sign = -1 if match.group("dir").lower() == "ago" else 1
    if unit in ("hour", "minute"):
        then = (now + sign * timedelta(**{unit + "s": count})).date()
        return _Range(min(then, today), max(then, today))
    if vague:
        ends = sorted((_shift(today, sign * (count + 1), unit), _shift(today, sign * (count - 1), unit)))
        return _Range(ends[0], ends[1], unit)
    centre = _shift(today, sign * count, unit)
    half = {"day": 0, "week": 3, "month": 15, "year": 182}[unit]
    return _Range(centre - timedelta(days=half), centre + timedelta(days=half), unit)


def _rolling(match: re.Match[str], now: datetime) -> _Range | None:
    """the past week, the last 3 days, this past month: a window ending today."""
    return _window(match, now, -1)


def _coming(match: re.Match[str], now: datetime) -> _Range | None:
    """in the next two weeks, the coming month: a window starting today."""
    return _window(match, now, 1)


def _window(match: re.Match[str], now: datetime, sign: int) -> _Range:
    """A window of some units that ends (sign -1) or starts (sign 1) today."""
    groups = match.groupdict()
    count, vague = _count(groups.get("num") or groups.get("num2") or "1")
    count += int(vague)
    unit, today = match.group("unit").lower(), now.date()
    if unit in ("hour", "minute"):
        then = (now + sign * timedelta(**{unit + "s": count})).date()
    else:
        then = _shift(today, sign * count, unit)
    return _Range(min(then, today), max(then, today), "span")


def _part_of_current(match: re.Match[str], now: datetime) -> _Range | None:
    """earlier this year, later this month."""
    today = now.date()
    current = _period(match.group("unit").lower(), today, 0)
    if match.group("dir").lower() == "earlier":
        return _Range(current.first, today, "span")
    return _Range(today, current.last, "span")


def _weekday(match: re.Match[str], now: datetime) -> _Range | None:
    """last Monday, on Friday, this Thursday, next Tuesday, since Monday."""
    today, wanted = now.date(), _WEEKDAYS.index(match.group("wd").lower())
    words = (match.groupdict().get("rel") or "since").lower().split()
    rel = "last" if "past" in words else words[0]
    if rel == "since" and _word_before(match.string, match.start()) != "since":
        return None
    if rel == "next":
        found = today + timedelta(days=(wanted - today.weekday()) % 7 or 7)
    elif rel == "this":
        found = _monday(today) + timedelta(days=wanted)
    else:
        found = today - timedelta(days=(today.weekday() - wanted) % 7 or 7)
    return _Range(found, found)


# A word or digit that every rule's match holds one of (months, weekdays and units as prefixes): text without any
# names no time. It must grow with the rules; the tests' phrases pass through it.
_MAY_NAME_TIME = re.compile(
    r"\d|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|mon|tue|wed|thu|fri|sat|sun|spring|summer|autumn|fall|"
    r"winter|christmas|new\s+year|halloween|valentine|today|tonight|yesterday|tomorrow|recently|lately|this|last|next|"
    r"past|coming|other|earlier|later|minute|hour|day|week|month|year|decade)", re.I)


def _rule(pattern: str, resolve: _Resolver) -> tuple[re.Pattern[str], _Resolver]:
    """A compiled case-insensitive pattern with its resolver."""
    return re.compile(pattern, re.I), resolve


_RULES: list[tuple[re.Pattern[str], _Resolver]] = [
    _rule(r"(?<![\d/.-])(?P<year>(?:19|20)\d\d|2100)(?P<sep>[-/.])(?P<m>1[0-2]|0?[1-9])(?P=sep)"
          r"(?P<d>3[01]|[12]\d|0?[1-9])(?!\d|[-/.]\d)", _iso),
    _rule(rf"\b{_DATE_LEAD}(?:the\s+)?{_DAY}{_ORD}?{_DAY2}\s+(?:of\s+)?{_MON}(?:,?\s+{_YEAR})?", _month_day),
    _rule(rf"\b{_DATE_LEAD}{_MON}\s+(?:the\s+)?{_DAY}{_ORD}?{_DAY2}(?![\d:])(?:,?\s+{_YEAR})?", _month_day),
    _rule(rf"\b{_MON}(?:\s+of)?,?\s+{_YEAR}", _month_year),
    _rule(rf"\b(?<!the\s)(?P<rel>last|this|next)\s+{_MON_FULL}", _relative_month),
    _rule(rf"\b{_MON_FULL}", _bare_month),
    _rule(rf"\b(?:the\s+)?{_SEASON}(?:\s+of)?,?\s+{_YEAR}", _season_year),
    _rule(rf"\b(?P<rel>(?:the\s+)?past|this\s+past|(?<!the\s)(?:last|this|next))\s+{_SEASON}\b", _relative_season),
    _rule(rf"\b(?:the\s+)?{_SEASON}\b", _bare_season),
    _rule(r"\b(?:the\s+)?(?P<dec>(?:19|20)\d0)['’]?s\b", _decade),
    _rule(rf"(?<![\d$#£€.,])\b{_YEAR}", _year_alone),
    _rule(rf"\b(?:(?<!the\s)(?P<rel>last|this|next)\s+)?{_HOLIDAY}(?:,?\s+(?:of\s+)?{_YEAR})?(?![\w'’])", _holiday),
    _rule(r"\b(?:(?:earlier|later)\s+)?today\b|\btonight\b|\bthis\s+(?:morning|afternoon|evening)\b", _fixed(0, 0)),
    _rule(r"\b(?:the\s+)?day\s+before\s+yesterday\b", _fixed(-2, -2)),
    _rule(r"\byesterday(?:\s+(?:morning|afternoon|evening|night))?\b", _fixed(-1, -1)),
    _rule(r"\b(?<!the\s)last\s+night\b(?!\s+of\b)", _fixed(-1, 0)),
    _rule(r"\b(?:the\s+)?day\s+after\s+tomorrow\b", _fixed(2, 2)),
    _rule(r"\btomorrow(?:\s+(?:morning|afternoon|evening|night))?\b", _fixed(1, 1)),
    _rule(r"\b(?:recently|lately)\b", _fixed(-30, 0)),
    _rule(r"\bthe\s+other\s+day\b", _fixed(-7, -1)),
    _rule(r"\b(?<!the\s)(?P<rel>last|this|next|this\s+past(?=\s+weekend))\s+(?P<unit>weekend|week|month|year)\b"
          r"(?!\s+of\b)", _calendar),
    _rule(r"\bthe\s+(?P<unit>weekend|week|month|year)\s+(?P<dir>before\s+last|after\s+next)\b", _two_away),
    _rule(rf"\b(?P<num>{_NUM})\s+{_UNIT}\s+(?P<dir>ago|from\s+now)\b", _ago),
    _rule(rf"\b(?:(?:the|this)\s+(?:last|past)\s+(?:(?P<num>{_NUM})\s+)?|(?:last|past)\s+(?P<num2>{_NUM})\s+)"
          rf"{_UNIT}\b(?!\s+(?:of|before|after)\b)", _rolling),
    _rule(rf"\b(?:(?:in|within|over|during)\s+the\s+(?:next|coming)|the\s+coming)\s+(?:(?P<num>{_NUM})\s+)?"
          rf"{_UNIT}\b", _coming),
    _rule(r"\b(?P<dir>earlier|later)\s+this\s+(?P<unit>week|month|year)\b", _part_of_current),
    _rule(rf"\b(?P<rel>this\s+past|(?<!the\s)(?:last|this|next)|on)\s+(?P<wd>{_WD})\b", _weekday),
    _rule(rf"\b(?P<wd>{_WD})\b", _weekday),
]

# ---------------------------------------------------------------- composition

_THIRDS = re.compile(r"\b(?:(?:the\s+)?(?P<mod>early|mid|middle|late)(?:\s+in)?|the\s+(?P<part>beginning|start|middle|end)\s+of)"
                     r"(?:\s+|\s*-\s*)$", re.I)
_THIRD_INDEX = {"early": 0, "beginning": 0, "start": 0, "mid": 1, "middle": 1, "late": 2, "end": 2}
_WEEK_OF = re.compile(r"\bthe\s+(?P<which>week|weekend)\s+of\s+$", re.I)
_OFFSET = re.compile(rf"\b(?:(?P<num>{_NUM})\s+(?P<unit>day|week|month|year)s?|"
                     rf"(?:the\s+(?:last\s+)?|last\s+)(?P<the>day|weekend|week|month|year|{_WD})|(?P<weekday>{_WD}))"
                     r"\s+(?P<dir>before|after|prior\s+to)\s+$", re.I)
_RANGE_LEAD = re.compile(r"\b(?P<lead>between|from)\s+$", re.I)
_RANGE_JOIN = re.compile(r"\s*(?P<join>and|to|until|till|through|thru|-|–|—)\s*", re.I)
_OPEN = re.compile(r"\b(?P<dir>before|after|since|until|till|prior\s+to|up\s+to|earlier\s+than|later\s+than)\s+$", re.I)
_PREPOSITION = re.compile(r"\b(?:back\s+in|some\s*time\s+in|sometime|in|on|at|during|over|throughout|within|around|"
                          r"circa|for|from|of)\s+$", re.I)

# Offsets from an event the query does not date: "two days before the trip", "a week later", "the next day".
_EVENT_UNIT = r"minute|hour|day|night|morning|afternoon|evening|weekend|week|month|year"
_EVENT_OFFSETS = [
    re.compile(rf"\b(?:(?P<num>{_NUM})\s+(?P<unit>{_EVENT_UNIT})s?|the\s+(?P<the>{_EVENT_UNIT}))\s+"
               r"(?P<dir>before|after|prior\s+to|earlier|later|afterwards?|beforehand|following|preceding)\b", re.I),
    re.compile(rf"\bthe\s+(?P<dir>next|following|previous|preceding|prior)\s+(?P<the>{_EVENT_UNIT})\b", re.I),
]
_BACKWARD = frozenset({"before", "prior", "earlier", "beforehand", "preceding", "previous"})


def _third(found: _Range, index: int) -> _Range:
    """The early, middle or late third of a month (days 1-10, 11-20, 21-end), year, decade or other range."""
    if found.unit == "month":
        first = found.first.replace(day=(1, 11, 21)[index])
        last = found.last if index == 2 else found.first.replace(day=(10, 20)[index])
    elif found.unit == "year":
        first = found.first.replace(month=1 + 4 * index)
        last = _add_months(first, 4) - timedelta(days=1)
    elif found.unit == "decade":
        years = ((0, 3), (4, 6), (7, 9))[index]
        first, last = date(found.first.year + years[0], 1, 1), date(found.first.year + years[1], 12, 31)
    else:
        days = (found.last - found.first).days + 1
        cuts = (0, days // 3, 2 * days // 3, days)
        first = found.first + timedelta(days=cuts[index])
        last = found.first + timedelta(days=max(cuts[index], cuts[index + 1] - 1))
    return replace(found, first=first, last=last)


def _week_of(found: _Range, which: str) -> _Range:
    """The day's Monday-to-Sunday week, or that week's Saturday and Sunday."""
    monday = _monday(found.first)
    if which == "weekend":
        return _Range(monday + timedelta(days=5), monday + timedelta(days=6), "weekend", found.anchor)
    return _Range(monday, monday + timedelta(days=6), "week", found.anchor)


def _offset(found: _Range, match: re.Match[str]) -> _Range:
    """"two days before X" (X moved) or "the week after X" (the unit next to X)."""
    backward = match.group("dir").lower().startswith(("before", "prior"))
    if named := match.group("the") or match.group("weekday"):  # "the week before X", "Sunday before X"
        unit = named.lower()
        if unit == "day":
            day = found.first - timedelta(days=1) if backward else found.last + timedelta(days=1)
            return replace(found, first=day, last=day, unit="day")
        if unit == "weekend":
            return _weekend_beside(found, backward)
        if unit in _WEEKDAYS:
            day = _weekday_beside(found, _WEEKDAYS.index(unit), backward)
            return replace(found, first=day, last=day, unit="day")
        if backward:
            return replace(found, first=_shift(found.first, -1, unit), last=found.first - timedelta(days=1), unit="span")
        return replace(found, first=found.last + timedelta(days=1), last=_shift(found.last, 1, unit), unit="span")
    count, vague = _count(match.group("num"))
    unit, sign = match.group("unit").lower(), -1 if backward else 1
    if vague:
        near, far = _shift(found.first, sign * (count - 1), unit), _shift(found.last, sign * (count + 1), unit)
        return replace(found, first=min(near, far), last=max(near, far), unit="span")
    return replace(found, first=_shift(found.first, sign * count, unit), last=_shift(found.last, sign * count, unit))


def _weekday_beside(found: _Range, weekday: int, backward: bool) -> date:
    """The last such weekday (0 is Monday) before the range, or the first one after it."""
    day = found.first - timedelta(days=1) if backward else found.last + timedelta(days=1)
    while day.weekday() != weekday:
        day += timedelta(days=-1 if backward else 1)
    return day


def _weekend_beside(found: _Range, backward: bool) -> _Range:
    """The last weekend ending before the range, or the first one starting after it."""
    if backward:
        sunday = found.first - timedelta(days=1)
        while sunday.weekday() != 6:
            sunday -= timedelta(days=1)
        return _Range(sunday - timedelta(days=1), sunday, "weekend", found.anchor)
    saturday = found.last + timedelta(days=1)
    while saturday.weekday() != 5:
        saturday += timedelta(days=1)
    return _Range(saturday, saturday + timedelta(days=1), "weekend", found.anchor)


def _modify(query: str, span: _Span) -> _Span:
    """Apply the words just before a span: early/mid/late, the week or weekend of, two days before."""
    third = _ending_at(_THIRDS, query, span.start)
    if third and span.range.unit != "day":
        index = _THIRD_INDEX[(third.group("mod") or third.group("part")).lower()]
        span = _Span(third.start(), span.end, _third(span.range, index))
    week = _ending_at(_WEEK_OF, query, span.start)
    if week and span.range.unit == "day":
        span = _Span(week.start(), span.end, _week_of(span.range, week.group("which").lower()))
    offset = _ending_at(_OFFSET, query, span.start)
    if offset:
        span = _Span(offset.start(), span.end, _offset(span.range, offset))
    return span


def _join(query: str, left: _Span, right: _Span) -> _Span | None:
    """"between X and Y", "from X to Y", "X-Y" as one span, or None when the two are not a range."""
    join = _RANGE_JOIN.fullmatch(query, left.end, right.start)
    if join is None:
        return None
    lead = _ending_at(_RANGE_LEAD, query, left.start)
    if join.group("join").lower() == "and" and (lead is None or lead.group("lead").lower() != "between"):
        return None
    first, last = _align_years(left.range, right.range)
    if last.last < first.first:
        return None
    return _Span(lead.start() if lead else left.start, right.end, _Range(first.first, last.last, "span"))


def _align_years(left: _Range, right: _Range) -> tuple[_Range, _Range]:
    """Give a yearless end of a range the other end's year ("from May 3 to May 10, 2023")."""
    if left.anchor == "floating" and right.anchor != "floating":
        left = _in_year(left, right.last.year)
        if left.first > right.last:
            left = _in_year(left, right.last.year - 1)
    elif right.anchor == "floating" and left.anchor != "floating":
        right = _in_year(right, left.first.year)
    if right.anchor == "floating" and right.last < left.first:
        right = _in_year(right, right.first.year + 1)
    return left, right


def _in_year(found: _Range, year: int) -> _Range:
    """The range moved whole to start in another year."""
    years = year - found.first.year
    return replace(found, first=_shift_years(found.first, years), last=_shift_years(found.last, years))


def _merge(query: str, spans: list[_Span]) -> list[_Span]:
    """Spans with each "from X to Y" pair made one."""
    merged: list[_Span] = []
    index = 0
    while index < len(spans):
        pair = _join(query, spans[index], spans[index + 1]) if index + 1 < len(spans) else None
        merged.append(pair or spans[index])
        index += 2 if pair else 1
    return merged


def _inherit_year(spans: list[_Span]) -> list[_Span]:
    """Yearless dates take the one year the query names elsewhere ("in 2022 ... on May 8")."""
    years = {s.range.first.year for s in spans if s.range.first.year == s.range.last.year
             and (s.range.anchor == "dated" or s.range.unit == "year")}
    if len(years) != 1:
        return spans
    (year,) = years
    return [replace(s, range=_in_year(s.range, year)) if s.range.anchor == "floating" else s for s in spans]


def _open(query: str, span: _Span, today: date) -> _Span:
    """"before X", "after X" (a year on the open side), "since X" (up to today), "until X"."""
    found = _ending_at(_OPEN, query, span.start)
    if found is None:
        return span
    word, r = found.group("dir").lower().split()[0], span.range
    if word in ("before", "prior", "earlier"):
        first, last = _shift(r.first, -1, "year"), r.first - timedelta(days=1)
    elif word in ("after", "later"):
        first, last = r.last + timedelta(days=1), _shift(r.last, 1, "year")
    elif word == "since":
        first, last = r.first, max(today, r.last)
    else:
        first, last = _shift(r.last, -1, "year"), r.last
    return _Span(found.start(), span.end, _Range(first, last, "span"))


def _absorb(query: str, span: _Span) -> _Span:
    """The span widened over the preposition that introduces it ("in", "on", "during")."""
    found = _ending_at(_PREPOSITION, query, span.start)
    return replace(span, start=found.start()) if found else span


def _atoms(query: str, now: datetime) -> list[_Span]:
    """Every rule's matches, longest first at each position, without overlaps."""
    found = [_Span(m.start(), m.end(), r) for pattern, resolve in _RULES for m in pattern.finditer(query)
             if (r := resolve(m, now)) is not None]
    found.sort(key=lambda s: (s.start, s.start - s.end))
    chosen: list[_Span] = []
    for span in found:
        if not chosen or span.start >= chosen[-1].end:
            chosen.append(span)
    return chosen


def _spans(query: str, now: datetime) -> list[_Span]:
    """The query's temporal phrases, resolved and composed, in order."""
    today = now.date()
    atoms = _atoms(query, now)
    modified = [_modify(query, s) for s in atoms]
    # "the Sunday before May 8" takes in "Sunday", which alone would be the Sunday before today; so does "on Sunday
    # before May 8", whose "on Sunday" it only overlaps
    grown = [m for atom, m in zip(atoms, modified, strict=True) if m.start < atom.start]

    def taken_in(s: _Span) -> bool:
        covered = any(t is not s and t.start <= s.start and s.end <= t.end for t in modified)
        overlapped = all(s is not g for g in grown) and any(t.start < s.end and s.start < t.end for t in grown)
        return covered or overlapped

    modified = [s for s in modified if not taken_in(s)]
    spans = _merge(query, modified)
    spans = [_open(query, s, today) for s in _inherit_year(spans)]
    return [_absorb(query, s) for s in spans]


def _event_offsets(query: str, spans: list[_Span]) -> list[re.Match[str]]:
    """Offsets from undated events, outside the phrases already resolved."""
    found = [m for pattern in _EVENT_OFFSETS for m in pattern.finditer(query)]
    return [m for m in found if not any(s.start < m.end() and m.start() < s.end for s in spans)]


def _widen(found: _Range, offset: re.Match[str]) -> _Range:
    """The range grown by an event offset on its side, so it still holds the answer."""
    groups = offset.groupdict()
    count, vague = _count(groups.get("num") or "1")
    unit = (groups.get("unit") or groups.get("the") or "day").lower()
    unit = {"weekend": "week", "minute": "day", "hour": "day"}.get(unit, unit)
    unit = unit if unit in ("day", "week", "month", "year") else "day"
    count += int(vague or not groups.get("num"))
    if offset.group("dir").lower().split()[0] in _BACKWARD:
        return replace(found, first=_shift(found.first, -count, unit))
    return replace(found, last=_shift(found.last, count, unit))


def _pick(spans: list[_Span]) -> _Span:
    """The first span, or the narrowest one whose range lies inside it."""
    first = spans[0]
    inside = [s for s in spans[1:] if first.range.first <= s.range.first and s.range.last <= first.range.last]
    return min(inside, key=lambda s: s.range.last - s.range.first) if inside else first


# ---------------------------------------------------------------- public


def resolve_time(query: str, now: datetime) -> TimeHint | None:
    """The query's first (or, when nested, most specific) temporal expression as a UTC day range."""
    if not _MAY_NAME_TIME.search(query):  # most turns: a tenth of the cost of trying every rule
        return None
    now = _as_utc(now)
    spans = _spans(query, now)
    if not spans:
        return None
    chosen = _pick(spans)
    found = chosen.range
    for offset in _event_offsets(query, spans):
        found = _widen(found, offset)
    return TimeHint(_day_start(found.first), _day_end(found.last), query[chosen.start:chosen.end].strip())


def without_time(query: str) -> str:
    """The query with its temporal phrases and event offsets taken out, for keyword search."""
    spans = _spans(query, datetime.now(UTC))  # where the phrases lie does not depend on the reference time
    cuts = sorted([(s.start, s.end) for s in spans] + [(m.start(), m.end()) for m in _event_offsets(query, spans)])
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


_ASKS_WHEN = re.compile("|".join([
    r"\bwhen(?:['’]s|\s+(?:exactly\s+|roughly\s+|approximately\s+)?(?:did|do|does|was|were|is|are|will|would|has|have|"
    r"had|can|could|should|might)\b)",
    r"\b(?:remind\s+me|tell\s+me|know|recall|ask(?:ed)?)\s+when\b",
    r"\b(?:what|which)\s+(?:exact\s+|specific\s+|particular\s+)?(?:date|day|year|month|time|week|weekend|season|"
    r"decade|century)\b",
    r"\b(?:what|which)(?:\s+(?:is|was|were)|['’]s)\s+the\s+(?:exact\s+)?(?:date|day|year|month|time)\b",
    r"\bhow\s+long\s+ago\b",
    r"\bhow\s+long\s+(?:has|had)\s+it\s+been\b",
    r"\bhow\s+many\s+(?:days|weeks|months|years|hours|minutes)\s+(?:ago|since|before|after|until|till|later|earlier|"
    r"between|(?:have|had)\s+passed|passed)\b",
    r"\b(?:since|until|till|by|from)\s+when\b",
    r"\bat\s+what\s+point\b",
]), re.I)


def asks_when(query: str) -> bool:
    """Whether the question's answer is a time ("when did ...", "what year", "how long ago")."""
    return _ASKS_WHEN.search(query) is not None
