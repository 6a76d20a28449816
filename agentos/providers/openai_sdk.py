"""All that agentos relies on inside the OpenAI SDK beyond its public API, in one place.

The fast path posts a body already encoded through the client's request plumbing (`client.post` with
`content=`, options from `openai._base_client.make_request_options`) and reads it with a subclass of
the SDK's stream class; `create_stream` is the public way, used where this SDK version cannot take a
ready body. `tests/test_sdk_contract.py` checks each name and keyword listed here against the installed SDK.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from agentos.providers.sdk_client import read_to_end

CHAT_PATH = "/chat/completions"
# What `chat.completions.create` passes to `make_request_options` (its auth scheme), and so does the fast path.
REQUEST_OPTIONS: dict[str, Any] = {"security": {"bearer_auth": True}}
# The keywords of `client.post` the fast path uses.
POST_KEYWORDS = ("cast_to", "content", "options", "stream", "stream_cls")
# The stream class's method that `KeepAliveStream` wraps to see the end marker.
STREAM_EVENTS_METHOD = "_iter_events"
END_MARKER = "[DONE]"


def ready_body_options(client: Any) -> Any:
    """The request options for posting a ready body to `CHAT_PATH`, or None where this SDK version lacks anything
    the fast path relies on (then the provider goes through `create_stream`)."""
    import openai

    try:
        from openai._base_client import make_request_options

        accepted = inspect.signature(make_request_options).parameters
        post = inspect.signature(client.post).parameters
    except (ImportError, AttributeError, TypeError, ValueError):
        return None
    if any(key not in accepted for key in REQUEST_OPTIONS) or any(key not in post for key in POST_KEYWORDS):
        return None
    if not callable(getattr(openai.Stream, STREAM_EVENTS_METHOD, None)):
        return None
    return dict(make_request_options(**REQUEST_OPTIONS))


def post_ready_body(client: Any, body: bytes, options: Any) -> Any:
    """Open a Chat Completions stream by posting `body` (the JSON `create` would have sent) as it is."""
    from openai.types.chat import ChatCompletion

    return client.post(CHAT_PATH, content=body, cast_to=ChatCompletion, options=options, stream=True,
                       stream_cls=keep_alive_stream())


def create_stream(client: Any, params: dict[str, Any]) -> Any:
    """Open a Chat Completions stream the public way, from keyword arguments."""
    return client.chat.completions.create(**params)


def post_whole(client: Any, params: dict[str, Any]) -> Any:
    """Post a Chat Completions request that is not streamed; the HTTP response (an error status raises the SDK's
    error, as `create` would)."""
    import httpx2

    return client.post(CHAT_PATH, body=params, cast_to=httpx2.Response)


def fetch_json(client: Any, method: str, url: str, body: dict[str, Any] | None, timeout: float) -> Any:
    """The JSON a GET or POST of `url` on the client's server answers (the SDK's way to reach other endpoints)."""
    import httpx2

    options: Any = {"timeout": timeout}
    if method == "POST":
        response = client.post(url, body=body, cast_to=httpx2.Response, options=options)
    else:
        response = client.get(url, cast_to=httpx2.Response, options=options)
    return response.json()


def whole_reply(stream: Any) -> Any:
    """The JSON of a reply that came as one JSON document (a server that did not stream), else None."""
    response = getattr(stream, "response", None)
    if response is None or not response.headers.get("content-type", "").startswith("application/json"):
        return None
    return json.loads(response.read())


def end_marker_seen(stream: Any) -> bool:
    """Whether the stream's end marker arrived (known only of streams posted by `post_ready_body`)."""
    return bool(getattr(stream, "done_seen", False))


@lru_cache(maxsize=1)
def keep_alive_stream() -> type:
    """The SDK's stream class, reading the response to its end at the end marker (where the SDK stops reading and
    closes it), so that the connection is kept for the next call."""
    import openai
    from openai.types.chat import ChatCompletionChunk

    class KeepAliveStream(openai.Stream[ChatCompletionChunk]):
        done_seen = False  # the stream's end marker arrived

        def _iter_events(self) -> Iterator[Any]:
            events = super()._iter_events()
            for sse in events:
                if sse.data.startswith(END_MARKER):
                    self.done_seen = True
                    read_to_end(events)
                yield sse

    return KeepAliveStream
