"""Temporal expressions in queries: relative and absolute ones, ranges, the reference time, false positives."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from agentos.retrieval.temporal.questions import asks_when
from agentos.retrieval.temporal.resolver import TimeHint, resolve_time, without_time

NOW = datetime(2023, 5, 17, 15, 30, tzinfo=UTC)  # a Wednesday; weeks start on Monday (15-21 May)


def days(query: str, now: datetime = NOW) -> tuple[date, date] | None:
    """The first and last UTC day the query resolves to, or None."""
    hint = resolve_time(query, now)
    return None if hint is None else (hint.start.date(), hint.end.date())


def one(day: date) -> tuple[date, date]:
    """A range of a single day."""
    return day, day


@pytest.mark.parametrize(("query", "expected"), [
    ("What did I do today?", one(date(2023, 5, 17))),
    ("what happened this morning", one(date(2023, 5, 17))),
    ("What happened yesterday?", one(date(2023, 5, 16))),
    ("yesterday evening", one(date(2023, 5, 16))),
    ("the day before yesterday", one(date(2023, 5, 15))),
    ("What are we doing tomorrow?", one(date(2023, 5, 18))),
    ("the day after tomorrow", one(date(2023, 5, 19))),
    ("what did I eat last night", (date(2023, 5, 16), date(2023, 5, 17))),
])
def test_days_next_to_today(query: str, expected: tuple[date, date]) -> None:
    assert days(query) == expected


@pytest.mark.parametrize(("query", "expected"), [
    ("What did we do last week?", (date(2023, 5, 8), date(2023, 5, 14))),
    ("this week", (date(2023, 5, 15), date(2023, 5, 21))),
    ("next week", (date(2023, 5, 22), date(2023, 5, 28))),
    ("the week before last", (date(2023, 5, 1), date(2023, 5, 7))),
    ("last weekend", (date(2023, 5, 13), date(2023, 5, 14))),
    ("this past weekend", (date(2023, 5, 13), date(2023, 5, 14))),
    ("this weekend", (date(2023, 5, 20), date(2023, 5, 21))),
    ("next weekend", (date(2023, 5, 27), date(2023, 5, 28))),
    ("last month", (date(2023, 4, 1), date(2023, 4, 30))),
    ("this month", (date(2023, 5, 1), date(2023, 5, 31))),
    ("next month", (date(2023, 6, 1), date(2023, 6, 30))),
    ("last year", (date(2022, 1, 1), date(2022, 12, 31))),
    ("this year", (date(2023, 1, 1), date(2023, 12, 31))),
    ("next year", (date(2024, 1, 1), date(2024, 12, 31))),
    ("earlier this year", (date(2023, 1, 1), date(2023, 5, 17))),
    ("later this month", (date(2023, 5, 17), date(2023, 5, 31))),
])
def test_calendar_weeks_months_and_years(query: str, expected: tuple[date, date]) -> None:
    assert days(query) == expected


@pytest.mark.parametrize(("query", "expected"), [
    ("3 days ago", one(date(2023, 5, 14))),
    ("three days ago", one(date(2023, 5, 14))),
    ("a day ago", one(date(2023, 5, 16))),
    ("100 days ago", one(date(2023, 2, 6))),
    ("an hour ago", one(date(2023, 5, 17))),
    ("two weeks ago", (date(2023, 4, 30), date(2023, 5, 6))),  # a week wide, centred on 3 May
    ("a month ago", (date(2023, 4, 2), date(2023, 5, 2))),
    ("two years ago", (date(2020, 11, 16), date(2021, 11, 15))),
    ("a couple of days ago", (date(2023, 5, 14), date(2023, 5, 16))),  # vague: one unit either way
    ("a few weeks ago", (date(2023, 4, 19), date(2023, 5, 3))),
    ("twelve months ago", (date(2022, 5, 2), date(2022, 6, 1))),
    ("five days from now", one(date(2023, 5, 22))),
    ("in the past week", (date(2023, 5, 10), date(2023, 5, 17))),
    ("over the last 3 days", (date(2023, 5, 14), date(2023, 5, 17))),
    ("the past few days", (date(2023, 5, 13), date(2023, 5, 17))),
    ("in the next two weeks", (date(2023, 5, 17), date(2023, 5, 31))),
    ("recently", (date(2023, 4, 17), date(2023, 5, 17))),
    ("What have I been reading lately?", (date(2023, 4, 17), date(2023, 5, 17))),
    ("the other day", (date(2023, 5, 10), date(2023, 5, 16))),
])
def test_counted_and_rolling_offsets(query: str, expected: tuple[date, date]) -> None:
    assert days(query) == expected


@pytest.mark.parametrize(("query", "expected"), [
    ("last Monday", date(2023, 5, 15)),
    ("on Friday", date(2023, 5, 12)),
    ("what did I do on Wednesday", date(2023, 5, 10)),  # today is Wednesday: the one before
    ("last Wednesday", date(2023, 5, 10)),
    ("this past Sunday", date(2023, 5, 14)),
    ("this Friday", date(2023, 5, 19)),  # the Friday of the current Monday-to-Sunday week
    ("next Wednesday", date(2023, 5, 24)),
    ("next Monday", date(2023, 5, 22)),
])
def test_weekdays(query: str, expected: date) -> None:
    assert days(query) == one(expected)


@pytest.mark.parametrize(("query", "expected"), [
    ("2023-05-08", one(date(2023, 5, 8))),
    ("on 2023/05/08", one(date(2023, 5, 8))),
    ("8 May 2023", one(date(2023, 5, 8))),
    ("the 8th of May, 2023", one(date(2023, 5, 8))),
    ("May 8, 2023", one(date(2023, 5, 8))),
    ("on Friday, May 5, 2023", one(date(2023, 5, 5))),
    ("Sept. 3rd 2021", one(date(2021, 9, 3))),
    ("May 8th", one(date(2023, 5, 8))),
    ("8th of May", one(date(2023, 5, 8))),
    ("May 20th", one(date(2022, 5, 20))),  # not after today, so last year's
    ("the 4th of July", one(date(2022, 7, 4))),
    ("May 12-14, 2023", (date(2023, 5, 12), date(2023, 5, 14))),
    ("in May 2023", (date(2023, 5, 1), date(2023, 5, 31))),
    ("May of 2023", (date(2023, 5, 1), date(2023, 5, 31))),
    ("February 2024", (date(2024, 2, 1), date(2024, 2, 29))),
    ("in May", (date(2023, 5, 1), date(2023, 5, 31))),  # the current May has begun
    ("in June", (date(2022, 6, 1), date(2022, 6, 30))),  # this year's June has not
    ("during December", (date(2022, 12, 1), date(2022, 12, 31))),
    ("last May", (date(2022, 5, 1), date(2022, 5, 31))),
    ("last April", (date(2023, 4, 1), date(2023, 4, 30))),
    ("next May", (date(2024, 5, 1), date(2024, 5, 31))),
    ("in 2023", (date(2023, 1, 1), date(2023, 12, 31))),
    ("the 2021 election", (date(2021, 1, 1), date(2021, 12, 31))),
    ("the 1990s", (date(1990, 1, 1), date(1999, 12, 31))),
    ("Christmas 2022", one(date(2022, 12, 25))),
    ("What did I buy last Christmas?", one(date(2022, 12, 25))),
    ("at Halloween", one(date(2022, 10, 31))),
])
def test_absolute_dates_months_and_years(query: str, expected: tuple[date, date]) -> None:
    assert days(query) == expected


@pytest.mark.parametrize(("query", "expected"), [
    ("in the summer of 2023", (date(2023, 6, 1), date(2023, 8, 31))),
    ("spring 2021", (date(2021, 3, 1), date(2021, 5, 31))),
    ("fall of 2022", (date(2022, 9, 1), date(2022, 11, 30))),
    ("the winter of 2023", (date(2023, 12, 1), date(2024, 2, 29))),  # December to February, leap year
    ("last summer", (date(2022, 6, 1), date(2022, 8, 31))),
    ("this spring", (date(2023, 3, 1), date(2023, 5, 31))),
    ("last winter", (date(2022, 12, 1), date(2023, 2, 28))),
    ("next summer", (date(2023, 6, 1), date(2023, 8, 31))),
    ("in the summer", (date(2022, 6, 1), date(2022, 8, 31))),  # the most recent one that has begun
    ("early May 2023", (date(2023, 5, 1), date(2023, 5, 10))),
    ("mid-May 2023", (date(2023, 5, 11), date(2023, 5, 20))),
    ("late May 2023", (date(2023, 5, 21), date(2023, 5, 31))),
    ("late February 2024", (date(2024, 2, 21), date(2024, 2, 29))),
    ("the beginning of March", (date(2023, 3, 1), date(2023, 3, 10))),
    ("the end of 2022", (date(2022, 9, 1), date(2022, 12, 31))),
    ("early 2020", (date(2020, 1, 1), date(2020, 4, 30))),
    ("in the late 1990s", (date(1997, 1, 1), date(1999, 12, 31))),
    ("the weekend of 8 May 2023", (date(2023, 5, 13), date(2023, 5, 14))),
    ("the week of May 10, 2023", (date(2023, 5, 8), date(2023, 5, 14))),
])
def test_seasons_and_parts_of_periods(query: str, expected: tuple[date, date]) -> None:
    assert days(query) == expected


@pytest.mark.parametrize(("query", "expected"), [
    ("before May 2023", (date(2022, 5, 1), date(2023, 4, 30))),
    ("after May 2023", (date(2023, 6, 1), date(2024, 5, 31))),
    ("what did we do after Christmas 2022", (date(2022, 12, 26), date(2023, 12, 25))),
    ("since last week", (date(2023, 5, 8), date(2023, 5, 17))),
    ("since Monday", (date(2023, 5, 15), date(2023, 5, 17))),
    ("since 2015", (date(2015, 1, 1), date(2023, 5, 17))),
    ("until June 2022", (date(2021, 6, 30), date(2022, 6, 30))),
    ("two days before May 8, 2023", one(date(2023, 5, 6))),
    ("a week after 2023-05-01", one(date(2023, 5, 8))),
    ("the day after Christmas 2022", one(date(2022, 12, 26))),
    ("the week after Christmas 2022", (date(2022, 12, 26), date(2023, 1, 1))),
    ("what did we do on the Sunday before May 8, 2023", one(date(2023, 5, 7))),  # May 8 is a Monday
    ("the Monday before May 8, 2023", one(date(2023, 5, 1))),  # strictly before
    ("the Sunday before May 2023", one(date(2023, 4, 30))),
    ("the last day before May 8, 2023", one(date(2023, 5, 7))),
    ("the Friday after May 8, 2023", one(date(2023, 5, 12))),
    ("what did she do on Sunday before May 8, 2023", one(date(2023, 5, 7))),  # not "on Sunday" before today
    ("Friday after June 2, 2023", one(date(2023, 6, 9))),
    ("what did she run in last weekend before April 10, 2023", (date(2023, 4, 8), date(2023, 4, 9))),
    ("what did he finish last week before May 8, 2023", (date(2023, 5, 1), date(2023, 5, 7))),
    ("between May and July 2023", (date(2023, 5, 1), date(2023, 7, 31))),
    ("from May 3 to May 10, 2023", (date(2023, 5, 3), date(2023, 5, 10))),
    ("between 2019 and 2021", (date(2019, 1, 1), date(2021, 12, 31))),
    ("2019-2021", (date(2019, 1, 1), date(2021, 12, 31))),
])
def test_before_after_and_between(query: str, expected: tuple[date, date]) -> None:
    assert days(query) == expected


def test_a_yearless_date_takes_the_year_named_elsewhere() -> None:
    hint = resolve_time("In 2021, what did I do on May 8?", NOW)
    assert hint is not None and (hint.start.date(), hint.phrase) == (date(2021, 5, 8), "on May 8")
    assert days("last year, in June") == (date(2022, 6, 1), date(2022, 6, 30))


def test_the_first_expression_wins_unless_another_lies_inside_it() -> None:
    assert days("what did I say yesterday about last year?") == one(date(2023, 5, 16))
    assert days("in May 2023, on the weekend of May 8th 2023") == (date(2023, 5, 13), date(2023, 5, 14))


def test_ranges_are_whole_utc_days_with_inclusive_ends() -> None:
    hint = resolve_time("in May 2023", NOW)
    assert hint == TimeHint(datetime(2023, 5, 1, tzinfo=UTC), datetime(2023, 5, 31, 23, 59, 59, 999999, tzinfo=UTC),
                            "in May 2023")
    assert hint.contains(datetime(2023, 5, 31, 23, 59, 59, tzinfo=UTC))
    assert hint.contains(datetime(2023, 5, 1, 0, 0, tzinfo=UTC))
    assert not hint.contains(datetime(2023, 6, 1, 0, 0, tzinfo=UTC))
    assert hint.contains(datetime(2023, 5, 20))  # naive counts as UTC
    assert hint.contains(datetime(2023, 5, 31, 20, 0, tzinfo=timezone(timedelta(hours=-3))))  # 23:00 UTC
    assert not hint.contains(datetime(2023, 5, 31, 22, 0, tzinfo=timezone(timedelta(hours=-3))))  # 1 June UTC


def test_distance_is_zero_inside_and_grows_outside() -> None:
    hint = resolve_time("yesterday", NOW)
    assert hint is not None
    assert hint.distance(datetime(2023, 5, 16, 12, tzinfo=UTC)) == timedelta(0)
    assert hint.distance(datetime(2023, 5, 14, tzinfo=UTC)) == timedelta(days=2)
    assert hint.distance(datetime(2023, 5, 18, tzinfo=UTC)) == timedelta(days=1, microseconds=1)
    assert hint.distance(datetime(2023, 5, 19)) > hint.distance(datetime(2023, 5, 18))


def test_last_month_and_last_week_across_a_new_year() -> None:
    january = datetime(2024, 1, 3, 9, tzinfo=UTC)  # a Wednesday
    assert days("last month", january) == (date(2023, 12, 1), date(2023, 12, 31))
    assert days("last week", january) == (date(2023, 12, 25), date(2023, 12, 31))
    assert days("this week", january) == (date(2024, 1, 1), date(2024, 1, 7))
    assert days("yesterday", datetime(2024, 1, 1, tzinfo=UTC)) == one(date(2023, 12, 31))
    assert days("in December", january) == (date(2023, 12, 1), date(2023, 12, 31))
    assert days("this winter", january) == (date(2023, 12, 1), date(2024, 2, 29))
    assert days("last Christmas", january) == one(date(2023, 12, 25))
    assert days("earlier this year", january) == (date(2024, 1, 1), date(2024, 1, 3))


def test_month_ends_and_the_leap_day() -> None:
    march_first = datetime(2024, 3, 1, 8, tzinfo=UTC)
    assert days("yesterday", march_first) == one(date(2024, 2, 29))
    assert days("last month", march_first) == (date(2024, 2, 1), date(2024, 2, 29))
    assert days("a month ago", datetime(2023, 3, 31, tzinfo=UTC)) == (date(2023, 2, 13), date(2023, 3, 15))
    assert days("on February 29th", datetime(2023, 6, 1, tzinfo=UTC)) == one(date(2020, 2, 29))
    assert days("2024-02-29") == one(date(2024, 2, 29))
    assert days("2023-02-29") is None  # no such day
    assert days("February 30, 2023") is None


def test_the_sunday_monday_edge_of_weeks() -> None:
    sunday, monday = datetime(2023, 5, 21, 22, tzinfo=UTC), datetime(2023, 5, 22, 1, tzinfo=UTC)
    assert days("this week", sunday) == (date(2023, 5, 15), date(2023, 5, 21))
    assert days("last week", sunday) == (date(2023, 5, 8), date(2023, 5, 14))
    assert days("this week", monday) == (date(2023, 5, 22), date(2023, 5, 28))
    assert days("last week", monday) == (date(2023, 5, 15), date(2023, 5, 21))
    assert days("last weekend", sunday) == (date(2023, 5, 13), date(2023, 5, 14))
    assert days("last weekend", monday) == (date(2023, 5, 20), date(2023, 5, 21))
    assert days("last Sunday", sunday) == one(date(2023, 5, 14))
    assert days("on Sunday", monday) == one(date(2023, 5, 21))


def test_the_reference_time_is_taken_in_utc() -> None:
    evening_in_new_york = datetime(2023, 5, 17, 22, 30, tzinfo=timezone(timedelta(hours=-4)))  # 02:30 UTC on the 18th
    assert days("today", evening_in_new_york) == one(date(2023, 5, 18))
    assert days("today", datetime(2023, 5, 17, 23, 59)) == one(date(2023, 5, 17))  # naive: UTC


def test_event_relative_offsets_resolve_to_nothing_alone() -> None:
    assert resolve_time("What did we do two days before the trip?", NOW) is None
    assert resolve_time("What happened the week after the wedding?", NOW) is None
    assert resolve_time("What did he do the next day?", NOW) is None
    assert resolve_time("three weeks later, where did she go?", NOW) is None
    assert asks_when("When did we leave, two days before the trip?")


def test_an_event_offset_widens_a_range_it_sits_beside() -> None:
    assert days("What did we do two days before the trip in May 2023?") == (date(2023, 4, 29), date(2023, 5, 31))
    assert days("where did he go the day after the party last week?") == (date(2023, 5, 8), date(2023, 5, 16))


@pytest.mark.parametrize("query", [
    "What is my favourite colour?",
    "I have 2 dogs",
    "top 10 songs",
    "Room 2023 was booked for the meeting",
    "2023 people came to the concert",
    "In 2023 people moved",  # followed by a unit word, so not a year
    "we have 1999 reasons",
    "This may take a while",
    "we march 5 miles a day",
    "may 5 people join?",
    "I stayed at April's house",
    "a gift from June",
    "What do you do on Mondays?",
    "Sunday",
    "the last time I saw her",
    "I ran for 2 weeks",
    "Christmas cookies recipe",
    "What did I do on 5/8/2023?",  # day and month order is ambiguous: not read
    "what did he say that day?",
])
def test_no_time_in_these(query: str) -> None:
    assert resolve_time(query, NOW) is None
    assert without_time(query) == query


def test_the_phrase_keeps_the_query_words() -> None:
    hint = resolve_time("Where did I go During The Summer Of 2022?", NOW)
    assert hint is not None and hint.phrase == "During The Summer Of 2022"


@pytest.mark.parametrize(("query", "expected"), [
    ("What did we do last week?", "What did we do?"),
    ("In May 2023, where did Alice travel?", "where did Alice travel?"),
    ("what did I cook two days ago for dinner", "what did I cook for dinner"),
    ("What did we do two days before the trip?", "What did we do the trip?"),
    ("Did I mention the concert between May and July 2023 or recently?", "Did I mention the concert or?"),
    ("when did I see Bob", "when did I see Bob"),
    ("What did Maria run in last weekend before April 10, 2023?", "What did Maria run?"),
    ("What did we do the last day before May 8, 2023?", "What did we do?"),
])
def test_without_time(query: str, expected: str) -> None:
    assert without_time(query) == expected


@pytest.mark.parametrize("query", [
    "When did I go to Paris?",
    "when was the party",
    "When exactly did she move?",
    "When's the wedding?",
    "Do you know when she moved?",
    "What year did she graduate?",
    "What date is the appointment?",
    "In which month did they marry?",
    "What was the date of the concert?",
    "How long ago did we meet?",
    "How many days ago did we talk?",
    "How long has it been since the move?",
    "Since when has he lived there?",
])
def test_asks_when(query: str) -> None:
    assert asks_when(query)


@pytest.mark.parametrize("query", [
    "What did I do when I was in Paris?",
    "Where did we go last week?",
    "How long did the trip last?",
    "Who came to the party?",
    "When I was young, what did I like?",
])
def test_does_not_ask_when(query: str) -> None:
    assert not asks_when(query)
