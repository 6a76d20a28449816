"""The memory server over streamable HTTP (`agentos mcp serve NAME --http [HOST:]PORT`), at `/mcp`, behind a key.

Every request must carry `Authorization: Bearer KEY`, the key read from an environment variable when the server
starts (it is never written anywhere); anything else is answered 401. The same ASGI app is what a larger server
mounts at `/mcp`.
"""

from __future__ import annotations

import hmac
import os
from typing import Any

from agentos.errors import ConfigError
from agentos.mcp_server.server import MemoryServer

KEY_VARIABLE = "AGENTOS_MCP_KEY"
DEFAULT_HOST = "127.0.0.1"


def server_key(variable: str = KEY_VARIABLE) -> str:
    """The key clients must send, from the environment; ConfigError saying how to set one when there is none."""
    key = os.environ.get(variable, "")
    if len(key) < 16:
        raise ConfigError(f"serving memory over HTTP needs a key of at least 16 characters in ${variable} (clients "
                          f'send it as "Authorization: Bearer KEY"); for example: export {variable}=$(openssl rand '
                          f"-hex 24)")
    return key


def address(text: str) -> tuple[str, int]:
    """`PORT` or `HOST:PORT` as (host, port); loopback unless a host is named."""
    host, _, port = text.rpartition(":")
    try:
        number = int(port)
    except ValueError:
        raise ConfigError(f"--http takes PORT or HOST:PORT, not {text!r}") from None
    if not 0 < number < 65536:
        raise ConfigError(f"--http: {number} is not a port number (1-65535)")
    return host or DEFAULT_HOST, number


def keyed(app: Any, key: str) -> Any:
    """`app` behind the key: an HTTP request without `Authorization: Bearer KEY` gets 401 and never reaches it."""
    expected = f"Bearer {key}".encode()

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            sent = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(sent, expected):
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body",
                            "body": b"agentos: send the server's key as Authorization: Bearer KEY\n"})
                return
        await app(scope, receive, send)

    return guarded


async def serve_http(memory: MemoryServer, host: str, port: int, key: str) -> None:
    """Serve until interrupted, watching the agent for changes meanwhile."""
    import anyio
    import uvicorn  # deferred: only where something is served

    app = keyed(memory.server.streamable_http_app(host=host), key)
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on"))
    async with anyio.create_task_group() as group:
        group.start_soon(memory.watch)
        await server.serve()
        group.cancel_scope.cancel()
