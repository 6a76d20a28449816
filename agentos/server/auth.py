"""Who a request acts for: the user whose API key it carries (`Authorization: Bearer KEY`), or the one local user of
a server without users. Every request but the open paths (health, the API docs) is checked here before any route
runs; the route then gets a `Scope` over that user's agents only (`agentos.server.scope.current_scope`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from agentos.errors import AgentOSError
from agentos.server.config import is_loopback
from agentos.server.errors import UnauthorizedError, error_response
from agentos.server.users import LOCAL_USER, NEED_KEY, User, Users

# Paths any client may read with no key: whether the server runs (also Letta's way), and the API's description.
OPEN_PATHS = frozenset({"/api/health", "/v1/health", "/v1/health/", "/docs", "/docs/oauth2-redirect", "/openapi.json",
                        "/redoc"})
USER = "agentos_user"  # the key of the request's user in the ASGI scope's "state"

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class Gate:
    """Tells the user of a request from its Authorization header, by the users file as it is now (a user added,
    removed or given a new key counts from the next request on)."""

    def __init__(self, users: Users, host: str) -> None:
        self.users = users
        self.host = host

    def user(self, authorization: str | None) -> User:
        """The user whose key the header carries; UnauthorizedError when it carries none of theirs. Without users,
        the local user (with any header or none), unless the server listens beyond loopback."""
        if not self.users.all():
            if not is_loopback(self.host):
                raise UnauthorizedError(
                    f"this server listens on {self.host}, beyond loopback, and has no users now, so it serves no one: "
                    f"add one with `agentos users add NAME` (requests then need its key).")
            return LOCAL_USER
        scheme, _, key = (authorization or "").strip().partition(" ")
        user = self.users.check(key.strip()) if scheme.lower() == "bearer" and key.strip() else None
        if user is None:
            raise UnauthorizedError(NEED_KEY)
        return user


def request_user(scope: Scope) -> User | None:
    """The user `Authenticate` let the request in as (None on an open path)."""
    user = (scope.get("state") or {}).get(USER)
    return user if isinstance(user, User) else None


class Authenticate:
    """Refuses (401, as JSON) a request to any path but the open ones unless the gate lets it in; keeps its user."""

    def __init__(self, app: ASGIApp, gate: Gate) -> None:
        self.app = app
        self.gate = gate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        header = dict(scope.get("headers") or []).get(b"authorization")
        try:
            user = self.gate.user(header.decode("latin-1") if header is not None else None)
        except AgentOSError as exc:  # a wrong key, or a users file that cannot be read: nobody is let in
            unauthorized = isinstance(exc, UnauthorizedError)
            response = error_response(type(exc).__name__, str(exc), 401 if unauthorized else 500,
                                      headers={"WWW-Authenticate": "Bearer"} if unauthorized else None)
            await response(scope, receive, send)
            return
        scope.setdefault("state", {})[USER] = user
        await self.app(scope, receive, send)

