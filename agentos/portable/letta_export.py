"""Agentos agents as Letta v2 agent files (`.af`), so nobody is locked in.

Export writes a v2 file with the same top-level keys: the blocks, the system prompt (the agent's own, or the
rendered instructions), the compiled system prompt as Letta's first in-context message, the summary as Letta's
summary message, every saved message in Letta's shape with `in_context_message_ids` naming the context, an
`llm_config` for the model, and the agentos built-in tools as Letta's own (no source code: Letta binds its
implementations by name); any other tool is a stub that raises. Archival passages and the memory edit log have no
place in the format and are reported. Importing an exported file gives back the same blocks, system prompt and
messages.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from agentos.agent.agent import Agent
from agentos.agent.state import AgentSettings, AgentState
from agentos.blocks import Block
from agentos.errors import AgentOSError
from agentos.memory.archival import ArchivalTier
from agentos.memory.facts.tier import FactTier
from agentos.messages import Message, utc_now
from agentos.portable.letta_file import report_lines
from agentos.portable.letta_tools import BUILTINS, LETTA_TOOL_TYPES
from agentos.providers.models import SERVERS, parse_spec
from agentos.storage.filters import quote
from agentos.storage.records import row_message
from agentos.storage.store import Store
from agentos.text import plural
from agentos.tools.decorator import Tool
from agentos.version import __version__


@dataclass
class AfExportReport:
    """What exporting an agent wrote, and what the format cannot carry."""

    name: str
    path: Path
    blocks: int = 0
    messages: int = 0
    in_context: int = 0
    notes: list[str] = field(default_factory=list)
    not_exported: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        return report_lines(f'Exported agent "{self.name}" to {self.path} (Letta agent file v2)', self.blocks,
                            self.messages, self.in_context, self.notes, self.not_exported, "exported")


# -- exporting -----------------------------------------------------------------------------------


def _all_messages(store: Store, agent_id: str, count: int) -> list[Message]:
    """Every saved message of the agent, in order (read in batches)."""

    handle = store.db.existing("messages")
    if handle is None:
        return []
    handle.checkout_latest()
    rows: list[dict[str, Any]] = []
    for batch in handle.to_lance().to_batches(filter=f"agent_id = {quote(agent_id)} AND seq < {count}", batch_size=4096):
        rows.extend(batch.to_pylist())
    rows.sort(key=lambda r: r["seq"])
    return [row_message(r) for r in rows]


def _llm_config(spec: str, window: int, cap: int | None, report: AfExportReport) -> dict[str, Any]:
    parsed = parse_spec(spec)
    family, model, base = parsed.family, parsed.model, parsed.base_url
    kinds = {"openai": ("openai", base or "https://api.openai.com/v1"),
             "anthropic": ("anthropic", (base or "https://api.anthropic.com") + "/v1"),
             "openrouter": ("openrouter", base or "https://openrouter.ai/api/v1"),
             "openai-compatible": ("openai", base)}
    if family in kinds:
        kind, endpoint = kinds[family]
    elif family in SERVERS:  # a local server; Letta names Ollama's without /v1
        kind, endpoint = family, base or SERVERS[family].base_url
        if family == "ollama" and endpoint:
            endpoint = endpoint.removesuffix("/v1")
    else:
        kind, endpoint = "openai", None
        report.not_exported.append(f"model {spec}: Letta has no such model, so llm_config names it as an OpenAI-API "
                                   f"model; choose a model in Letta after importing")
    return {"model": model, "display_name": None, "model_endpoint_type": kind, "model_endpoint": endpoint,
            "provider_name": kind, "provider_category": "base", "model_wrapper": None, "context_window": window,
            "put_inner_thoughts_in_kwargs": False, "handle": f"{kind}/{model}", "temperature": 1.0, "max_tokens": cap,
            "enable_reasoner": False, "reasoning_effort": None, "max_reasoning_tokens": 0, "frequency_penalty": None,
            "parallel_tool_calls": False}


def _embedding_config(embedder: str, report: AfExportReport) -> dict[str, Any]:
    model = embedder.removeprefix("openai/") if embedder.startswith("openai/") else "text-embedding-3-small"
    if not embedder.startswith("openai/"):
        report.notes.append(f"embedding_config names OpenAI's {model} (Letta requires one; this agent's embedder is "
                            f"{embedder})")
    return {"embedding_endpoint_type": "openai", "embedding_endpoint": "https://api.openai.com/v1",
            "embedding_model": model, "embedding_dim": 3072 if model.endswith("-large") else 1536,
            "embedding_chunk_size": 300, "handle": f"openai/{model}", "batch_size": 32, "azure_endpoint": None,
            "azure_version": None, "azure_deployment": None}


def _letta_tool(index: int, tool: Tool, limit: int, report: AfExportReport) -> dict[str, Any]:
    letta = {v: k for k, v in BUILTINS.items()}
    name = letta.get(tool.name, tool.name)
    kind = LETTA_TOOL_TYPES.get(name, "letta_core") if tool.name in letta else "custom"
    source = None
    if kind == "custom":
        source = (f"def {name}(**kwargs):\n    raise NotImplementedError(\"{name} is an agentos tool; this file carries "
                  f"no implementation of it.\")\n")
        report.not_exported.append(f'tool "{name}": an agentos tool Letta does not have, written as a stub that raises')
    return {"id": f"tool-{index}", "tool_type": kind, "description": tool.description, "source_type": "python",
            "name": name, "tags": [] if kind == "custom" else [kind], "source_code": source,
            "json_schema": {"name": name, "description": tool.description, "parameters": tool.parameters},
            "args_json_schema": None, "return_char_limit": limit, "pip_requirements": None, "npm_requirements": None,
            "default_requires_approval": None, "enable_parallel_execution": False, "metadata_": {}}


def _letta_block(index: int, block: Block) -> dict[str, Any]:
    return {"value": block.value, "limit": block.limit, "project_id": None, "template_name": None, "is_template": False,
            "template_id": None, "base_template_id": None, "deployment_id": None, "entity_id": None,
            "preserve_on_migration": False, "label": block.label, "read_only": block.read_only,
            "description": block.description, "metadata": {}, "hidden": None, "id": f"block-{index}"}


def _letta_message(key: str, role: str, text: str, at: datetime, agent_id: str = "agent-0",
                   **extra: Any) -> dict[str, Any]:
    return {"type": "message", "role": role, "content": [{"type": "text", "text": text}] if text else [],
            "name": None, "otid": None, "sender_id": None, "batch_item_id": None, "group_id": None, "id": key,
            "model": None, "agent_id": agent_id, "tool_calls": None, "tool_call_id": None, "tool_returns": [],
            "created_at": at.isoformat(), "approve": None, "approval_request_id": None, "denial_reason": None,
            "approvals": [], **extra}


def _to_letta(message: Message, key: str, agent_id: str) -> dict[str, Any]:
    at = message.created_at
    if message.role == "tool":
        wrapped = json.dumps({"status": "Failed" if message.is_error else "OK", "message": message.content,
                              "time": at.isoformat()}, ensure_ascii=False)
        returns = [{"tool_call_id": message.tool_call_id, "status": "error" if message.is_error else "success",
                    "stdout": None, "stderr": None, "func_response": wrapped}]
        return _letta_message(key, "tool", wrapped, at, agent_id, name=message.name,
                              tool_call_id=message.tool_call_id, tool_returns=returns)
    calls = [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
             for c in message.tool_calls] or None
    return _letta_message(key, message.role, message.content, at, agent_id, name=message.name, tool_calls=calls)


def _write_atomically(path: Path, text: str) -> None:
    partial = path.with_name(path.name + ".partial")
    try:
        partial.write_text(text, encoding="utf-8")
        partial.replace(path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def export_af(store: Store, name: str, path: str | Path, also: Sequence[str] = ()) -> AfExportReport:
    """Write agent `name`, and the agents `also` names, as one Letta v2 agent file at `path` (read-only: the agents
    may be in use elsewhere). A block they share is written once, in the `block_ids` of each (Letta's shared block)."""
    path = Path(path)
    report = AfExportReport(name=name, path=path)
    written = _Written()
    entries = []
    for index, agent_name in enumerate(dict.fromkeys([name, *also])):
        own = report if index == 0 else AfExportReport(name=agent_name, path=path)
        entries.append(_agent_entry(store, agent_name, f"agent-{index}", written, own))
        if own is not report:
            report.notes.append(f'agent "{agent_name}" is in the file too: {plural(own.blocks, "block")}, '
                                f"{plural(own.messages, 'message')}, {own.in_context:,} in context")
            report.notes += [f"{agent_name}: {line}" for line in own.notes]
            report.not_exported += [f"{agent_name}: {line}" for line in own.not_exported]
    for shared_id, users in written.shared_users.items():
        if len(users) > 1:
            block = next(b for b in written.blocks if b["id"] == written.shared[shared_id])
            report.notes.append(f'block "{block["label"]}" is shared by {", ".join(users)}: written once, in the '
                                f"block_ids of each")
    document = {"agents": entries, "groups": [], "blocks": written.blocks, "files": [], "sources": [],
                "tools": written.tools, "mcp_servers": [], "skills": [],
                "metadata": {"exported_by": f"agentos {__version__}"}, "created_at": utc_now().isoformat()}
    _write_atomically(path, json.dumps(document, indent=2, ensure_ascii=False))
    return report


@dataclass
class _Written:
    """What the file's agents refer to by id, each written once: blocks (a shared block once for all its agents),
    tools (by name), and the number of messages so far (message ids are the file's, not an agent's)."""

    blocks: list[dict[str, Any]] = field(default_factory=list)
    shared: dict[str, str] = field(default_factory=dict)  # shared id -> the block's id in the file
    shared_users: dict[str, list[str]] = field(default_factory=dict)  # shared id -> the agents that use it
    tools: list[dict[str, Any]] = field(default_factory=list)
    messages: int = 0

    def block_id(self, block: Block, agent: str) -> str:
        if block.shared_id is not None and block.shared_id in self.shared:
            self.shared_users[block.shared_id].append(agent)
            return self.shared[block.shared_id]
        entry = _letta_block(len(self.blocks), block)
        self.blocks.append(entry)
        if block.shared_id is not None:
            self.shared[block.shared_id], self.shared_users[block.shared_id] = entry["id"], [agent]
        return str(entry["id"])

    def tool_id(self, tool: Tool, limit: int, report: AfExportReport) -> str:
        entry = _letta_tool(len(self.tools), tool, limit, report)
        found = next((t for t in self.tools if t["name"] == entry["name"]), None)
        if found is None:
            self.tools.append(entry)
        return str((found or entry)["id"])

    def message_key(self) -> str:
        self.messages += 1
        return f"message-{self.messages - 1}"


def _agent_entry(store: Store, name: str, agent_id: str, written: _Written, report: AfExportReport) -> dict[str, Any]:
    """One agent of the file, as Letta writes it; its blocks, tools and messages are added to `written`."""
    agent = Agent.load(name, store=store, read_only=True)
    state = agent.state.snapshot()
    history = _all_messages(store, state.id, state.message_count)
    context_ids = set(state.in_context_ids)
    system = state.settings.system_prompt if state.settings.system_prompt is not None else agent.prompts.static()
    first_in_context = next((m.created_at for m in history if m.id in context_ids), utc_now())
    key = written.message_key()
    messages = [_letta_message(key, "system", agent.system_prompt(), state.created_at, agent_id=agent_id)]
    in_context = [key]
    if state.summary:
        hidden = agent.state.hidden_count
        alert = {"type": "system_alert", "message": f"Note: {hidden} earlier messages are out of view; they are kept in "
                 f"recall memory.\nThe following is a summary of the previous messages:\n {state.summary}",
                 "time": first_in_context.isoformat()}
        key = written.message_key()
        messages.append(_letta_message(key, "user", json.dumps(alert, indent=2), first_in_context, agent_id=agent_id))
        in_context.append(key)
        report.notes.append(f"the summary of {plural(hidden, 'evicted message')} is Letta's summary message")
    for message in history:
        key = written.message_key()
        messages.append(_to_letta(message, key, agent_id))
        if message.id in context_ids:
            in_context.append(key)
    block_ids = [written.block_id(b, name) for b in state.blocks]
    tool_ids = [written.tool_id(t, state.settings.tool_output_limit, report) for t in agent.tools]
    letta_agent = {
        "name": name, "memory_blocks": [], "tools": [], "tool_ids": tool_ids, "source_ids": [],
        "folder_ids": None, "block_ids": block_ids, "tool_rules": [], "tags": [], "system": system,
        "agent_type": "letta_v1_agent", "llm_config": _llm_config(state.model, agent.window,
                                                                  state.settings.max_output_tokens, report),
        "embedding_config": _embedding_config(state.settings.embedder, report), "initial_message_sequence": None,
        "include_base_tools": False, "include_multi_agent_tools": False, "include_base_tool_rules": False,
        "include_default_source": False, "description": None, "metadata": {"agentos_model": state.model},
        "model": None, "embedding": None, "context_window_limit": None, "embedding_chunk_size": None,
        "max_tokens": None, "max_reasoning_tokens": None, "enable_reasoner": False, "reasoning": None,
        "from_template": None, "template": False, "project": None, "tool_exec_environment_variables": {},
        "secrets": None, "memory_variables": None, "project_id": None, "template_id": None, "base_template_id": None,
        "identity_ids": None, "message_buffer_autoclear": False, "enable_sleeptime": False, "response_format": None,
        "timezone": "UTC", "max_files_open": None, "per_file_view_window_char_limit": None, "hidden": None,
        "parallel_tool_calls": False, "id": agent_id, "in_context_message_ids": in_context, "messages": messages,
        "files_agents": [], "group_ids": [],
    }
    _cannot_carry(agent, state, report, ArchivalTier)
    report.blocks, report.messages, report.in_context = len(block_ids), len(history), len(in_context) - 1 - bool(state.summary)
    return letta_agent


def _counted(count: Callable[[], int]) -> int:
    """A tier's count for the report; 0 when its storage cannot be read (the export goes on without the line)."""
    try:
        return count()
    except AgentOSError:
        return 0


def _cannot_carry(agent: Any, state: AgentState, report: AfExportReport, archival_kind: type) -> None:
    """What the v2 format has no place for: archival passages, facts, the edit log, agentos-only settings."""

    passages = _counted(lambda: agent.tier(archival_kind).count())
    if passages:
        report.not_exported.append(f"{plural(passages, 'archival passage')} (a Letta agent file holds no archival "
                                   f"memory; agentos export NAME keeps them)")
    facts = _counted(lambda: agent.tier(FactTier).count_current())
    if facts:
        report.not_exported.append(f"fact memory ({plural(facts, 'current fact')}, with their history; a Letta agent "
                                   f"file has no place for them; agentos export NAME keeps them)")
    edits = len(agent.memory_edits())
    if edits:
        report.not_exported.append(f"the memory edit log ({plural(edits, 'edit')}; Letta files keep only the "
                                   f"blocks' current values)")
    defaults = AgentSettings().model_dump()
    carried = {"context_window", "max_output_tokens", "system_prompt"}
    changed = [k for k, v in state.settings.model_dump().items() if k not in carried and v != defaults[k]]
    if changed:
        report.not_exported.append(f"agentos settings Letta has no place for: {', '.join(changed)}")


