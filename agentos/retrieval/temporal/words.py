"""The words of temporal expressions: month, weekday, season and holiday names, count words, the pattern atoms the
rules are built from, and the context words that tell a time from a name or a count."""

from __future__ import annotations

import re

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
          "october", "november", "december")
MONTH_ALT = "|".join(MONTHS) + "|sept|jan|feb|mar|apr|jun|jul|aug|sep|oct|nov|dec"
MON = rf"(?P<mon>{MONTH_ALT})(?![a-z])\.?"
MON_FULL = rf"(?P<mon>{'|'.join(MONTHS)})(?![a-z'’])"
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
WD = "|".join(WEEKDAYS)
SEASON = r"(?P<season>spring|summer|autumn|fall|winter)"
HOLIDAYS = {"christmas eve": (12, 24), "christmas": (12, 25), "christmas day": (12, 25), "new year's eve": (12, 31),
            "new year's day": (1, 1), "halloween": (10, 31), "valentine's day": (2, 14)}
HOLIDAY = r"(?P<hol>christmas\s+eve|christmas(?:\s+day)?|new\s+year['’]?s\s+(?:eve|day)|halloween|valentine['’]?s\s+day)"
NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
                "ten": 10, "eleven": 11, "twelve": 12}
NUM = (r"(?:\d{1,3}|a\s+couple(?:\s+of)?|couple\s+of|a\s+few|few|several|"
       + "|".join(NUMBER_WORDS) + r"|an?)")
YEAR = r"(?P<year>(?:19|20)\d\d|2100)(?![\w%])"
ORD = r"(?:st|nd|rd|th)"
DAY = r"(?<![\d.,:/-])(?P<day>3[01]|[12]\d|0?[1-9])"
DAY2 = rf"(?:\s*[-–]\s*(?P<day2>3[01]|[12]\d|0?[1-9]){ORD}?)?"
DATE_LEAD = rf"(?:(?:on\s+)?(?:{WD}),?\s+)?"
UNIT = r"(?P<unit>minute|hour|day|week|month|year)s?"

# Words after a number that make it a count, not a year or a day ("2023 people", "may 5 people").
_COUNTED = re.compile(
    r"\s*(?:%|(?:percent|people|persons?|kids|children|adults|guests|dogs|cats|pets|animals|times|items|things|"
    r"words|pages|books|songs|photos|pictures|steps|miles|km|kilomet(?:er|re)s|met(?:er|re)s|feet|inches|"
    r"pounds|lbs|kg|kilos|grams|dollars|bucks|euros|yen|rupees|points|calories|members|followers|students|"
    r"users|votes|views|likes|copies|units|rooms|cars|hours|minutes|seconds|days|weeks|months|years)\b)", re.I)

# The word just before a bare month, season, year or holiday that makes it a time and not a name or a count.
MONTH_CONTEXT = frozenset({"in", "during", "throughout", "since", "before", "after", "until", "till", "of", "early",
                           "mid", "late", "around", "through", "from", "between"})
SEASON_CONTEXT = MONTH_CONTEXT | {"over", "by"}
DAY_CONTEXT = MONTH_CONTEXT | {"on", "by"}
YEAR_CONTEXT = MONTH_CONTEXT | {"circa", "the", "my", "our", "your", "his", "her", "their", "its", "year"}
HOLIDAY_CONTEXT = MONTH_CONTEXT | {"at", "on", "over", "by"}
VERB_MONTHS = frozenset({"may", "march"})  # also verbs: lowercase, without a day or year, they need context

_LOOK = 48  # how far before (or after) a phrase its context words are looked for
_LAST_WORD = re.compile(r"([^\W\d_]+)(?:\s+|\s*-\s*)$")
AFTER_MONTH = re.compile(rf"\b(?:{MONTH_ALT})\.?(?:\s+\d{{1,2}}{ORD}?)?(?:,?\s+\d{{4}})?\s*"
                         r"(?:and|to|through|thru|until|till|or|-|–|—)\s*$", re.I)
AFTER_YEAR = re.compile(r"\b(?:19|20)\d\d\s*(?:and|to|through|thru|until|till|or|-|–|—)\s*$", re.I)
BEFORE_YEAR = re.compile(r"\s*[-–—]\s*(?:19|20)\d\d(?!\d)")
FROM_TAIL = re.compile(r"\s*(?:to|until|till|through|thru|-|–|—)\s", re.I)
BETWEEN_TAIL = re.compile(r"\s*and\s", re.I)


def month_number(word: str) -> int:
    """1 to 12 for a month name or its abbreviation."""
    return [name[:3] for name in MONTHS].index(word.lower().rstrip(".")[:3]) + 1


def parse_count(words: str) -> tuple[int, bool]:
    """The number a count word means, and whether it is vague ("a few")."""
    text = " ".join(words.lower().split())
    if text.isdigit():
        return int(text), False
    if "couple" in text:
        return 2, True
    if "few" in text or "several" in text:
        return 3, True
    return NUMBER_WORDS.get(text, 1), False


def ending_at(pattern: re.Pattern[str], text: str, index: int) -> re.Match[str] | None:
    """The pattern's match (anchored with $) among the few words just before a position."""
    return pattern.search(text, max(0, index - _LOOK), index)


def word_before(text: str, index: int) -> str:
    """The word just before a position, lowercased ("" when none)."""
    found = ending_at(_LAST_WORD, text, index)
    return found.group(1).lower() if found else ""


def counted_after(match: re.Match[str]) -> bool:
    """Whether the number just matched counts things ("2023 people")."""
    return _COUNTED.match(match.string, match.end()) is not None


def verb_month_ok(match: re.Match[str]) -> bool:
    """False for a lowercase "may" or "march" without a day, year or temporal word before it."""
    word = match.group("mon")
    if word.lower() not in VERB_MONTHS or not word.islower():
        return True
    return match.group(0).lower().startswith("on ") or word_before(match.string, match.start()) in DAY_CONTEXT
