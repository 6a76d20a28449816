"""Retries with backoff for provider calls: rate limits and server errors, honouring retry-after."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any

from agentos.errors import ProviderError, RateLimitError, ServerError
from agentos.providers.base import ProviderEvent, StreamRetrying

RETRYABLE: tuple[type[ProviderError], ...] = (RateLimitError, ServerError)
RETRY_TICK = 0.25  # the longest single sleep of a back-off: how often it reports, and how soon it can be cancelled


@dataclass
class RetryPolicy:
    """How often and how long to wait before trying a failed call again.

    The wait doubles from `base_delay` up to `max_delay`, plus up to `jitter` of itself at
    random; a server's retry-after wins when it is no longer than `max_retry_after`.
    """

    max_retries: int = 3
    base_delay: float = 1.0
    max_delay: float = 30.0
    max_retry_after: float = 120.0
    jitter: float = 0.2
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)

    def delay(self, attempt: int, error: ProviderError) -> float | None:
        """Seconds to wait before retry number `attempt` (1-based), or None to give up."""
        if attempt > self.max_retries or not isinstance(error, RETRYABLE):
            return None
        retry_after = getattr(error, "retry_after", None)
        if retry_after is not None:
            return max(0.0, retry_after) if retry_after <= self.max_retry_after else None
        wait = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
        return wait * (1 + self.jitter * random.random())


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """The wait a response asks for: `retry-after-ms`, or `retry-after` in seconds or as an HTTP date."""
    if not headers:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return float(millis) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def stream_with_retries(
    attempt: Callable[[], Iterator[ProviderEvent]], policy: RetryPolicy
) -> Iterator[ProviderEvent]:
    """Run `attempt()` and re-run it after retryable errors, but only while nothing was yielded yet.

    Once a reply has started streaming, a retry would repeat text the consumer already saw, so a
    failure then is raised as it is. Each back-off is announced and counted down with `StreamRetrying`
    events (see `back_off`), so the consumer can show it, and cancel it by closing this generator.
    """
    tries = 0
    while True:
        started = False
        stream = attempt()
        try:
            for event in stream:
                started = True
                yield event
            return
        except ProviderError as exc:
            tries += 1
            wait = None if started else policy.delay(tries, exc)
            if wait is None:
                raise
            failure = exc
        finally:
            close: Any = getattr(stream, "close", None)
            if close is not None:
                close()
        yield from back_off(failure, tries, wait, policy)


def back_off(error: ProviderError, attempt: int, wait: float, policy: RetryPolicy) -> Iterator[StreamRetrying]:
    """Wait `wait` seconds before retry number `attempt`, in ticks of at most RETRY_TICK, saying what is left.

    The wait is counted down by the ticks slept, not by the clock, so a sleep that takes no time (a test's)
    still ends it. Closing the generator at any of its events ends the wait there: no further sleep.
    """
    def retrying(remaining: float) -> StreamRetrying:
        return StreamRetrying(str(error), type(error).__name__, attempt, policy.max_retries, wait, remaining)

    left = wait
    yield retrying(left)
    while left > 0:
        tick = min(RETRY_TICK, left)
        policy.sleep(tick)
        left -= tick
        if left > 0:
            yield retrying(left)
