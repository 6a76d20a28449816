"""All that agentos relies on inside the Anthropic SDK beyond its public API, in one place.

The fast path posts a body already encoded through the client's request plumbing (`client.post` with
`content=`, options from `anthropic._base_client.make_request_options`) and reads it with the SDK's stream
class; `create_stream` is the public way, used where this SDK version cannot take a ready body.
`tests/test_sdk_contract.py` checks each name and keyword listed here against the installed SDK.
"""

from __future__ import annotations

import inspect
from typing import Any

MESSAGES_PATH = "/v1/messages"
# What `messages.create` passes to `make_request_options` (its headers, tracing names), and so does the fast path.
REQUEST_OPTIONS: dict[str, Any] = {"extra_headers": {}, "span_name": "anthropic.messages.create",
                                   "span_route": MESSAGES_PATH}
# The keywords of `client.post` the fast path uses.
POST_KEYWORDS = ("cast_to", "content", "options", "stream", "stream_cls")


def ready_body_options(client: Any) -> Any:
    """The request options for posting a ready body to `MESSAGES_PATH`, or None where this SDK version lacks
    anything the fast path relies on (then the provider goes through `create_stream`)."""
    try:
        from anthropic._base_client import make_request_options

        accepted = inspect.signature(make_request_options).parameters
        post = inspect.signature(client.post).parameters
    except (ImportError, AttributeError, TypeError, ValueError):
        return None
    if any(key not in accepted for key in REQUEST_OPTIONS) or any(key not in post for key in POST_KEYWORDS):
        return None
    return dict(make_request_options(**REQUEST_OPTIONS))


def post_ready_body(client: Any, body: bytes, options: Any) -> Any:
    """Open a Messages stream by posting `body` (the JSON `create` would have sent) as it is."""
    import anthropic
    from anthropic.types import Message, RawMessageStreamEvent

    return client.post(MESSAGES_PATH, content=body, cast_to=Message, options=options, stream=True,
                       stream_cls=anthropic.Stream[RawMessageStreamEvent])


def create_stream(client: Any, params: dict[str, Any]) -> Any:
    """Open a Messages stream the public way, from keyword arguments."""
    return client.messages.create(**params)
