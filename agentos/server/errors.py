"""Errors as JSON: `{"error": {"type", "message"[, "field"]}}`, with the status each kind of failure has, from one
table keyed by the class in `agentos.errors` (the most specific class a failure is an instance of wins)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.exceptions import HTTPException

from agentos.errors import (
    AgentBusyError,
    AgentExistsError,
    AgentNotFoundError,
    AgentOSError,
    ConfigError,
    ContextOverflowError,
    EmbedderError,
    ForgetError,
    InvalidNameError,
    LeaseLostError,
    ProviderError,
    ProviderTimeoutError,
    RateLimitError,
    ReadOnlyAgentError,
    StorageError,
    ToolError,
)
from agentos.portable.archive_checks import ExportFileError


class NotFoundError(AgentOSError):
    """Something of an agent that does not exist: a block, a passage, a turn."""


class InputError(AgentOSError):
    """A request whose input is wrong; `field` names the part of the request."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class BodyTooLargeError(AgentOSError, HTTPException):
    """A request body over the server's limit. Also an HTTPException, so that FastAPI, reading the body, lets it
    through as it is (it turns other failures there into a 400)."""

    def __init__(self, message: str) -> None:
        HTTPException.__init__(self, 413, message)

    def __str__(self) -> str:
        return str(self.detail)


class UnauthorizedError(AgentOSError):
    """A request without a valid API key to a server that has users."""


class QueueFullError(AgentOSError):
    """An agent's queue of waiting turns and changes is full."""


class ShuttingDownError(AgentOSError):
    """The server is shutting down and takes no new work."""


# The one table: a failure's class -> its HTTP status. Looked up along the class's MRO, so a subclass not named here
# takes its nearest named base's status.
STATUS: dict[type[BaseException], int] = {
    UnauthorizedError: 401,
    AgentNotFoundError: 404,
    NotFoundError: 404,
    AgentBusyError: 409,
    AgentExistsError: 409,
    LeaseLostError: 409,
    ReadOnlyAgentError: 409,
    BodyTooLargeError: 413,
    InvalidNameError: 422,
    ConfigError: 422,
    ToolError: 422,
    ExportFileError: 422,
    InputError: 422,
    ForgetError: 422,
    ContextOverflowError: 422,
    QueueFullError: 429,
    ProviderError: 502,
    EmbedderError: 502,
    RateLimitError: 503,
    ShuttingDownError: 503,
    ProviderTimeoutError: 504,
    StorageError: 500,
    AgentOSError: 400,
}
UNEXPECTED = 500


def status_of(kind: type[BaseException]) -> int:
    """The status of a failure of class `kind`: its own in the table, else its nearest base's."""
    for cls in kind.__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return UNEXPECTED


def _classes(root: type[BaseException]) -> dict[str, type[BaseException]]:
    found = {root.__name__: root}
    for sub in root.__subclasses__():
        found.update(_classes(sub))
    return found


def kind_status(kind: str) -> int | None:
    """The status of a failure named by its class name (a TurnFailed's `kind`); None when no error class has it."""
    cls = _classes(AgentOSError).get(kind)
    return None if cls is None else status_of(cls)


def body(kind: str, message: str, field: str | None = None) -> dict[str, Any]:
    """The JSON of an error."""
    error: dict[str, Any] = {"type": kind, "message": message}
    if field is not None:
        error["field"] = field
    return {"error": error}


def error_response(kind: str, message: str, status: int, field: str | None = None,
                   headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(body(kind, message, field), status_code=status, headers=headers)


def _field(loc: Any) -> str:
    """A validation error's location as a field name: `body.blocks.0.label` -> `blocks.0.label`."""
    parts = [str(p) for p in loc if p not in ("body", "query", "path", "header")]
    return ".".join(parts) or "body"


def _validation(errors: list[Any], prefix: str = "") -> JSONResponse:
    first = errors[0] if errors else {"loc": (), "msg": "invalid input"}
    field = prefix + _field(first.get("loc", ()))
    message = f"{field}: {first.get('msg', 'invalid input')}"
    return error_response("InvalidInput", message, 422, field)


def install(app: FastAPI) -> None:
    """Answer every failure as JSON with its status."""

    @app.exception_handler(AgentOSError)
    async def agentos_error(request: Request, exc: AgentOSError) -> JSONResponse:
        headers = {"Retry-After": "1"} if isinstance(exc, QueueFullError) else None
        if isinstance(exc, UnauthorizedError):
            headers = {"WWW-Authenticate": "Bearer"}
        return error_response(type(exc).__name__, str(exc), status_of(type(exc)), getattr(exc, "field", None), headers)

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _validation(list(exc.errors()))

    @app.exception_handler(ValidationError)
    async def bad_value(request: Request, exc: ValidationError) -> JSONResponse:
        return _validation(list(exc.errors()))

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        kind = "NotFound" if exc.status_code == 404 else "MethodNotAllowed" if exc.status_code == 405 else "HTTPError"
        return error_response(kind, str(exc.detail), exc.status_code)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        return error_response("InternalError", f"unexpected {type(exc).__name__}: {exc}", UNEXPECTED)
