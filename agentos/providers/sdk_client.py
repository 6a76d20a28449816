"""What the OpenAI and Anthropic adapters share: API keys, timeouts, and one guarded streaming attempt."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from agentos.errors import AuthenticationError
from agentos.providers.base import ProviderEvent
from agentos.providers.models import SERVERS
from agentos.providers.sdk_errors import ErrorContext, map_sdk_error

READ_TIMEOUT = 300.0  # seconds without a byte from the server, once connected
CONNECT_TIMEOUT = 10.0
NO_KEY = "not-needed"  # local servers ignore the key; the SDKs insist on one


def resolve_key(family: str, api_key: str | None) -> str:
    """The key to send: the one given, else the environment or config file; a clear error when one is required."""
    from agentos.config import api_key as configured_key

    server = SERVERS[family]
    key = api_key or configured_key(family, server.key_variable)
    if key:
        return key
    if server.key_required:
        raise AuthenticationError(
            f"{server.label} needs an API key: set {server.key_variable} (export {server.key_variable}=...), "
            f'or add it to the agentos config file under "api_keys". To try agentos without a key: agentos demo'
        )
    return NO_KEY


def default_timeout() -> Any:
    """The SDK timeout: quick to connect, patient between streamed chunks."""
    import httpx2

    return httpx2.Timeout(READ_TIMEOUT, connect=CONNECT_TIMEOUT)


def guarded_stream(
    create: Callable[[], Any], translate: Callable[[Any], Iterator[ProviderEvent]], sdk: Any, errors: ErrorContext
) -> Iterator[ProviderEvent]:
    """Open an SDK stream and translate it, mapping SDK errors; the HTTP response is closed however it ends.

    That includes GeneratorExit: closing this generator (Ctrl-C closes the turn) closes the response at once.
    """
    response = None
    try:
        response = create()
        yield from translate(response)
    except Exception as exc:
        mapped = map_sdk_error(exc, sdk, errors)
        if mapped is None or mapped is exc:
            raise
        raise mapped from exc
    finally:
        if response is not None:
            response.close()
