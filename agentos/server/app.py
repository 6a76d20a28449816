"""The FastAPI app of `agentos serve`: its routes, errors as JSON, the body limit, who each request acts for (its
API key; see `auth`), and the registries of held agents it owns, one per user (made when it starts, drained and
closed when it stops)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request

from agentos.errors import AgentOSError
from agentos.server import (
    errors,
    letta_routes,
    routes_agents,
    routes_facts,
    routes_forget,
    routes_memory,
    routes_transfer,
    routes_turns,
)
from agentos.server.auth import Authenticate, Gate
from agentos.server.config import ServeConfig
from agentos.server.errors import BodyTooLargeError, ShuttingDownError, error_response
from agentos.server.tenants import Registries
from agentos.server.users import User, Users
from agentos.version import __version__

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

DESCRIPTION = """Agents that manage their own memory, served: create agents, talk to them (the turn's events as
Server-Sent Events, or the finished turn), and read and change their memory. Errors are
`{"error": {"type", "message"}}` with the status of what went wrong."""


class BodyLimit:
    """A request body over its limit is refused with 413 (by its Content-Length, or as it arrives)."""

    def __init__(self, app: ASGIApp, limit: Callable[[str], int]) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit(scope.get("path", ""))
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            response = error_response("BodyTooLargeError", _too_large(int(declared), limit), 413)
            await response(scope, receive, send)
            return
        seen = 0

        async def counted() -> MutableMapping[str, Any]:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > limit:
                raise BodyTooLargeError(_too_large(seen, limit))
            return message

        await self.app(scope, counted, send)


def _too_large(size: int, limit: int) -> str:
    return f"the request body is {size:,} bytes, over this server's limit of {limit:,} bytes for it."


class AgentosApp(FastAPI):
    """The FastAPI app, holding the registries of the agents it serves while it runs, and the gate requests pass."""

    registry: Registries | None = None
    config: ServeConfig
    gate: Gate

    def held(self) -> Registries:
        """The registries (there are from startup to shutdown)."""
        if self.registry is None:
            raise ShuttingDownError("the server is not serving (it has not started, or it has stopped).")
        return self.registry


def create_app(config: ServeConfig | None = None) -> AgentosApp:
    """The app serving the agents of `config.home` (default: the configured data home)."""
    config = config or ServeConfig()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        assert isinstance(app, AgentosApp)
        app.registry = Registries(config, app.gate.users)
        try:
            yield
        finally:
            await app.registry.close()
            app.registry = None

    app = AgentosApp(title="agentos", version=__version__, description=DESCRIPTION, lifespan=lifespan)
    app.config = config
    app.gate = Gate(Users(config.home), config.host)
    errors.install(app)
    for module in (routes_agents, routes_turns, routes_memory, routes_facts, routes_forget, routes_transfer):
        app.include_router(module.router)
    app.include_router(letta_routes.router)  # Letta's /v1 API (docs/letta-compat.md), ending in a 501 catch-all

    @app.get("/api/health", tags=["server"], summary="Whether the server runs, how many agents it holds, and which "
             "of them are the caller's (needs no key; with one, or on a server without users, names them)")
    async def health(request: Request) -> dict[str, Any]:
        registries = app.held()
        try:
            user: User | None = app.gate.user(request.headers.get("authorization"))
        except AgentOSError:
            user = None  # no names for a caller who is nobody
        own = registries.by_user.get(user.id) if user is not None else None
        return {"status": "draining" if registries.draining else "ok", "version": __version__,
                "held": registries.held, "agents_held": sorted(own.hosts) if own is not None else []}

    def limit(path: str) -> int:
        imports = path.rstrip("/").endswith(("/api/agents/import", letta_routes.IMPORT_PATH))
        return config.max_import_bytes if imports else config.max_body_bytes

    app.add_middleware(BodyLimit, limit=limit)
    app.add_middleware(Authenticate, gate=app.gate)  # outermost: nothing runs for a request without a valid key
    return app
