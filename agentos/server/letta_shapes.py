"""agentos objects as the JSON of Letta's API (the pydantic models of `letta_client.types` validate it): agents,
blocks, messages, passages, usage and stop reasons, and the ids that name them.

Ids: an agent keeps its agentos id (`agent-…`); a message `msg-X` is Letta's `message-X`, a passage `arch-X` is
`passage-X`, a turn `turn-X` is the run `run-X`; a block, which agentos names by label, gets the stable id
`block-<uuid5(agent id, label)>`, and a tool `tool-<uuid5(name)>`.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

from agentos.agent.prompts import PromptRenderer
from agentos.agent.roles import context_window
from agentos.agent.state import AgentState
from agentos.blocks import Block
from agentos.events import TurnFailed, TurnFinished
from agentos.messages import Message, Usage
from agentos.portable.letta_export import AfExportReport, _llm_config
from agentos.portable.letta_tools import BUILTINS, LETTA_TOOL_TYPES
from agentos.retrieval.page import Hit
from agentos.version import __version__

NAMESPACE = uuid.UUID("5f0c3a57-1d2b-4a8e-9c61-7b2f44e0a9d3")  # for block and tool ids
PREFIXES = {"msg-": "message-", "arch-": "passage-", "turn-": "run-"}
TOOL_NAMES = {agentos: letta for letta, agentos in BUILTINS.items()}  # agentos built-in -> its Letta name
# How a turn ended -> Letta's stop reason (a TurnFinished's stop_reason, or a TurnFailed's kind).
STOP_REASONS = {"end_turn": "end_turn", "max_tokens": "max_tokens_exceeded", "TurnCancelled": "cancelled",
                "MaxStepsExceeded": "max_steps", "ContextOverflowError": "context_window_overflow_in_system_prompt"}
PROVIDER_FAILURES = {"ProviderError", "ServerError", "AuthenticationError", "RateLimitError", "ProviderTimeoutError"}


# -- ids -----------------------------------------------------------------------------------------


def letta_id(agentos_id: str) -> str:
    """Letta's id for an agentos message, passage or turn id (others are kept)."""
    for ours, theirs in PREFIXES.items():
        if agentos_id.startswith(ours):
            return theirs + agentos_id[len(ours):]
    return agentos_id


def agentos_ids(letta: str) -> list[str]:
    """The agentos ids a Letta id may stand for (an imported message can keep an id of Letta's form)."""
    for ours, theirs in PREFIXES.items():
        if letta.startswith(theirs):
            return [ours + letta[len(theirs):], letta]
    return [letta]


def block_id(agent_id: str, label: str) -> str:
    return f"block-{uuid.uuid5(NAMESPACE, f'{agent_id}/{label}')}"


def tool_id(name: str) -> str:
    return f"tool-{uuid.uuid5(NAMESPACE, name)}"


def when(moment: datetime) -> str:
    return moment.isoformat()


# -- agents and blocks ---------------------------------------------------------------------------


def letta_block(agent_id: str, block: Block) -> dict[str, Any]:
    """A core memory block as Letta's Block / BlockResponse."""
    return {"id": block_id(agent_id, block.label), "label": block.label, "value": block.value, "limit": block.limit,
            "description": block.description, "read_only": block.read_only, "metadata": {}, "tags": [],
            "is_template": False, "hidden": None, "preserve_on_migration": False}


def letta_tool(name: str) -> dict[str, Any]:
    letta = TOOL_NAMES.get(name, name)
    kind = LETTA_TOOL_TYPES.get(letta, "letta_core") if name in TOOL_NAMES else "custom"
    return {"id": tool_id(letta), "name": letta, "tool_type": kind, "tags": [], "source_type": "python",
            "metadata_": {"agentos_tool": name}}


def llm_config(state: AgentState) -> dict[str, Any]:
    """Letta's llm_config for the agent's model: the one an agentos `.af` export writes."""
    window = context_window(state.settings, state.model, None)
    config = _llm_config(state.model, window, state.settings.max_output_tokens, AfExportReport(state.name, Path()))
    return {**config, "handle": state.model}


def letta_agent(state: AgentState) -> dict[str, Any]:
    """An agent as Letta's AgentState: blocks (also as `memory`), tools, model and system prompt, from its saved state.
    Tags, sources, identities and tool rules are always empty: agentos has none of them."""
    blocks = [letta_block(state.id, b) for b in state.blocks]
    system = PromptRenderer(state.settings.prompt_dir, system_prompt=state.settings.system_prompt,
                            prompt_set=state.settings.prompts).static()
    return {
        "id": state.id, "name": state.name, "agent_type": "letta_v1_agent", "blocks": blocks,
        "memory": {"blocks": blocks, "agent_type": "letta_v1_agent", "file_blocks": []},
        "llm_config": llm_config(state), "model": state.model, "system": system, "sources": [], "tags": [],
        "tools": [letta_tool(name) for name in state.tool_names], "tool_rules": [], "identities": [],
        "created_at": when(state.created_at), "updated_at": when(state.last_active_at),
        "last_run_completion": when(state.last_active_at), "message_ids": [letta_id(i) for i in state.in_context_ids],
        "metadata": {"agentos_version": __version__}, "description": None, "timezone": "UTC",
        "message_buffer_autoclear": False, "enable_sleeptime": False, "hidden": None,
    }


# -- messages ------------------------------------------------------------------------------------


def letta_messages(message: Message, run_id: str | None = None) -> list[dict[str, Any]]:
    """One stored message as Letta messages: a user's as user_message, an assistant's text as assistant_message and
    each of its tool calls as tool_call_message (all with the message's id), a tool result as tool_return_message."""
    base: dict[str, Any] = {"id": letta_id(message.id), "date": when(message.created_at), "run_id": run_id, "name": message.name,
            "otid": None, "sender_id": None, "step_id": None, "is_err": None}
    if message.role == "user":
        return [{**base, "message_type": "user_message", "content": message.content}]
    if message.role == "system":
        return [{**base, "message_type": "system_message", "content": message.content}]
    if message.role == "tool":
        status = "error" if message.is_error else "success"
        return [{**base, "message_type": "tool_return_message", "tool_return": message.content, "status": status,
                 "tool_call_id": message.tool_call_id or "", "stdout": None, "stderr": None,
                 "tool_returns": [{"tool_call_id": message.tool_call_id or "", "status": status,
                                   "tool_return": message.content, "type": "tool"}]}]
    out: list[dict[str, Any]] = []
    if message.content:
        out.append({**base, "message_type": "assistant_message", "content": message.content})
    for call in message.tool_calls:
        letta_call = {"name": call.name, "arguments": call.arguments, "tool_call_id": call.id}
        out.append({**base, "message_type": "tool_call_message", "tool_call": letta_call, "tool_calls": [letta_call]})
    return out


def text_chunk(message_id: str, text: str, run_id: str, at: datetime) -> dict[str, Any]:
    """A piece of the reply's text as it streams (stream_tokens): an assistant_message chunk."""
    return {"id": message_id, "date": when(at), "run_id": run_id, "message_type": "assistant_message", "content": text}


def call_chunk(message_id: str, call_id: str, name: str, arguments: str, run_id: str, at: datetime) -> dict[str, Any]:
    letta_call = {"name": name, "arguments": arguments, "tool_call_id": call_id}
    return {"id": message_id, "date": when(at), "run_id": run_id, "message_type": "tool_call_message",
            "tool_call": letta_call, "tool_calls": [letta_call]}


def return_chunk(message_id: str, call_id: str, name: str, result: str, is_error: bool, run_id: str,
                 at: datetime) -> dict[str, Any]:
    return {"id": message_id, "date": when(at), "run_id": run_id, "message_type": "tool_return_message", "name": name,
            "tool_return": result, "status": "error" if is_error else "success", "tool_call_id": call_id}


# -- how a turn ended ----------------------------------------------------------------------------


def stop_reason(end: TurnFinished | TurnFailed | None, max_steps_hit: bool = False) -> str:
    """Letta's stop reason for how a turn ended."""
    if max_steps_hit:
        return "max_steps"
    if isinstance(end, TurnFinished):
        return STOP_REASONS.get(end.stop_reason, "end_turn")
    if isinstance(end, TurnFailed):
        return STOP_REASONS.get(end.kind, "llm_api_error" if end.kind in PROVIDER_FAILURES else "error")
    return "error"


def usage_statistics(usage: Usage, steps: int, run_id: str) -> dict[str, Any]:
    return {"message_type": "usage_statistics", "prompt_tokens": usage.input_tokens,
            "completion_tokens": usage.output_tokens, "total_tokens": usage.input_tokens + usage.output_tokens,
            "cached_input_tokens": usage.cache_read_tokens, "cache_write_tokens": usage.cache_write_tokens,
            "step_count": steps, "run_ids": [run_id]}


def error_message(kind: str, text: str, run_id: str) -> dict[str, Any]:
    return {"message_type": "error_message", "error_type": kind, "message": text, "run_id": run_id, "detail": None}


# -- archival ------------------------------------------------------------------------------------


def letta_passage(hit: Hit, agent_id: str) -> dict[str, Any]:
    """An archival passage as Letta's Passage."""
    return {"id": letta_id(hit.id), "text": hit.text, "tags": list(hit.tags), "created_at": when(hit.created_at),
            "archive_id": f"archive-{agent_id.removeprefix('agent-')}", "metadata": {}, "is_deleted": False,
            "embedding": None, "embedding_config": None}


def search_result(hit: Hit) -> dict[str, Any]:
    """A passage as one result of Letta's archival search."""
    return {"id": letta_id(hit.id), "content": hit.text, "timestamp": when(hit.created_at), "tags": list(hit.tags)}
