"""The time module: ISO dates and date-times as aware UTC, whole-day bounds, zones, durations, and the errors."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta, timezone

import pytest

from agentos.errors import AgentOSError, ToolError
from agentos.times import (
    as_utc,
    date_range,
    day_end,
    day_start,
    iso_moment,
    moment_or_ago,
    parse_date,
    parse_duration,
)

NOW = datetime(2024, 6, 1, 12, 0, tzinfo=UTC)


def test_as_utc_takes_naive_moments_as_utc_and_converts_others() -> None:
    assert as_utc(datetime(2024, 5, 1, 9, 30)) == datetime(2024, 5, 1, 9, 30, tzinfo=UTC)
    converted = as_utc(datetime(2024, 5, 1, 9, 30, tzinfo=timezone(timedelta(hours=2))))
    assert converted.tzinfo is UTC and (converted.hour, converted.minute) == (7, 30)


def test_a_day_runs_from_its_first_to_its_last_microsecond() -> None:
    assert day_start(date(2024, 2, 29)) == datetime(2024, 2, 29, tzinfo=UTC)
    assert day_end(date(2024, 2, 29)) == datetime.combine(date(2024, 2, 29), time.max, tzinfo=UTC)
    assert day_end(date(2024, 2, 29)) + timedelta(microseconds=1) == day_start(date(2024, 3, 1))


@pytest.mark.parametrize(("text", "expected"), [
    ("2024-05-01T10:00:00Z", datetime(2024, 5, 1, 10, tzinfo=UTC)),
    ("2024-05-01T10:00:00+00:00", datetime(2024, 5, 1, 10, tzinfo=UTC)),
    ("2024-05-01T10:00:00-05:00", datetime(2024, 5, 1, 15, tzinfo=UTC)),
    ("2024-05-01 10:00", datetime(2024, 5, 1, 10, tzinfo=UTC)),  # naive: UTC
    ("2024-05-01", datetime(2024, 5, 1, tzinfo=UTC)),
])
def test_iso_moments_come_back_aware_in_utc(text: str, expected: datetime) -> None:
    moment = iso_moment(text)
    assert moment == expected and moment.tzinfo is UTC


def test_iso_moment_refuses_what_is_no_date_time() -> None:
    with pytest.raises(ValueError):
        iso_moment("last week")
    with pytest.raises(TypeError):
        iso_moment(20240501)  # type: ignore[arg-type]
    with pytest.raises(OverflowError):
        iso_moment("9999-12-31T23:00-05:00")


def test_a_date_only_end_bound_covers_the_whole_day() -> None:
    assert parse_date("2024-05-01", "start_date") == datetime(2024, 5, 1, tzinfo=UTC)
    assert parse_date("2024-05-01", "end_date", end=True) == datetime(2024, 5, 1, 23, 59, 59, 999999, tzinfo=UTC)
    assert parse_date(" 2024-05-01T08:15 ", "end_date", end=True) == datetime(2024, 5, 1, 8, 15, tzinfo=UTC)
    assert parse_date("2024-05-01T08:15+02:00", "start_date") == datetime(2024, 5, 1, 6, 15, tzinfo=UTC)


@pytest.mark.parametrize("blank", [None, "", "   "])
def test_a_blank_date_is_no_bound(blank: str | None) -> None:
    assert parse_date(blank, "start_date") is None


@pytest.mark.parametrize(("value", "message"), [
    ("yesterday", "start_date 'yesterday' is not a date: use YYYY-MM-DD or YYYY-MM-DDTHH:MM."),
    ("2024-02-30", "start_date '2024-02-30' is not a date: use YYYY-MM-DD or YYYY-MM-DDTHH:MM."),
    ("2024-05-01" + "T" * 40, "start_date is not a date: use YYYY-MM-DD or YYYY-MM-DDTHH:MM."),
    ("0001-01-01T00:00+01:00",
     "start_date '0001-01-01T00:00+01:00' is out of range: use a date between 0001-01-02 and 9999-12-30."),
])
def test_dates_that_cannot_be_read_are_refused_with_the_bound_named(value: str, message: str) -> None:
    with pytest.raises(ToolError) as caught:
        parse_date(value, "start_date")
    assert str(caught.value) == message


def test_a_date_range_is_inclusive_and_in_order() -> None:
    assert date_range("2024-05-01", "2024-05-01") == (datetime(2024, 5, 1, tzinfo=UTC),
                                                      datetime(2024, 5, 1, 23, 59, 59, 999999, tzinfo=UTC))
    assert date_range(None, None) == (None, None)
    with pytest.raises(ToolError, match=r"^--since is after --until\.$"):
        date_range("2024-05-02", "2024-05-01", names=("--since", "--until"))


@pytest.mark.parametrize(("text", "expected"), [
    ("45s", timedelta(seconds=45)), ("30m", timedelta(minutes=30)), ("2h", timedelta(hours=2)),
    ("3d", timedelta(days=3)), ("1w", timedelta(weeks=1)), (" 10 D ", timedelta(days=10)),
])
def test_durations_are_read_in_their_units(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "3", "d", "3y", "3 days", "-3d", "2024-05-01"])
def test_what_is_not_a_duration_is_none(text: str) -> None:
    assert parse_duration(text) is None


def test_a_duration_reaches_back_from_now_and_a_date_stands_as_it_is() -> None:
    assert moment_or_ago("3d", "--since", now=NOW) == NOW - timedelta(days=3)
    assert moment_or_ago("2024-05-01", "--since", now=NOW) == datetime(2024, 5, 1, tzinfo=UTC)
    assert moment_or_ago(None, "--since", now=NOW) is None
    before = datetime.now(UTC)
    assert before - timedelta(hours=2, seconds=5) <= moment_or_ago("2h", "--since") <= datetime.now(UTC)  # type: ignore[operator]


def test_a_duration_past_year_one_or_no_date_at_all_is_refused_with_the_flag_named() -> None:
    with pytest.raises(AgentOSError) as past:
        moment_or_ago("99999999w", "--older-than", now=NOW)
    assert str(past.value) == "--older-than '99999999w' reaches back past year 1; give a shorter duration."
    assert not isinstance(past.value, ToolError)
    with pytest.raises(AgentOSError) as neither:
        moment_or_ago("yesterday", "--since", now=NOW)
    assert str(neither.value) == ("--since 'yesterday' is not a date or a duration: use YYYY-MM-DD, an ISO time "
                                  "(YYYY-MM-DDTHH:MM), or a duration back from now such as 30m, 2h, 3d, 1w.")
    with pytest.raises(ToolError, match="is not a date"):
        moment_or_ago("2024-13-01", "--since", now=NOW)
