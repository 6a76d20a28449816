"""A turn over HTTP: send a message and stream the turn's events (SSE) or wait for the finished turn; cancel a
turn; the turns running and waiting; the message history, a page at a time."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Body, Query
from fastapi.responses import JSONResponse, StreamingResponse

from agentos.events import Event, TurnFailed, TurnFinished
from agentos.server.errors import NotFoundError, error_response, kind_status
from agentos.server.schemas import CancelIn, MessageIn
from agentos.server.scope import Scope, ScopeDep
from agentos.server.turns import CANCELLED, TurnRun, event_json, sse_frame

router = APIRouter(prefix="/api/agents", tags=["turns"])

OFFSET = Query(None, ge=0, description="the number of the first message (from 0); default: the last page")
NO_BODY = Body(default_factory=CancelIn)
ENDED_WITHOUT_ERROR = {CANCELLED, "MaxStepsExceeded"}  # a failed turn's kinds that are no failure of the request


async def _start(s: Scope, name: str, text: str) -> TurnRun:
    """Accept a turn for agent `name` (404, 409, 429, ... before any event when it cannot be)."""
    host = await s.host(name)
    if host.model_error is not None:
        raise host.model_error
    run = TurnRun(text, asyncio.get_running_loop())
    host.start_turn(run)
    return run


@router.post("/{name}/messages/stream", summary="Send a message; the turn's events as Server-Sent Events",
             response_class=StreamingResponse,
             responses={200: {"content": {"text/event-stream": {}}, "description": "one event per SSE frame: `event` "
                              "is its type, `data` its JSON (the same events the TUI consumes)"}})
async def stream(name: str, body: MessageIn, s: ScopeDep) -> StreamingResponse:
    run = await _start(s, name, body.text)

    async def frames() -> Any:
        number = 0
        async for event in run.stream():  # a client that goes away stops reading; the turn itself finishes
            number += 1
            yield sse_frame(number, event)

    return StreamingResponse(frames(), media_type="text/event-stream",
                             headers={"X-Turn-Id": run.id, "Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


def _result(run: TurnRun, events: list[Event]) -> dict[str, Any] | JSONResponse:
    """The finished turn: its reply and events; a turn that failed for a reason with a status (a provider that timed
    out: 504, ...) answers with that status and the error."""
    end = next((e for e in reversed(events) if isinstance(e, (TurnFinished, TurnFailed))), None)
    out: dict[str, Any] = {"turn_id": run.id, "events": [event_json(e) for e in events]}
    if isinstance(end, TurnFinished):
        return {**out, "outcome": "finished", "reply": end.reply.content, "stop_reason": end.stop_reason,
                "steps": end.steps, "usage": end.usage.model_dump()}
    if isinstance(end, TurnFailed):
        status = kind_status(end.kind)
        if end.kind not in ENDED_WITHOUT_ERROR:
            return error_response(end.kind, end.error, status or 500, headers={"X-Turn-Id": run.id})
        outcome = "cancelled" if end.kind == CANCELLED else "failed"
        return {**out, "outcome": outcome, "reply": None, "error": end.error, "kind": end.kind, "steps": end.steps}
    return error_response("InternalError", "the turn ended without saying how", 500)


@router.post("/{name}/messages", summary="Send a message and wait for the finished turn (its reply and events)")
async def send(name: str, body: MessageIn, s: ScopeDep) -> Any:
    run = await _start(s, name, body.text)
    return _result(run, [event async for event in run.stream()])


@router.post("/{name}/messages/cancel", summary="Cancel a turn (default: the running one and every waiting one)")
async def cancel(name: str, s: ScopeDep, body: CancelIn = NO_BODY) -> dict[str, Any]:
    host = s.held(name)
    cancelled = host.cancel(body.turn_id, "cancelled by a client") if host is not None else []
    if not cancelled:
        await s.thread(_exists, s, name)
        if body.turn_id is not None:
            raise NotFoundError(f'agent "{name}" has no turn {body.turn_id} running or waiting in this server.')
    return {"cancelled": cancelled}


def _exists(s: Scope, name: str) -> None:
    with s.reading(name):
        pass


@router.get("/{name}/turns", summary="The turn running and the turns waiting, in order")
async def turns(name: str, s: ScopeDep) -> dict[str, Any]:
    host = s.held(name)
    if host is None:
        await s.thread(_exists, s, name)
        return {"running": None, "waiting": []}
    running, waiting = host.turns()
    return {"running": running.id if running is not None else None, "waiting": [t.id for t in waiting]}


@router.get("/{name}/messages", summary="The message history, oldest first, a page at a time")
def history(name: str, s: ScopeDep, offset: int | None = OFFSET, limit: int = Query(50, ge=1, le=500)) -> dict[str, Any]:
    with s.reading(name) as agent:
        total = agent.state.message_count
        start = offset if offset is not None else max(0, total - limit)
        rows = s.messages(agent, start, min(total, start + limit))
        agent.note_read("recall", len(rows), detail=f"messages from {start}")
    return {"total": total, "offset": start, "limit": limit,
            "messages": [{"seq": seq, **message.model_dump(mode="json")} for seq, message in rows],
            "previous_offset": max(0, start - limit) if start > 0 else None,
            "next_offset": start + limit if start + limit < total else None}
