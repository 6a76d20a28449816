"""Conversions between agentos models and table rows."""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any

from agentos.blocks import MemoryEdit
from agentos.messages import Message, ToolCall


def message_row(agent_id: str, seq: int, message: Message) -> dict[str, Any]:
    return {
        "id": message.id,
        "agent_id": agent_id,
        "seq": seq,
        "role": message.role,
        "content": message.content,
        "tool_calls": json.dumps([c.model_dump() for c in message.tool_calls]) if message.tool_calls else None,
        "tool_call_id": message.tool_call_id,
        "name": message.name,
        "is_error": message.is_error,
        "created_at": message.created_at,
        "search_text": search_text(message),
    }


SEARCH_TEXTS_KEPT = 4096  # messages whose search text is kept: a save's rows and its tiers' rows share it

_search_texts: OrderedDict[tuple[str, str], str | None] = OrderedDict()  # by (message id, content)


def search_text(message: Message) -> str | None:
    """What recall's BM25 indexes: the date, speaker and text of user and assistant speech; never tool traffic.

    The date words let "what did we say in May 2024" match (and lift LoCoMo hit@10 by ~0.02). Worked out once
    per message (kept by id and content), however many tiers ask."""
    key = (message.id, message.content)
    if key in _search_texts:
        return _search_texts[key]
    text = search_text_of({"role": message.role, "created_at": message.created_at, "name": message.name,
                           "content": message.content})
    _search_texts[key] = text
    if len(_search_texts) > SEARCH_TEXTS_KEPT:
        _search_texts.popitem(last=False)
    return text


def is_speech(message: Message) -> bool:
    """Whether a message is what people said (user and assistant text), the part of a conversation recall keeps."""
    return message.role in ("user", "assistant") and bool(message.content.strip())


def search_text_of(row: dict[str, Any]) -> str | None:
    """The search text of a stored message, from its role, created_at, name and content (None for tool traffic)."""
    if row["role"] not in ("user", "assistant") or not (row["content"] or "").strip():
        return None
    speaker = f"{row['name']}: " if row.get("name") else ""
    return f"{row['created_at']:%d %B %Y}: {speaker}{row['content'] or ''}"


def row_message(row: dict[str, Any]) -> Message:
    calls = [ToolCall(**c) for c in json.loads(row["tool_calls"])] if row.get("tool_calls") else []
    return Message(
        id=row["id"],
        role=row["role"],
        content=row.get("content") or "",
        tool_calls=calls,
        tool_call_id=row.get("tool_call_id"),
        name=row.get("name"),
        is_error=bool(row.get("is_error")),
        created_at=row["created_at"],
    )


def edit_row(agent_id: str, edit: MemoryEdit) -> dict[str, Any]:
    """A memory edit as logged, with the state revision it landed with."""
    return {"agent_id": agent_id, **edit.model_dump()}


def row_edit(row: dict[str, Any]) -> MemoryEdit:
    return MemoryEdit(**{k: v for k, v in row.items() if k in MemoryEdit.model_fields and v is not None})


def embed_text(message: Message) -> str | None:
    """What recall embeds: speaker and text (no date words, which blur short turns together)."""
    if not is_speech(message):
        return None
    return f"{message.name}: {message.content}" if message.name else message.content
