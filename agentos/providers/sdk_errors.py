"""Maps the exceptions of the OpenAI and Anthropic SDKs (and raw httpx2 ones) onto agentos's error tree."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from agentos.errors import (
    AuthenticationError,
    ContextOverflowError,
    IncompleteStreamError,
    ProviderError,
    ProviderTimeoutError,
    RateLimitError,
    ServerError,
)
from agentos.providers.retry import retry_after_seconds

# How servers say "the prompt is longer than the context": OpenAI (code context_length_exceeded),
# Anthropic ("prompt is too long"), vLLM ("maximum context length"), llama.cpp (exceed_context_size_error),
# LM Studio / OpenRouter ("context length", "context window").
_OVERFLOW = re.compile(
    r"context[_ ]length|context[_ ]window|maximum context|prompt is too long|exceed_context_size|"
    r"context size|too many tokens|request_too_large|reduce the length",
    re.IGNORECASE,
)
# 429s that waiting will not fix (OpenAI quota/credit codes; Anthropic's *_spend_limit_reached): not retried.
_BILLING = {"insufficient_quota", "credit_balance_exhausted", "billing_hard_limit_reached"}
_TYPE_TO_STATUS = {
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "rate_limit_exceeded": 429,
    "api_error": 500,
    "server_error": 500,
    "overloaded_error": 529,
    "timeout_error": 504,
}


@dataclass
class ErrorContext:
    """Who we were talking to, so messages can say what to fix."""

    label: str  # "OpenAI", "Ollama", ...
    model: str
    key_variable: str | None
    base_url: str | None
    family: str
    read_timeout: float | None = None  # seconds, to say in a timeout error


def client_context(label: str, model: str, key_variable: str | None, family: str, base_url: str | None,
                   client: Any) -> ErrorContext:
    """The context of an SDK client: the base URL given, else the one the SDK took (from its own environment
    variable, such as OPENAI_BASE_URL), and the client's read timeout."""
    used = base_url or str(getattr(client, "base_url", "") or "").rstrip("/") or None
    read = getattr(getattr(client, "timeout", None), "read", None)
    return ErrorContext(label, model, key_variable, used, family, read if isinstance(read, (int, float)) else None)


def _details(exc: Any) -> tuple[int | None, str, str, str]:
    status = getattr(exc, "status_code", None)
    if status == 200:  # Anthropic: an error event inside a 200 stream
        status = None
    kind = str(getattr(exc, "type", None) or "")
    code = str(getattr(exc, "code", None) or getattr(exc, "error_code", None) or "")
    message = getattr(exc, "api_message", None) or getattr(exc, "message", None) or str(exc)
    return status, kind, code, str(message)


def _retry_after(exc: Any) -> float | None:
    return retry_after_seconds(getattr(getattr(exc, "response", None), "headers", None))


def map_status_error(exc: Any, ctx: ErrorContext) -> ProviderError:
    """Map an API error (an HTTP status or an error event inside a stream)."""
    status, kind, code, message = _details(exc)
    if status is None:
        status = _TYPE_TO_STATUS.get(kind) or _TYPE_TO_STATUS.get(code)
    where = f" at {ctx.base_url}" if ctx.base_url else ""
    said = f"{ctx.label}{where} said: {message}"
    if status == 401:
        if ctx.key_variable:
            fix = f"Set {ctx.key_variable} to a valid key (environment, or api_keys in the agentos config file)."
        else:
            fix = "This server needs an API key; put it in the api_keys section of the agentos config file."
        return AuthenticationError(f"{ctx.label} rejected the API key (401). {fix} ({said})")
    if status == 403:
        return AuthenticationError(f"{ctx.label} refused access to {ctx.model} (403); check the key's permissions. ({said})")
    if status == 404:
        hint = f" Download it with: ollama pull {ctx.model}" if ctx.family == "ollama" else ""
        return ProviderError(f'{ctx.label} does not know the model "{ctx.model}" (404); check the model spec.{hint} ({said})')
    if status == 429:
        if code in _BILLING or kind in _BILLING or code.endswith("spend_limit_reached"):
            return ProviderError(f"{ctx.label}: the account is out of quota; check its plan and billing. ({said})")
        wait = _retry_after(exc)
        when = f" Try again in {wait:.0f} s." if wait else ""
        return RateLimitError(f"{ctx.label} rate limit reached.{when} ({said})", wait)
    overflow = code == "context_length_exceeded" or _OVERFLOW.search(message) or _OVERFLOW.search(code)
    if status == 413 or overflow and status in (None, 400, 422):
        return ContextOverflowError(f"the request is longer than {ctx.model}'s context window. ({said})")
    if status == 408 or status == 504 and kind == "timeout_error":
        return ProviderTimeoutError(f"{ctx.label} timed out. ({said})")
    if status is None or status >= 500 or status == 409:
        return ServerError(f"{ctx.label} failed on its side; try again later. ({said})", _retry_after(exc))
    return ProviderError(f"{ctx.label} rejected the request ({status}). ({said})")


def map_transport_error(exc: BaseException, ctx: ErrorContext, *, timeout: bool,
                        partial: bool = False) -> ProviderError:
    """Map a connection failure or a timeout (SDK-wrapped or raw httpx2): a server that could not be reached, one
    that closed the connection before answering, or (`partial`: once its reply had begun) a cut reply."""
    import httpx2

    where = ctx.base_url or "its API"
    cause = exc.__cause__ or exc
    if not timeout and not isinstance(cause, (httpx2.ConnectError, ConnectionRefusedError)):
        if partial:
            return IncompleteStreamError(True, f"{ctx.label} at {where}")
        return ServerError(f"{ctx.label} at {where} closed the connection without finishing its answer ({cause}). "
                           "Try again; if it keeps happening, the server's log says why.")
    if timeout:
        within = f" within {ctx.read_timeout:g} s" if ctx.read_timeout else " in time"
        return ProviderTimeoutError(
            f"{ctx.label} did not answer{within} ({where}). Try again, or raise the timeout: read_timeout_s in "
            f"the agent's settings, $AGENTOS_READ_TIMEOUT, or \"timeouts\": {{\"read\": SECONDS}} in the config file."
        )
    hint = " Is Ollama running? Start it with: ollama serve" if ctx.family == "ollama" else ""
    return ServerError(f"could not reach {ctx.label} at {where}: {cause}.{hint}")


def map_sdk_error(exc: BaseException, sdk: Any, ctx: ErrorContext, *, partial: bool = False) -> ProviderError | None:
    """The agentos error for an exception from `sdk` (the openai or anthropic module) or httpx2; else None.
    `partial`: the reply had begun (a connection lost then cut it)."""
    import httpx2

    if isinstance(exc, IncompleteStreamError) and exc.server == IncompleteStreamError.UNNAMED:
        where = f" at {ctx.base_url}" if ctx.base_url else ""
        return IncompleteStreamError(exc.partial, f"{ctx.label}{where}")
    if isinstance(exc, ProviderError):
        return exc
    if isinstance(exc, sdk.APITimeoutError) or isinstance(exc, httpx2.TimeoutException):
        return map_transport_error(exc, ctx, timeout=True)
    if isinstance(exc, sdk.APIConnectionError) or isinstance(exc, httpx2.TransportError):
        return map_transport_error(exc, ctx, timeout=False, partial=partial)
    if isinstance(exc, sdk.APIError):
        return map_status_error(exc, ctx)
    if isinstance(exc, json.JSONDecodeError):  # a server that streams something other than JSON events
        where = f" at {ctx.base_url}" if ctx.base_url else ""
        return ProviderError(f"{ctx.label}{where} sent a stream agentos cannot read (bad JSON: {exc}).")
    return None
