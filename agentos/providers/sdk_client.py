"""What the OpenAI and Anthropic adapters share: API keys, timeouts, and one guarded streaming attempt."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

from agentos.config import api_key as configured_key
from agentos.config import configured_timeout
from agentos.errors import AuthenticationError
from agentos.providers.base import ProviderEvent
from agentos.providers.models import SERVERS
from agentos.providers.sdk_errors import ErrorContext, map_sdk_error

READ_TIMEOUT = 300.0  # seconds without a byte from the server, once connected
CONNECT_TIMEOUT = 10.0
NO_KEY = "not-needed"  # local servers ignore the key; the SDKs insist on one


def resolve_key(family: str, api_key: str | None) -> str:
    """The key to send: the one given, else the environment or config file; a clear error when one is required."""
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


def default_timeout(read: float | None = None, connect: float | None = None) -> Any:
    """The SDK timeout: quick to connect, patient between streamed chunks. Each is the one given (an agent's
    setting), else the environment or config file (`configured_timeout`), else the default."""
    import httpx2

    read = read or configured_timeout("read") or READ_TIMEOUT
    connect = connect or configured_timeout("connect") or CONNECT_TIMEOUT
    return httpx2.Timeout(read, connect=connect)


_shared_clients: dict[str, Any] = {}
_shared_lock = threading.Lock()


def shared_http_client(sdk: Any) -> Any:
    """One HTTP client per SDK for the whole process, with the SDK's own defaults: every agent's provider shares
    its connection pool, and its TLS setup (some 40 ms of loading certificates) is paid once, not per agent."""
    with _shared_lock:
        client = _shared_clients.get(sdk.__name__)
        if client is None or client.is_closed:
            client = _shared_clients[sdk.__name__] = sdk.DefaultHttpxClient(timeout=default_timeout())
        return client


def guarded_stream(
    create: Callable[[], Any], translate: Callable[[Any], Iterator[ProviderEvent]], sdk: Any, errors: ErrorContext
) -> Iterator[ProviderEvent]:
    """Open an SDK stream and translate it, mapping SDK errors; the HTTP response is closed however it ends.

    That includes GeneratorExit: closing this generator (Ctrl-C closes the turn) closes the response at once.
    """
    response = None
    started = False
    try:
        response = create()
        for event in translate(response):
            started = True
            yield event
    except Exception as exc:
        mapped = map_sdk_error(exc, sdk, errors, partial=started)
        if mapped is None or mapped is exc:
            raise
        raise mapped from exc
    finally:
        if response is not None:
            response.close()


DRAIN_WAIT = 0.05  # seconds a finished stream may take to end its body before its connection is given up


def read_to_end(events: Iterator[Any]) -> None:
    """Read the rest of a response whose stream has said it is done, so its connection can serve the next call
    (no new TCP and TLS handshake); a server that does not end the body promptly costs the connection, not
    the reply (the reading goes on in a thread until the SDK closes the response)."""

    def read() -> None:
        try:
            for _ in events:
                pass
        except Exception:  # noqa: BLE001 - the reply is complete; a failed read only costs the connection
            pass

    reader = threading.Thread(target=read, daemon=True, name="agentos-http-drain")
    reader.start()
    reader.join(DRAIN_WAIT)
