"""What every Letta-compatible route shares: errors in the shape Letta's client turns into its exceptions, agents
addressed by Letta's `agent_id` (an agentos agent id, `agent-…`), and the answer to a call agentos does not support.

Letta answers an error with `{"detail": message}` and its status; the client raises `NotFoundError` for 404,
`ConflictError` for 409, `UnprocessableEntityError` for 422 and so on, and retries 408, 409, 429 and 5xx unless the
answer's `x-should-retry` header says otherwise. Errors here carry `detail` and agentos's own `error` object, and
say `x-should-retry: false` unless trying again can help (a full queue, an agent busy elsewhere, a server draining).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from pydantic import ValidationError

from agentos.errors import AgentBusyError, AgentNotFoundError, AgentOSError
from agentos.server.errors import QueueFullError, ShuttingDownError, body, status_of
from agentos.server.scope import Scope
from agentos.storage.agent_rows import AgentRow

RETRYABLE: tuple[type[AgentOSError], ...] = (QueueFullError, AgentBusyError, ShuttingDownError)


class NotSupportedError(AgentOSError):
    """A Letta call, or a part of one, that agentos does not support (answered 501)."""

    def __init__(self, call: str, why: str = "") -> None:
        super().__init__(f"{call} is not supported by agentos's Letta-compatible API{': ' + why if why else ''}. "
                         f"See docs/letta-compat.md for the calls it supports.")
        self.call = call


def letta_error(kind: str, message: str, status: int, field: str | None = None, retry: bool = False,
                extra: dict[str, str] | None = None) -> JSONResponse:
    """An error as Letta's client reads it: `detail`, plus agentos's `error` object."""
    headers = {"x-should-retry": "true" if retry else "false", **(extra or {})}
    return JSONResponse({"detail": message, **body(kind, message, field)}, status_code=status, headers=headers)


def _validation(errors: list[Any]) -> JSONResponse:
    first = errors[0] if errors else {"loc": (), "msg": "invalid input"}
    field = ".".join(str(p) for p in first.get("loc", ()) if p not in ("body", "query", "path", "header")) or "body"
    return letta_error("InvalidInput", f"{field}: {first.get('msg', 'invalid input')}", 422, field)


def failure_response(exc: Exception) -> JSONResponse:
    """The answer to a failure of a Letta route."""
    if isinstance(exc, NotSupportedError):
        return letta_error("NotSupported", str(exc), 501)
    if isinstance(exc, AgentOSError):
        extra = {"Retry-After": "1"} if isinstance(exc, QueueFullError) else None
        return letta_error(type(exc).__name__, str(exc), status_of(type(exc)), getattr(exc, "field", None),
                           retry=isinstance(exc, RETRYABLE), extra=extra)
    if isinstance(exc, (RequestValidationError, ValidationError)):
        return _validation(list(exc.errors()))
    raise exc


class LettaRoute(APIRoute):
    """A route whose failures are answered in Letta's shape (the app's handlers answer the native routes)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def answer(request: Request) -> Response:
            try:
                return await handler(request)
            except (AgentOSError, RequestValidationError, ValidationError) as exc:
                return failure_response(exc)

        return answer


def agent_row(s: Scope, agent_id: str) -> AgentRow:
    """The agent Letta's `agent_id` addresses: an agentos agent id (`agent-…`) or, as a convenience, a name. Routes
    then reach it through the scope, by its name, as the native routes do (blocks the calling thread)."""
    row = s.store.agents.by_id(agent_id) if agent_id.startswith("agent-") else None
    if row is None:
        row = s.store.agent_row(agent_id)
    if row is None:
        raise AgentNotFoundError(f'no agent with id "{agent_id}".')
    return row


def agent_name(s: Scope, agent_id: str) -> str:
    """The name of the agent `agent_id` addresses (see `agent_row`)."""
    return agent_row(s, agent_id).name
