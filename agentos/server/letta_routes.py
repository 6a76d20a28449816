"""Letta's `/v1` API, the subset the official `letta-client` uses for everyday calls (docs/letta-compat.md): agents,
messages, core memory blocks and archival memory, mapped onto the native routes. Any other `/v1` call is answered
501 with a JSON message naming it, so a Letta app learns at once what agentos does not do."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from agentos.server import letta_agents, letta_history, letta_memory, letta_messages
from agentos.server.letta_common import LettaRoute, NotSupportedError, failure_response
from agentos.version import __version__

IMPORT_PATH = "/v1/agents/import"  # takes a whole agent file: the server's import body limit applies to it
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]

router = APIRouter()
for module in (letta_agents, letta_messages, letta_history, letta_memory):
    router.include_router(module.router)

health = APIRouter(prefix="/v1", tags=["letta"], route_class=LettaRoute)


@health.get("/health", summary="Whether the server runs (Letta: GET /v1/health)")
@health.get("/health/", include_in_schema=False)
async def letta_health() -> dict[str, Any]:
    return {"version": __version__, "status": "ok"}


router.include_router(health)


@router.api_route("/v1/{path:path}", methods=METHODS, include_in_schema=False)
async def not_supported(path: str, request: Request) -> JSONResponse:
    """Every other Letta call: 501, naming it (tools, sources and folders, groups, identities, runs, steps, ...)."""
    return failure_response(NotSupportedError(f"{request.method} /v1/{path}"))
