"""Letta's `GET /v1/agents/{agent_id}/messages`: the history as Letta messages, a page at a time, by message-id
cursors (`after`, `before`) in either order, as the client's auto-pagination walks it.

A stored message may be several Letta messages (an assistant's text and its tool calls share its id); a page never
splits one, so a cursor always falls between stored messages. Finding a cursor reads the history from the end the
order starts at, a window at a time: the cost grows with how deep the page is.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

from fastapi import APIRouter, Query

from agentos.agent.agent import Agent
from agentos.messages import Message
from agentos.server.errors import NotFoundError
from agentos.server.letta_common import LettaRoute, NotSupportedError, agent_name
from agentos.server.letta_shapes import agentos_ids, letta_messages
from agentos.server.scope import Scope, ScopeDep

router = APIRouter(prefix="/v1/agents", tags=["letta"], route_class=LettaRoute)

WINDOW = 500  # stored messages read at a time
LIMIT = Query(100, ge=1, le=1000)
TYPES = Query(None, description="only these message types (assistant_message, tool_call_message, ...)")


def _walk(s: Scope, agent: Agent, lo: int, hi: int, upward: bool, size: int) -> Iterator[tuple[int, Message]]:
    """The agent's messages with lo <= seq < hi, from the low end up or from the high end down."""
    if upward:
        for start in range(lo, hi, size):
            yield from s.messages(agent, start, min(hi, start + size))
    else:
        for end in range(hi, lo, -size):
            yield from reversed(s.messages(agent, max(lo, end - size), end))


def _seq(s: Scope, agent: Agent, cursor: str, upward: bool) -> int:
    """The seq of the message a Letta id names."""
    wanted = set(agentos_ids(cursor))
    for seq, message in _walk(s, agent, 0, agent.state.message_count, upward, WINDOW):
        if message.id in wanted:
            return seq
    raise NotFoundError(f'agent "{agent.name}" has no message "{cursor}".')


def history_page(s: Scope, agent: Agent, after: str | None, before: str | None, limit: int, ascending: bool,
                 types: set[str]) -> list[dict[str, Any]]:
    """One page of Letta messages in the order asked for: the `limit` next after `after` (or from the start of the
    order), or, given only `before`, the `limit` just before it."""
    lo, hi = 0, agent.state.message_count
    if after is not None:
        seq = _seq(s, agent, after, upward=ascending)
        lo, hi = (seq + 1, hi) if ascending else (lo, seq)
    if before is not None:
        seq = _seq(s, agent, before, upward=ascending)
        lo, hi = (max(lo, seq + 1), hi) if not ascending else (lo, min(hi, seq))
    from_start = after is not None or before is None  # walk away from `after` (or the order's start), else to `before`
    upward = ascending if from_start else not ascending
    page: list[dict[str, Any]] = []
    for _, message in _walk(s, agent, lo, hi, upward, max(limit, 16)):
        if len(page) >= limit:
            break
        pieces = [m for m in letta_messages(message) if not types or m["message_type"] in types]
        page.extend(pieces if upward else pieces[::-1])  # newest first is the oldest-first list reversed, piece by piece
    return page if from_start else page[::-1]


@router.get("/{agent_id}/messages", summary="The message history as Letta messages, a page at a time "
            "(Letta: client.agents.messages.list)")
def list_messages(agent_id: str, s: ScopeDep, after: str | None = None, before: str | None = None,
                  limit: int = LIMIT, order: Literal["asc", "desc"] = "desc",
                  include_return_message_types: list[str] | None = TYPES,
                  conversation_id: str | None = None, group_id: str | None = None) -> list[dict[str, Any]]:
    if conversation_id or group_id:
        raise NotSupportedError("messages.list by conversation or group", "an agentos agent has one conversation")
    with s.reading(agent_name(s, agent_id)) as agent:
        page = history_page(s, agent, after, before, limit, order == "asc", set(include_return_message_types or []))
        agent.note_read("recall", len(page))
        return page
