"""The retry policy: backoff, retry-after parsing, and never retrying once output has started."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from agentos.errors import ContextOverflowError, ProviderTimeoutError, RateLimitError, ServerError
from agentos.providers.base import StreamDone, StreamText
from agentos.providers.retry import RetryPolicy, retry_after_seconds, stream_with_retries


def test_retry_after_forms() -> None:
    assert retry_after_seconds({"retry-after": "12"}) == 12.0
    assert retry_after_seconds({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 25 < retry_after_seconds({"retry-after": later}) <= 30
    assert retry_after_seconds({"retry-after": "soon"}) is None and retry_after_seconds(None) is None


def test_backoff_doubles_to_a_cap_with_bounded_jitter() -> None:
    policy = RetryPolicy(max_retries=6, base_delay=1, max_delay=5, jitter=0)
    assert [policy.delay(n, ServerError("x")) for n in range(1, 8)] == [1, 2, 4, 5, 5, 5, None]
    jittery = RetryPolicy(base_delay=2, jitter=0.5)
    assert all(2 <= jittery.delay(1, ServerError("x")) <= 3 for _ in range(50))
    assert policy.delay(1, RateLimitError("x", retry_after=7)) == 7
    assert policy.delay(1, RateLimitError("x", retry_after=500)) is None  # longer than max_retry_after
    assert policy.delay(1, ProviderTimeoutError("x")) is None and policy.delay(1, ContextOverflowError("x")) is None


def test_stream_with_retries_only_before_output() -> None:
    sleeps: list[float] = []
    attempts: list[int] = []

    def attempt():  # type: ignore[no-untyped-def]
        attempts.append(1)
        if len(attempts) == 1:
            raise ServerError("boom")
        yield StreamText("hi")
        if len(attempts) == 2:
            raise ServerError("cut off")
        yield StreamDone()

    policy = RetryPolicy(jitter=0, sleep=sleeps.append)
    events = stream_with_retries(attempt, policy)
    assert next(events) == StreamText("hi")
    with pytest.raises(ServerError, match="cut off"):
        next(events)
    assert sleeps == [1.0] and len(attempts) == 2
