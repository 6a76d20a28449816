"""Letta's `/v1/agents/{agent_id}/messages`: send a message and get the finished turn (LettaResponse) or its Server-
Sent Events, and cancel runs. A Letta run is an agentos turn (`run-X` is `turn-X`).

A stream is `data: {json}` frames without an `event:` line, as Letta's client reads them: the turn's messages
(assistant_message, tool_call_message, tool_return_message; the user's own message is not echoed), then
`stop_reason`, then `usage_statistics`, then `data: [DONE]`. By default each step's messages come when the step is
saved, with the ids `messages.list` shows (Letta's step streaming); with `stream_tokens` the reply's text comes as
it is written, in assistant_message chunks that share an id of their own. A turn that fails (its provider, say)
sends an error_message, its stop reason and usage, then an `event: error` frame, which the client raises.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Body
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from agentos.events import (
    Event,
    StepSaved,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFailed,
    TurnFinished,
    UsageReported,
)
from agentos.messages import Message, Usage, new_id, utc_now
from agentos.server.errors import InputError, kind_status
from agentos.server.letta_common import LettaRoute, NotSupportedError, agent_row, letta_error
from agentos.server.letta_shapes import (
    agentos_ids,
    call_chunk,
    error_message,
    letta_id,
    letta_messages,
    return_chunk,
    stop_reason,
    text_chunk,
    usage_statistics,
)
from agentos.server.routes_turns import ENDED_WITHOUT_ERROR
from agentos.server.schemas import MessageIn
from agentos.server.scope import Scope, ScopeDep
from agentos.server.turns import CANCELLED, TurnRun

router = APIRouter(prefix="/v1/agents", tags=["letta"], route_class=LettaRoute)

REFUSED = ("override_model", "override_system", "client_tools", "client_skills", "return_logprobs", "return_token_ids",
           "top_logprobs")  # request options agentos cannot honour: refused (501) when set
DONE = "data: [DONE]\n\n"
NO_BODY = Body(None)


class LettaRequest(BaseModel):
    """Letta's LettaRequest / LettaStreamingRequest: the fields agentos uses (others, like use_assistant_message,
    include_pings or background, are accepted and make no difference)."""

    model_config = ConfigDict(extra="allow")
    messages: list[dict[str, Any]] | None = None
    input: str | list[dict[str, Any]] | None = None
    streaming: bool = False
    stream_tokens: bool = False
    max_steps: int | None = Field(None, gt=0)
    include_return_message_types: list[str] | None = None


class CancelRequest(BaseModel):
    run_ids: list[str] | None = None


def _content(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise InputError(f"{where}: content is text or a list of text parts.", where)
    parts = []
    for part in content:
        kind = part.get("type", "text") if isinstance(part, dict) else None
        if kind != "text":
            raise NotSupportedError(f"messages.create with {kind} content", "agentos agents take text")
        parts.append(str(part.get("text", "")))
    return "".join(parts)


def user_text(body: LettaRequest) -> str:
    """The text of the turn: the user's messages (and `input`), one after the other."""
    items: list[Any] = [{"role": "user", "content": body.input}] if body.input is not None else []
    items += body.messages or []
    parts = []
    for number, item in enumerate(items):
        if not isinstance(item, dict):
            raise InputError(f"messages.{number}: a message is an object with role and content.", f"messages.{number}")
        if "tool_returns" in item or item.get("type") in ("approval", "tool_return"):
            raise NotSupportedError("messages.create with tool returns or approvals",
                                    "agentos runs its tools itself and asks for no approvals")
        if item.get("role", "user") != "user":
            raise NotSupportedError(f"messages.create with a {item.get('role')} message",
                                    "an agentos turn takes the user's message")
        parts.append(_content(item.get("content"), f"messages.{number}.content"))
    text = "\n\n".join(p for p in parts if p)
    return MessageIn(text=text).text  # empty or too long: 422


def _check(body: LettaRequest) -> None:
    extra = body.model_extra or {}
    for option in REFUSED:
        if extra.get(option):
            raise NotSupportedError(f"messages.create with {option}")


def _stored(s: Scope, agent_id: str, ids: list[str]) -> list[Message]:
    """The messages a step saved (a Scope has no such read; the agent was reached through it already)."""
    return s.store.get_messages(agent_id, ids)


class StepLimitedRun(TurnRun):
    """A turn stopped after `max_steps` steps (Letta's per-request max_steps): once that many steps are saved and the
    last one called tools (so another step would follow), it is cancelled on its own thread, before that step."""

    def __init__(self, text: str, loop: asyncio.AbstractEventLoop, max_steps: int | None) -> None:
        super().__init__(text, loop)
        self.max_steps = max_steps
        self.saved, self.calling, self.limited = 0, False, False

    def _emit(self, item: Event | None) -> None:
        super()._emit(item)
        self.calling = self.calling or isinstance(item, ToolCallStarted)
        if isinstance(item, StepSaved):
            self.saved += 1
            if self.max_steps is not None and self.saved >= self.max_steps and self.calling:
                self.limited = True
                self.cancel(f"the request's max_steps ({self.max_steps}) was reached")
            self.calling = False


class LettaTurn:
    """One turn, told in Letta's messages as it runs."""

    def __init__(self, s: Scope, agent_id: str, run: StepLimitedRun, body: LettaRequest) -> None:
        self.s, self.agent_id, self.run = s, agent_id, run
        self.run_id = letta_id(run.id)
        self.tokens = body.stream_tokens
        self.types = set(body.include_return_message_types or [])
        self.usage, self.steps = Usage(), 0
        self.end: TurnFinished | TurnFailed | None = None

    def _wanted(self, message: dict[str, Any]) -> bool:
        return not self.types or message.get("message_type") in self.types

    async def messages(self) -> AsyncIterator[dict[str, Any]]:
        """The turn's Letta messages as they come, to its end."""
        pending = letta_id(new_id("msg"))  # the id of the text chunks of the step under way (stream_tokens)
        async for event in self.run.stream():
            out: list[dict[str, Any]] = []
            if isinstance(event, UsageReported):
                self.usage += event.usage
            elif isinstance(event, (TurnFinished, TurnFailed)):
                self.end = event
            elif isinstance(event, StepSaved):
                self.steps += 1
                if not self.tokens:
                    saved = await self.s.thread(_stored, self.s, self.agent_id, event.message_ids)
                    out = [m for message in saved if message.role != "user" for m in letta_messages(message, self.run_id)]
                pending = letta_id(new_id("msg"))
            elif self.tokens and isinstance(event, TextDelta):
                out = [text_chunk(pending, event.text, self.run_id, utc_now())]
            elif self.tokens and isinstance(event, ToolCallStarted):
                out = [call_chunk(pending, event.call_id, event.name, event.arguments, self.run_id, utc_now())]
            elif self.tokens and isinstance(event, ToolCallFinished):
                out = [return_chunk(letta_id(new_id("msg")), event.call_id, event.name, event.result, event.is_error,
                                    self.run_id, utc_now())]
            for message in out:
                if self._wanted(message):
                    yield message

    def failure(self) -> tuple[str, str] | None:
        """How the turn failed, (kind, message); None when it did not (a cancel or the step limit is no failure)."""
        if self.end is None:
            return "InternalError", "the turn ended without saying how"
        if isinstance(self.end, TurnFailed) and self.end.kind not in ENDED_WITHOUT_ERROR:
            return self.end.kind, self.end.error
        return None

    def stop(self) -> dict[str, Any]:
        hit = self.run.limited and isinstance(self.end, TurnFailed) and self.end.kind == CANCELLED
        return {"message_type": "stop_reason", "stop_reason": stop_reason(self.end, hit)}

    def usage_json(self) -> dict[str, Any]:
        return usage_statistics(self.usage, self.steps, self.run_id)


async def _begin(agent_id: str, body: LettaRequest, s: Scope) -> LettaTurn:
    _check(body)
    text = user_text(body)
    row = await s.thread(agent_row, s, agent_id)
    host = await s.host(row.name)  # as the native routes start a turn (routes_turns), with the step limit
    if host.model_error is not None:
        raise host.model_error
    run = StepLimitedRun(text, asyncio.get_running_loop(), body.max_steps)
    host.start_turn(run)
    return LettaTurn(s, row.agent_id, run, body)


def _frame(data: dict[str, Any]) -> str:
    return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"


def _stream(turn: LettaTurn) -> StreamingResponse:
    async def frames() -> AsyncIterator[str]:
        async for message in turn.messages():  # a client that goes away stops reading; the turn itself finishes
            yield _frame(message)
        failure = turn.failure()
        if failure is not None:
            yield _frame(error_message(failure[0], failure[1], turn.run_id))
        yield _frame(turn.stop())
        yield _frame(turn.usage_json())
        if failure is not None:
            error = {"error": failure[1], "code": failure[0], "run_id": turn.run_id}
            yield f"event: error\ndata: {json.dumps(error, ensure_ascii=False)}\n\n"
        else:
            yield DONE

    return StreamingResponse(frames(), media_type="text/event-stream",
                             headers={"X-Turn-Id": turn.run.id, "Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


@router.post("/{agent_id}/messages", summary="Send a message: the finished turn, or its events with streaming=true "
             "(Letta: client.agents.messages.create)")
async def create_message(agent_id: str, body: LettaRequest, s: ScopeDep) -> Any:
    turn = await _begin(agent_id, body, s)
    if body.streaming:
        return _stream(turn)
    messages = [message async for message in turn.messages()]
    failure = turn.failure()
    if failure is not None:
        return letta_error(*failure, kind_status(failure[0]) or 500, extra={"X-Turn-Id": turn.run.id})
    return JSONResponse({"messages": messages, "stop_reason": turn.stop(), "usage": turn.usage_json()},
                        headers={"X-Turn-Id": turn.run.id})


@router.post("/{agent_id}/messages/stream", summary="Send a message; the turn as Server-Sent Events "
             "(Letta: client.agents.messages.stream)")
async def stream_message(agent_id: str, body: LettaRequest, s: ScopeDep) -> StreamingResponse:
    return _stream(await _begin(agent_id, body, s))


@router.post("/{agent_id}/messages/cancel", summary="Cancel runs: those named, else the running one and every waiting "
             "one (Letta: client.agents.messages.cancel)")
async def cancel_messages(agent_id: str, s: ScopeDep, body: CancelRequest | None = NO_BODY) -> dict[str, Any]:
    name = await s.thread(lambda: agent_row(s, agent_id).name)
    host = s.held(name)
    reason = "cancelled by a client"
    if body is None or not body.run_ids:
        cancelled = host.cancel(None, reason) if host is not None else []
        return {letta_id(turn_id): "cancelled" for turn_id in cancelled}
    results = {}
    for run_id in body.run_ids:
        turn_id = agentos_ids(run_id)[0]
        done = host.cancel(turn_id, reason) if host is not None else []
        results[run_id] = "cancelled" if done else "failed"
    return results
