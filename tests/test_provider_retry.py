"""The retry policy: backoff, retry-after parsing, never retrying once output has started, and back-offs that say
how long is left and end at once when the stream is closed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from agentos.errors import ContextOverflowError, ProviderError, ProviderTimeoutError, RateLimitError, ServerError
from agentos.providers.base import ProviderEvent, StreamDone, StreamRetrying, StreamText
from agentos.providers.retry import RETRY_TICK, RetryPolicy, retry_after_seconds, stream_with_retries


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


def failing_then(*errors: ProviderError, text: str = "hi") -> tuple[list[int], Callable[[], Iterator[ProviderEvent]]]:
    """An attempt that raises each of `errors` in turn before any output, then streams `text`; and its attempt count."""
    attempts: list[int] = []

    def attempt() -> Iterator[ProviderEvent]:
        attempts.append(1)
        if len(attempts) <= len(errors):
            raise errors[len(attempts) - 1]
        yield StreamText(text)
        yield StreamDone()

    return attempts, attempt


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
    events = (e for e in stream_with_retries(attempt, policy) if not isinstance(e, StreamRetrying))
    assert next(events) == StreamText("hi")
    with pytest.raises(ServerError, match="cut off"):
        next(events)
    assert sum(sleeps) == 1.0 and len(attempts) == 2  # one back-off of 1 s, then no retry once "hi" was out


def test_a_back_off_is_announced_then_counted_down_tick_by_tick() -> None:
    sleeps: list[float] = []
    attempts, attempt = failing_then(RateLimitError("slow down", retry_after=1.0), ServerError("boom", retry_after=0.6))
    events = list(stream_with_retries(attempt, RetryPolicy(sleep=sleeps.append)))
    retrying = [e for e in events if isinstance(e, StreamRetrying)]
    assert [(e.kind, e.error, e.attempt, e.max_retries, e.wait) for e in retrying[::4][:2]] == [
        ("RateLimitError", "slow down", 1, 3, 1.0), ("ServerError", "boom", 2, 3, 0.6)]
    assert [e.remaining for e in retrying[:4]] == [1.0, 0.75, 0.5, 0.25]  # announced, then what is left after each tick
    assert [e.remaining for e in retrying[4:]] == pytest.approx([0.6, 0.35, 0.1])
    assert sleeps[:4] == [RETRY_TICK] * 4 and sleeps[4:] == pytest.approx([0.25, 0.25, 0.1])
    assert events[len(retrying):] == [StreamText("hi"), StreamDone()] and len(attempts) == 3


def test_a_retry_after_of_zero_is_announced_without_a_sleep() -> None:
    sleeps: list[float] = []
    _, attempt = failing_then(RateLimitError("now", retry_after=0))
    events = list(stream_with_retries(attempt, RetryPolicy(sleep=sleeps.append)))
    assert events[0] == StreamRetrying("now", "RateLimitError", 1, 3, 0.0, 0.0) and sleeps == []
    assert events[1:] == [StreamText("hi"), StreamDone()]


@pytest.mark.parametrize("seen", [1, 3])
def test_closing_the_stream_during_a_back_off_ends_it_at_once(seen: int) -> None:
    sleeps: list[float] = []
    attempts, attempt = failing_then(RateLimitError("slow down", retry_after=30))
    events = stream_with_retries(attempt, RetryPolicy(sleep=sleeps.append))
    got = [next(events) for _ in range(seen)]
    assert all(isinstance(e, StreamRetrying) for e in got) and got[-1].remaining == 30 - RETRY_TICK * (seen - 1)  # type: ignore[union-attr]
    events.close()  # type: ignore[attr-defined]  # a generator, typed as an Iterator
    assert sleeps == [RETRY_TICK] * (seen - 1) and len(attempts) == 1  # no further sleep, no further attempt
    assert list(events) == []


@pytest.mark.usefixtures("allow_real_providers")
def test_a_connection_lost_says_whether_the_server_was_reached_and_a_cut_reply_says_it_was_cut() -> None:
    import httpx2
    from mock_api import Backoffs, ChunkStream, MockAPI, oa_delta, oa_event, oa_text_reply, sse_response

    from agentos.errors import IncompleteStreamError
    from agentos.messages import Message
    from agentos.providers.base import ModelRequest
    from agentos.providers.openai_provider import OpenAIProvider

    def provider(api: MockAPI) -> OpenAIProvider:
        return OpenAIProvider("m", family="llamacpp", base_url="http://127.0.0.1:8091/v1", http_client=api.client(),
                              retry=RetryPolicy(max_retries=1, jitter=0, sleep=Backoffs(lambda: len(api.requests))))

    request = ModelRequest("s", "", [Message.user("hi")])
    cut = ChunkStream([oa_event(oa_delta({"role": "assistant", "content": "Hiking is "}))],
                      then=httpx2.RemoteProtocolError("peer closed connection without sending complete message body"))
    with pytest.raises(IncompleteStreamError) as caught:
        list(provider(MockAPI(sse_response(cut))).stream(request))
    assert str(caught.value).startswith("llama.cpp server at http://127.0.0.1:8091/v1 stopped mid-reply")
    closed = MockAPI(httpx2.RemoteProtocolError("Server disconnected without sending a response."),
                     sse_response(oa_text_reply("hi")))
    events = list(provider(closed).stream(request))
    [retrying] = [e for e in events if isinstance(e, StreamRetrying)][:1]
    assert retrying.error.startswith("llama.cpp server at http://127.0.0.1:8091/v1 closed the connection without "
                                     "finishing its answer (Server disconnected without sending a response.)")
    assert isinstance(events[-1], StreamDone) and len(closed.requests) == 2  # retried: nothing had arrived
    with pytest.raises(ServerError, match=r"^could not reach llama.cpp server at http://127.0.0.1:8091/v1"):
        list(provider(MockAPI(httpx2.ConnectError("refused"), httpx2.ConnectError("refused"))).stream(request))
