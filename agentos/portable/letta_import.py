"""Letta Agent Files into agentos agents: each one as it is, with a report of whatever cannot be mapped.

The file is read by `letta_file` (either shape). How Letta maps to agentos (each choice is reported on import,
so nothing is dropped silently):

- **Blocks** keep label, value, limit, description and read_only. A label agentos cannot use (it must match
  `^[a-z][a-z0-9_]{0,47}$`) is lower-cased, its other characters become `_`, and it is made unique. Like every
  agentos agent the import has `persona` and `human` blocks: one the file lacks is added, empty.
- **System prompt**: Letta's `system` is kept word for word (`AgentSettings.system_prompt`); Letta's
  system-role messages that are its compiled prompt (instructions plus rendered blocks) are not messages in
  agentos, which renders its prompt from the blocks on every call.
- **Messages**: text parts of `content` (or `text`) are joined; reasoning parts and images are left out. A user
  message holding Letta's JSON envelope `{"type": "user_message", "message": ...}` becomes that text;
  `heartbeat` and `login` envelopes are Letta loop control and are left out; a `system_alert` that carries
  Letta's summary of evicted messages becomes the agent's summary when it is in context (older ones are
  superseded), any other alert a system message. agentos has no `send_message`: a `send_message` call's
  `message` argument becomes the assistant's reply text, and its "OK" result goes. Agents that speak through
  `send_message` (MemGPT-style) write hidden inner thoughts as their text; those are left out, as are the
  `inner_thoughts` and `request_heartbeat` arguments of their other calls. Tool results lose Letta's
  `{"status", "message", "time"}` wrapper (a status other than OK marks an error); a result message with
  several `tool_returns` (parallel calls) becomes one result each. Approval requests are assistant tool calls;
  approval responses are left out (the results that follow them are kept). Results with no call before them are
  left out and calls with no result get an error result, as `repair_context` does for any agentos context.
- **In context**: the messages made from Letta's in-context ones. agentos keeps a suffix of the history in
  context, so when Letta's set is not one, the smallest suffix that covers it is taken (and reported).
- **Model**: `llm_config` (endpoint type, model, endpoint URL) becomes a spec such as `openai/gpt-4o-mini`,
  `anthropic/claude-...`, `ollama/NAME`, `openai-compatible/NAME@URL`; its context window and output cap become
  the agent's settings. A file agentos wrote carries its exact spec in the agent's metadata. When nothing maps,
  the configured default model is used. The spec is recorded, not resolved: no key or network is needed.
- **Tools** are never executed or imported, whatever source code they carry. Letta's `core_memory_append`,
  `core_memory_replace`, `conversation_search`, `archival_memory_insert` and `archival_memory_search` are
  agentos built-ins (the last two as `archival_insert`, `archival_search`); `send_message` is not needed; every
  other tool is listed as not imported. Calls in the history keep their names and arguments.
- Groups, files, sources, MCP servers, skills, tool rules, embedding settings, sampling settings and fields agentos
  does not know are listed in the report.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from agentos.agent.context import repair_context
from agentos.agent.prompts import PromptRenderer
from agentos.agent.state import AgentSettings, AgentState, validate_name
from agentos.blocks import Block
from agentos.errors import AgentExistsError, AgentOSError, ConfigError
from agentos.messages import Message, ToolCall, new_id, utc_now
from agentos.portable.letta_file import AfAgent, AfFile, _dict, _items, _plural, _preview, _text, _time, read_af, report_lines
from agentos.portable.trust import check_model_server
from agentos.providers.models import SERVERS, parse_spec
from agentos.storage.store import Store

LETTA_BLOCK_LIMIT = 20_000  # Letta's default block limit, for a block whose file gives none
BUILTINS = {  # Letta tool -> the agentos built-in that does its work
    "core_memory_append": "core_memory_append",
    "core_memory_replace": "core_memory_replace",
    "conversation_search": "conversation_search",
    "archival_memory_insert": "archival_insert",
    "archival_memory_search": "archival_search",
}
LETTA_TOOL_TYPES = {"core_memory_append": "letta_memory_core", "core_memory_replace": "letta_memory_core"}
MONOLOGUE_AGENT_TYPES = {"memgpt_agent", "memgpt_v2_agent", "sleeptime_agent"}
REASONING_PARTS = {"reasoning", "redacted_reasoning", "omitted_reasoning", "summarized_reasoning"}
LETTA_ONLY_ARGUMENTS = ("inner_thoughts", "request_heartbeat")
SUMMARY_MARK = re.compile(r"The following is a summary of the previous(?: \d+)? messages:\s*(.*)", re.DOTALL)
COMPILED_MARKS = ("<memory_blocks>", "### Memory [last modified")
OPENAI_COMPATIBLE_TYPES = {"groq", "together", "deepseek", "xai", "mistral", "fireworks"}
LOCAL_TYPES = {"ollama": "ollama", "vllm": "vllm", "lmstudio": "lmstudio", "lmstudio-legacy": "lmstudio",
               "lmstudio-chatcompletions": "lmstudio", "llamacpp": "llamacpp"}
V2_KEYS = ("agents", "groups", "blocks", "files", "sources", "tools", "mcp_servers", "skills", "metadata", "created_at")

# Agent fields read by the mapping, and fields whose values agentos has no place for: listed when set.
MAPPED_FIELDS = {"id", "name", "system", "agent_type", "llm_config", "model", "model_settings", "context_window_limit",
                 "max_tokens", "block_ids", "memory_blocks", "core_memory", "memory", "messages", "in_context_message_ids",
                 "in_context_message_indices", "tool_ids", "tools", "group_ids", "created_at",
                 "updated_at", "version", "metadata", "metadata_"}
UNMAPPED_FIELDS = {
    "description": "agentos agents have no description",
    "tags": "agentos agents have no tags",
    "tool_rules": "agentos's loop has no tool rules",
    "embedding_config": "agentos searches memory with its own embedder setting (none: full-text search); choose one "
                        "with agentos reindex NAME --embedder SPEC",
    "embedding": "agentos searches memory with its own embedder setting",
    "embedding_chunk_size": "agentos chunks archival text itself",
    "tool_exec_environment_variables": "no tool of the file runs here; values are not imported",
    "secrets": "no tool of the file runs here; values are not imported",
    "source_ids": "agentos has no data sources", "folder_ids": "agentos has no folders",
    "files_agents": "agentos has no file system", "identity_ids": "agentos has no identities",
    "message_buffer_autoclear": "agentos always keeps the conversation",
    "enable_sleeptime": "agentos has no sleep-time agents",
    "compaction_settings": "agentos's pager has its own settings",
    "response_format": "agentos replies are free text", "reasoning": "no reasoning setting in agentos",
    "enable_reasoner": "no reasoning setting in agentos", "max_reasoning_tokens": "no reasoning setting in agentos",
    "memory_variables": "agentos has no templates", "initial_message_sequence": "the history is imported as it is",
    "multi_agent_group": "agentos runs each agent on its own",
}
IGNORED_FIELDS = {"include_base_tools", "include_multi_agent_tools", "include_base_tool_rules", "include_default_source",
                  "from_template", "template", "project", "project_id", "template_id", "base_template_id", "deployment_id",
                  "entity_id", "hidden", "parallel_tool_calls", "max_files_open", "per_file_view_window_char_limit"}
BLOCK_FIELDS = {"id", "label", "value", "limit", "description", "read_only", "created_at", "updated_at", "metadata_",
                "project_id", "template_id", "base_template_id", "deployment_id", "entity_id", "organization_id",
                "is_template", "template_name", "preserve_on_migration", "hidden", "metadata"}
MESSAGE_FIELDS = {"type", "id", "role", "content", "text", "name", "otid", "sender_id", "batch_item_id", "group_id",
                  "model", "agent_id", "tool_calls", "tool_call_id", "tool_returns", "created_at", "updated_at", "approve",
                  "approval_request_id", "denial_reason", "approvals", "step_id", "run_id", "is_err", "organization_id"}
SAMPLING = ("temperature", "frequency_penalty", "presence_penalty", "reasoning_effort", "effort", "verbosity")


# -- the report ----------------------------------------------------------------------------------


@dataclass
class AfImportReport:
    """What importing one agent did: where it came from, what it holds now, and what was left out (and why)."""

    name: str
    source: str  # the agent's name and file-local id in the file
    path: Path
    model: str = ""
    blocks: int = 0
    messages: int = 0
    in_context: int = 0
    notes: list[str] = field(default_factory=list)
    not_imported: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        return report_lines(f'Imported agent "{self.name}" from {self.path.name} ({self.source})', self.blocks,
                            self.messages, self.in_context, self.notes, self.not_imported, "imported")


@dataclass
class _Source:
    """One agent of a file in one shape, whichever the file's: blocks, tools and messages resolved from their ids."""

    af: AfFile
    raw: dict[str, Any]
    name: str
    id: str
    blocks: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    messages: list[tuple[str, dict[str, Any]]]  # (file-local key, message)
    in_context: list[str] | None  # keys; None when the file does not say
    lost: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _source(af: AfFile, wanted: AfAgent) -> _Source:
    path, data = af.path, af.data
    if af.version == "v1":
        raw = data
        memory = raw.get("core_memory", raw.get("memory"))
        if isinstance(memory, dict):
            memory = memory.get("blocks")
        blocks = _items(memory, path, "core_memory")
        tools = [t for t in _items(raw.get("tools"), path, "tools") if isinstance(t, dict)]
        messages = [(str(i), m) for i, m in enumerate(_items(raw.get("messages"), path, "messages"))]
        indices = raw.get("in_context_message_indices")
        in_context = None if indices is None else [str(i) for i in _items(indices, path, "in_context_message_indices")]
        source = _Source(af, raw, wanted.name, wanted.id, [b for b in blocks if isinstance(b, dict)], tools, messages,
                         in_context)
    else:
        raw = next(a for i, a in enumerate(data["agents"]) if str(a.get("id") or f"agent-{i}") == wanted.id)
        by_id = {str(b.get("id")): b for b in _items(data.get("blocks"), path, "blocks") if isinstance(b, dict)}
        tools_by_id = {str(t.get("id")): t for t in _items(data.get("tools"), path, "tools") if isinstance(t, dict)}
        blocks, tools, lost = [], [], []
        for block_id in _items(raw.get("block_ids"), path, f"agent {wanted.id}'s block_ids"):
            if str(block_id) in by_id:
                blocks.append(by_id[str(block_id)])
            else:
                lost.append(f"block {block_id}: the agent refers to it, but the file does not hold it")
        blocks += [b for b in _items(raw.get("memory_blocks"), path, "memory_blocks") if isinstance(b, dict)]
        for tool_id in _items(raw.get("tool_ids"), path, f"agent {wanted.id}'s tool_ids"):
            if str(tool_id) in tools_by_id:
                tools.append(tools_by_id[str(tool_id)])
            else:
                lost.append(f"tool {tool_id}: the agent refers to it, but the file does not hold it")
        known = {t.get("name") for t in tools}
        tools += [{"name": n, "tool_type": "unknown"} for n in _items(raw.get("tools"), path, "tools")
                  if isinstance(n, str) and n not in known]
        messages = []
        for index, message in enumerate(_items(raw.get("messages"), path, f"agent {wanted.id}'s messages")):
            if isinstance(message, dict):
                messages.append((str(message.get("id") or f"#{index}"), message))
        ids = raw.get("in_context_message_ids", raw.get("message_ids"))
        in_context = None if ids is None else [str(i) for i in _items(ids, path, "in_context_message_ids")]
        source = _Source(af, raw, wanted.name, wanted.id, blocks, tools, messages, in_context, lost)
        _shared_and_groups(source, data)
    return source


def _shared_and_groups(source: _Source, data: dict[str, Any]) -> None:
    """Blocks other agents of the file also use, and the groups this agent is in: both reported."""
    names = {str(a.get("id")): a.get("name") for a in data["agents"] if isinstance(a, dict)}
    others = [a for a in data["agents"] if isinstance(a, dict) and str(a.get("id")) != source.id]
    shared = sorted({str(b.get("label")) for b in source.blocks
                     if any(str(b.get("id")) in map(str, o.get("block_ids") or []) for o in others)})
    if shared:
        source.notes.append(f"blocks shared with other agents of the file are copied, so edits no longer reach them: "
                            f"{', '.join(shared)}")
    for group in data.get("groups") or []:
        if not isinstance(group, dict):
            continue
        config = _dict(group.get("manager_config"))
        members = [str(i) for i in group.get("agent_ids") or []] + [str(config.get("manager_agent_id"))]
        if source.id in members:
            who = ", ".join(str(names.get(i, i)) for i in dict.fromkeys(members) if i != "None")
            source.lost.append(f"multi-agent group {group.get('id')} ({config.get('manager_type', 'group')}: {who}): "
                               f"agentos runs each agent on its own")


# -- mapping -------------------------------------------------------------------------------------


def _normal_label(label: str, taken: set[str]) -> str:
    text = re.sub(r"[^a-z0-9_]+", "_", label.strip().lower()).strip("_")
    if not text or not text[0].isalpha():
        text = "block_" + text
    text = text[:48].rstrip("_")
    base, n = text, 2
    while text in taken:
        suffix = f"_{n}"
        text, n = base[: 48 - len(suffix)] + suffix, n + 1
    return text


def _blocks(source: _Source) -> tuple[list[Block], datetime | None]:
    from agentos.agent.agent import HUMAN_DESCRIPTION, PERSONA_DESCRIPTION

    blocks: list[Block] = []
    taken: set[str] = set()
    last_edit: datetime | None = None
    for raw in source.blocks:
        label = raw.get("label")
        if not isinstance(label, str) or not label.strip():
            source.lost.append(f"block {raw.get('id', '?')}: it has no label")
            continue
        normal = _normal_label(label, taken)
        if normal != label:
            source.notes.append(f'block label "{label}" is "{normal}" here (agentos labels use a-z, 0-9 and _)')
        taken.add(normal)
        limit = raw.get("limit")
        value = raw.get("value")
        blocks.append(Block(label=normal, value=value if isinstance(value, str) else "",
                            limit=limit if isinstance(limit, int) and limit > 0 else LETTA_BLOCK_LIMIT,
                            description=raw.get("description") if isinstance(raw.get("description"), str) else "",
                            read_only=bool(raw.get("read_only"))))
        for key, value in raw.items():
            if value and (key not in BLOCK_FIELDS or key in ("metadata", "metadata_", "is_template", "template_name",
                                                              "preserve_on_migration", "hidden")):
                source.lost.append(f'block "{normal}" field {key}: {_preview(value)}')
        edited = _time(raw.get("updated_at"))
        last_edit = max(filter(None, [last_edit, edited]), default=None)
    missing = [label for label in ("persona", "human") if label not in taken]
    if not source.blocks:
        source.notes.append("the file gives the agent no memory blocks")
    for label in missing:
        description = PERSONA_DESCRIPTION if label == "persona" else HUMAN_DESCRIPTION
        blocks.append(Block(label=label, value="", description=description))
        source.notes.append(f'added an empty "{label}" block (every agentos agent has persona and human blocks)')
    return blocks, last_edit


def _model_from_llm(llm: dict[str, Any]) -> str | None:
    model, kind, endpoint = llm.get("model"), llm.get("model_endpoint_type"), llm.get("model_endpoint") or None
    if not isinstance(model, str) or not isinstance(kind, str):
        return None
    try:
        host = (urlsplit(endpoint).hostname or "") if isinstance(endpoint, str) else ""
    except ValueError:
        return None
    spec = None
    if kind == "openai":
        if "openrouter.ai" in host:
            spec = f"openrouter/{model}"
        else:
            spec = f"openai/{model}" if host in ("", "api.openai.com") else f"openai-compatible/{model}@{endpoint}"
    elif kind == "anthropic":
        base = str(endpoint or "").rstrip("/").removesuffix("/v1")
        spec = f"anthropic/{model}" if host in ("", "api.anthropic.com") else f"anthropic/{model}@{base}"
    elif kind == "openrouter":
        spec = f"openrouter/{model}"
    elif kind in LOCAL_TYPES:
        family = LOCAL_TYPES[kind]
        base = str(endpoint or "").rstrip("/")
        if base and not base.endswith("/v1"):
            base += "/v1"
        spec = f"{family}/{model}" + (f"@{base}" if base and base != SERVERS[family].base_url else "")
    elif kind in OPENAI_COMPATIBLE_TYPES and endpoint:
        spec = f"openai-compatible/{model}@{endpoint}"
    return spec


def _valid_spec(spec: Any) -> str | None:
    if not isinstance(spec, str):
        return None
    try:
        parse_spec(spec)
    except ConfigError:
        return None
    return spec


def _model(source: _Source, override: str | None) -> tuple[str, AgentSettings]:
    """The model spec and the model settings (window, output cap) the agent gets, with a note on where they came from."""
    raw = source.raw
    llm, settings, metadata = _dict(raw.get("llm_config")), _dict(raw.get("model_settings")), _dict(raw.get("metadata"))
    described = f"{llm.get('model_endpoint_type')}/{llm.get('model')}" if llm else str(raw.get("model"))
    from_file = False
    if override:
        parse_spec(override)  # a ConfigError names what is wrong with it
        spec, where = override, "given on import"
    elif _valid_spec(metadata.get("agentos_model")):
        spec, where, from_file = metadata["agentos_model"], "recorded in the file by agentos", True
    else:
        mapped = _valid_spec(_model_from_llm(llm)) or _valid_spec(llm.get("handle")) or _valid_spec(raw.get("model"))
        if mapped and not mapped.startswith("scripted/"):
            spec, where, from_file = mapped, "from llm_config", True
        else:
            from agentos.config import default_model_and_source

            try:
                spec, origin = default_model_and_source()
            except ConfigError:
                raise ConfigError(f'the model of agent "{source.name}" in {source.af.path} ({described}) has no agentos '
                                  f"equivalent, and no default model is configured: pass --model SPEC (for example "
                                  f"openai/gpt-4.1-mini or ollama/llama3.1), or set AGENTOS_MODEL.") from None
            where = f"the default ({origin}): {described} has no agentos equivalent"
    if from_file:
        check_model_server(spec, source.af.path)  # the file may not choose who receives the user's key
    window = llm.get("context_window") or raw.get("context_window_limit")
    cap = llm.get("max_tokens") or raw.get("max_tokens") or settings.get("max_output_tokens")
    window = window if isinstance(window, int) and window > 0 and from_file else None  # the file's model's limits
    cap = cap if isinstance(cap, int) and cap > 0 and from_file else None
    extra = (f", context window {window:,} tokens" if window else "") + (f", output cap {cap:,} tokens" if cap else "")
    source.notes.insert(0, f"model {spec} ({where}){extra}")
    sampling = {**settings, **llm}
    unused = [f"{k} {sampling[k]}" for k in SAMPLING
              if sampling.get(k) is not None and not (k == "temperature" and sampling[k] == 1.0)]
    if llm.get("enable_reasoner") and llm.get("max_reasoning_tokens"):
        unused.append(f"extended thinking ({llm['max_reasoning_tokens']:,} reasoning tokens)")
    if unused:
        source.lost.append(f"model settings agentos does not carry: {', '.join(unused)}")
    return spec, AgentSettings(context_window=window, max_output_tokens=cap)


def _tools(source: _Source) -> None:
    mapped = []
    for tool in source.tools:
        name, kind = str(tool.get("name")), str(tool.get("tool_type") or "")
        if name in BUILTINS:
            mapped.append(name if BUILTINS[name] == name else f"{name} (as {BUILTINS[name]})")
            continue
        if name == "send_message":
            why = "not needed: an agentos reply is plain assistant text (a send_message call in the history becomes one)"
        elif tool.get("source_code") or kind == "custom":
            why = "a custom tool; its source code was neither run nor imported"
        elif kind in ("letta_memory_core", "letta_sleeptime_core") or name.startswith("memory"):
            why = "a Letta memory tool; agentos edits blocks with core_memory_append and core_memory_replace"
        elif kind == "letta_files_core":
            why = "a Letta file tool; agentos has no file system"
        elif kind == "letta_multi_agent_core":
            why = "a Letta multi-agent tool; agentos runs each agent on its own"
        elif kind == "letta_builtin":
            why = "a Letta built-in tool agentos does not have"
        elif "mcp" in kind:
            why = "an MCP tool; agentos has no MCP client"
        else:
            why = f"a Letta {kind or 'unknown'} tool agentos does not have"
        source.lost.append(f'tool "{name}": {why}')
    if mapped:
        source.notes.append(f"tools that are agentos built-ins: {', '.join(mapped)}")


def _fields(source: _Source) -> None:
    """List every field of the agent (and of the file) whose value agentos has no place for."""
    for key, value in source.raw.items():
        if key in MAPPED_FIELDS or key in IGNORED_FIELDS or value in (None, False, "", [], {}):
            continue
        if key == "timezone":
            if value != "UTC":
                source.lost.append(f"timezone {value!r}: agentos shows times in this machine's time zone")
            continue
        if key == "tool_rules" and isinstance(value, list):
            rules = ", ".join(f"{r.get('type')} on {r.get('tool_name')}" for r in value if isinstance(r, dict))
            source.lost.append(f"tool rules ({UNMAPPED_FIELDS[key]}): {rules}")
            continue
        if key in ("tool_exec_environment_variables", "secrets"):
            keys = [v.get("key") for v in value if isinstance(v, dict)] if isinstance(value, list) else list(value)
            source.lost.append(f"{key} {', '.join(map(str, keys))} ({UNMAPPED_FIELDS[key]})")
            continue
        if key == "embedding_config" and isinstance(value, dict):
            value = value.get("handle") or value.get("embedding_model")
        why = UNMAPPED_FIELDS.get(key, "a field agentos does not know")
        source.lost.append(f"{key} {_preview(value)} ({why})")
    metadata = source.raw.get("metadata") or source.raw.get("metadata_")
    if isinstance(metadata, dict) and set(metadata) - {"agentos_model"}:
        source.lost.append(f"metadata {_preview({k: v for k, v in metadata.items() if k != 'agentos_model'})}")
    if source.af.version == "v2":
        data = source.af.data
        for key in ("files", "sources", "mcp_servers", "skills"):
            if data.get(key):
                source.lost.append(f"{_plural(len(data[key]), key.rstrip('s').replace('_', ' '))} of the file "
                                   f"(agentos has no {key.replace('_', ' ')})")
        for key in data:
            if key not in V2_KEYS and data[key] not in (None, [], {}):
                source.lost.append(f"top-level field {key} {_preview(data[key])} (a field agentos does not know)")


@dataclass
class _History:
    messages: list[Message]
    origins: list[str]  # the key of the Letta message each came from
    summary: str = ""
    counts: Counter[str] = field(default_factory=Counter)


def _parts(message: dict[str, Any], counts: Counter[str]) -> list[str]:
    content = message.get("content")
    if content is None:
        content = message.get("text")
    if content is None:
        return []
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        counts["message contents that are neither text nor a list of parts"] += 1
        return []
    texts = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if isinstance(part, str):
            texts.append(part)
        elif kind == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind in REASONING_PARTS:
            counts["reasoning"] += 1
        elif kind == "image":
            counts["images"] += 1
        else:
            counts[f"content parts of type {kind!r}"] += 1
    return texts


def _envelope(text: str) -> dict[str, Any] | None:
    stripped = text.strip()
    if not (stripped.startswith("{") and '"type"' in stripped):
        return None
    try:
        value = json.loads(stripped)
    except ValueError:
        return None
    return value if isinstance(value, dict) and isinstance(value.get("type"), str) else None


def _calls(message: dict[str, Any], counts: Counter[str]) -> list[ToolCall]:
    calls = []
    for raw in message.get("tool_calls") or []:
        if not isinstance(raw, dict):
            counts["tool calls that are not objects"] += 1
            continue
        function = _dict(raw.get("function")) or raw
        name, arguments = function.get("name"), function.get("arguments", function.get("input", "{}"))
        if not isinstance(name, str) or not name:
            counts["tool calls without a name"] += 1
            continue
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        calls.append(ToolCall(id=str(raw.get("id") or new_id("call")), name=name, arguments=arguments or "{}"))
    return calls


def _arguments(call: ToolCall) -> dict[str, Any] | None:
    try:
        value = json.loads(call.arguments)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _without_letta_arguments(call: ToolCall, counts: Counter[str]) -> ToolCall:
    arguments = _arguments(call)
    if arguments is None or not any(k in arguments for k in LETTA_ONLY_ARGUMENTS):
        return call
    if arguments.get("inner_thoughts"):
        counts["inner thoughts"] += 1
    counts["letta arguments"] += 1
    kept = {k: v for k, v in arguments.items() if k not in LETTA_ONLY_ARGUMENTS}
    return call.model_copy(update={"arguments": json.dumps(kept)})


def _unwrap_result(text: str) -> tuple[str, bool]:
    """A Letta tool result without its {"status", "message", "time"} wrapper, and whether it reports a failure."""
    if not text.lstrip().startswith("{") or '"status"' not in text:
        return text, False
    try:
        value = json.loads(text)
    except ValueError:
        return text, False
    if not isinstance(value, dict) or "status" not in value or "message" not in value:
        return text, False
    message = value["message"]
    body = message if isinstance(message, str) else "" if message is None else json.dumps(message)
    return body, value["status"] != "OK"


def _is_compiled_prompt(text: str, system: str) -> bool:
    head = system.strip()[:200]
    return bool(head and text.lstrip().startswith(head)) or any(mark in text for mark in COMPILED_MARKS)


def _summary_text(text: str) -> str:
    found = SUMMARY_MARK.search(text)
    return (found.group(1) if found else text).strip()


def _history(source: _Source) -> _History:
    """The agentos messages Letta's history becomes (see the module docstring for each rule)."""
    system = _text(source.raw.get("system")) or ""
    in_context = set(source.in_context) if source.in_context is not None else None
    monologue = str(source.raw.get("agent_type")) in MONOLOGUE_AGENT_TYPES or any(
        _dict(_dict(c).get("function")).get("name") == "send_message"
        for _, m in source.messages for c in (m.get("tool_calls") or []))
    out = _History([], [])
    counts = out.counts
    dropped_calls: set[str] = set()
    names: dict[str, str] = {}
    when = _time(source.raw.get("created_at")) or utc_now()

    def add(key: str, message: Message) -> None:
        out.messages.append(message)
        out.origins.append(key)

    for key, raw in source.messages:
        for name in set(raw) - MESSAGE_FIELDS:
            if raw[name] not in (None, [], {}, ""):
                counts[f"message field {name!r}"] += 1
        when = _time(raw.get("created_at")) or when
        role = raw.get("role")
        texts = _parts(raw, counts)
        text = "\n".join(texts)
        if role == "system":
            if _is_compiled_prompt(text, system):
                counts["compiled prompts"] += 1
            else:
                add(key, Message(role="system", content=text, created_at=when))
            continue
        envelope = (_envelope(text) if role in ("user", "summary") else None) or {}
        kind, said = envelope.get("type"), str(envelope.get("message") or "")
        if role == "summary" or (kind == "system_alert" and SUMMARY_MARK.search(said)):
            summary = _summary_text(said if envelope else text)
            if in_context is None or key in in_context:
                if out.summary:
                    counts["earlier summaries"] += 1
                out.summary = summary
            else:
                counts["earlier summaries"] += 1
            continue
        if role == "user":
            if kind in ("heartbeat", "login"):
                counts[kind] += 1
            elif kind == "user_message":
                counts["envelopes"] += 1
                add(key, Message(role="user", content=said, created_at=when, name=_text(raw.get("name"))))
            elif kind == "system_alert":
                add(key, Message(role="system", content=said, created_at=when))
            else:
                add(key, Message(role="user", content=text, created_at=when, name=_text(raw.get("name"))))
        elif role in ("assistant", "approval"):
            calls = _calls(raw, counts)
            if role == "approval" and not calls:
                counts["approval responses"] += 1
                continue
            replies = []
            for call in [c for c in calls if c.name == "send_message"]:
                arguments = _arguments(call)
                if arguments is None:
                    continue
                calls.remove(call)
                dropped_calls.add(call.id)
                counts["send_message"] += 1
                reply = arguments.get("message")
                replies.append(reply if isinstance(reply, str) else json.dumps(reply))
            if monologue and text:
                counts["inner thoughts"] += 1
            content = "\n\n".join(replies) if monologue or replies else text
            calls = [_without_letta_arguments(c, counts) for c in calls]
            names.update({c.id: c.name for c in calls})
            if content or calls:
                add(key, Message(role="assistant", content=content, tool_calls=calls, created_at=when))
        elif role in ("tool", "function"):
            returns = [r for r in raw.get("tool_returns") or [] if isinstance(r, dict) and r.get("func_response") is not None]
            results = [(r.get("tool_call_id") or raw.get("tool_call_id"), r["func_response"], r.get("status") == "error")
                       for r in returns] or [(raw.get("tool_call_id"), text, False)]
            for call_id, response, failed in results:
                if call_id in dropped_calls:
                    continue
                body, error = _unwrap_result(response if isinstance(response, str) else json.dumps(response))
                tool_name = names.get(str(call_id)) or _text(raw.get("name"))
                add(key, Message(role="tool", content=body, tool_call_id=str(call_id) if call_id else None, name=tool_name,
                                 is_error=failed or error, created_at=when))
        else:
            counts[f"messages with role {role!r}"] += 1
    return _repaired(out)


def _repaired(history: _History) -> _History:
    """Tool results right after their calls, as agentos requires of a context: results with no call are left out,
    calls with no result get an error result (counted, for the report)."""
    origin = {id(m): key for m, key in zip(history.messages, history.origins)}
    repaired = repair_context(history.messages)
    history.counts["orphan results"] += len(history.messages) - sum(id(m) in origin for m in repaired)
    origins: list[str] = []
    for index, message in enumerate(repaired):
        if id(message) not in origin:  # an error result closing a call, made now: dated as the call
            history.counts["closed calls"] += 1
            repaired[index] = message.model_copy(update={"created_at": repaired[index - 1].created_at})
        origins.append(origin.get(id(message), origins[-1] if origins else ""))
    history.messages, history.origins = repaired, origins
    return history


def _in_context(source: _Source, history: _History) -> int:
    """How many of the last messages are in context: the smallest suffix covering Letta's in-context ones."""
    if source.in_context is None:
        if history.messages:
            source.notes.append("the file does not say which messages are in context: all of them are")
        return len(history.messages)
    keys = set(source.in_context)
    known = {key for key, _ in source.messages}
    missing = [k for k in source.in_context if k not in known]
    if missing:
        source.lost.append(f"{_plural(len(missing), 'in-context message id')} naming no message of the file: "
                           f"{', '.join(missing[:5])}")
    hits = [i for i, key in enumerate(history.origins) if key in keys]
    if not hits:
        return 0
    first = hits[0]
    while first > 0 and history.messages[first].role == "tool":
        first -= 1  # a result stays with its call
    outside = sum(1 for key in history.origins[first:] if key not in keys)
    if outside:
        source.notes.append(f"Letta's in-context messages are not the end of its history: the smallest suffix that "
                            f"covers them is in context here, with {_plural(outside, 'message')} Letta had out of context")
    return len(history.messages) - first


def _history_notes(source: _Source, history: _History) -> None:
    said = {  # count -> (what was done, and whether it is left out)
        "compiled prompts": ("Letta's compiled system prompt (system messages: {n}): agentos renders its own from the "
                             "blocks on every call", True),
        "heartbeat": ("heartbeats (messages: {n}): Letta's loop control; agentos continues after tool calls by itself", True),
        "login": ("login events (messages: {n}): Letta's session bookkeeping", True),
        "inner thoughts": ("inner thoughts ({n}): the hidden monologue of an agent that speaks through send_message", True),
        "reasoning": ("reasoning (parts: {n}): the model's hidden reasoning", True),
        "approval responses": ("approval responses ({n}): the tool results that follow them are imported", True),
        "earlier summaries": ("earlier summaries ({n}): superseded; the messages they summarize are in the history", True),
        "orphan results": ("tool results with no call before them ({n})", True),
        "images": ("images ({n}): agentos messages are text", True),
        "send_message": ("send_message calls became the assistant's reply text ({n})", False),
        "envelopes": ("user messages unwrapped from Letta's JSON envelope ({n})", False),
        "letta arguments": ("Letta-only arguments inner_thoughts and request_heartbeat removed from tool calls ({n})", False),
        "closed calls": ("tool calls with no result in the file got an error result saying they were cancelled ({n})",
                         False),
    }
    for key, n in history.counts.items():
        if n:
            text, left_out = said.get(key, (f"{key} ({{n}})", True))
            (source.lost if left_out else source.notes).append(text.format(n=f"{n:,}"))
    if history.summary:
        source.notes.append(f"Letta's summary of the evicted messages ({len(history.summary):,} characters) is the "
                            f"agent's summary")


@dataclass
class _Plan:
    state: AgentState
    messages: list[Message]
    in_context: int
    report: AfImportReport


def _agent_name(source: _Source, name: str | None) -> str:
    if name is not None:
        return validate_name(name)
    normal = re.sub(r"[^A-Za-z0-9_.-]+", "-", source.name).strip("-._")[:64] or "letta-agent"
    if normal != source.name:
        source.notes.append(f'named "{normal}" (Letta called it "{source.name}"; agentos names use letters, digits, '
                            f"'.', '_' and '-')")
    return validate_name(normal)


def _plan(af: AfFile, wanted: AfAgent, name: str | None, model: str | None) -> _Plan:
    source = _source(af, wanted)
    target = _agent_name(source, name)
    spec, settings = _model(source, model)
    blocks, last_edit = _blocks(source)
    system = source.raw.get("system")
    if isinstance(system, str) and system.strip() and system != PromptRenderer().static():
        settings.system_prompt = system
        source.notes.append(f"system prompt: Letta's own ({len(system):,} characters), kept word for word")
    else:
        source.notes.append("system prompt: agentos's own (the file gives none of its own)")
    _tools(source)
    _fields(source)
    history = _history(source)
    in_context = _in_context(source, history)
    _history_notes(source, history)
    times = [m.created_at for m in history.messages]
    created = _time(source.raw.get("created_at")) or min(times, default=None) or utc_now()
    state = AgentState(name=target, model=spec, blocks=blocks, settings=settings, summary=history.summary,
                       created_at=created, last_memory_edit_at=last_edit)
    where = (f"Letta {af.version} file{', double-encoded' if af.double_encoded else ''}, agent {wanted.name}"
             + (f" ({wanted.id})" if af.version == "v2" else ""))
    report = AfImportReport(name=target, source=where, path=af.path, model=spec, blocks=len(blocks),
                            messages=len(history.messages), in_context=in_context, notes=source.notes,
                            not_imported=source.lost)
    return _Plan(state, history.messages, in_context, report)


# -- importing -----------------------------------------------------------------------------------


def _choose(af: AfFile, agent: str | None, all_agents: bool, name: str | None) -> list[AfAgent]:
    listing = ", ".join(f"{a.name} ({a.id})" for a in af.agents)
    if agent is not None and all_agents:
        raise AgentOSError("pass either --agent NAME or --all, not both.")
    if agent is not None:
        found = [a for a in af.agents if a.id == agent] or [a for a in af.agents if a.name == agent]
        if not found:
            raise AgentOSError(f'{af.path} holds no agent named or with id "{agent}". Its agents: {listing}.')
        if len(found) > 1:
            raise AgentOSError(f'{af.path} holds {len(found)} agents named "{agent}": pick one by id. Its agents: {listing}.')
        return found
    if all_agents or len(af.agents) == 1:
        if name is not None and len(af.agents) > 1:
            raise AgentOSError(f"--name names one agent, and {af.path} holds {len(af.agents)}: pass --agent NAME too.")
        return list(af.agents)
    raise AgentOSError(f"{af.path} holds {len(af.agents)} agents: {listing}. Pass --agent NAME to import one of "
                       f"them, or --all to import them all.")


def import_af(store: Store, path: str | Path, *, agent: str | None = None, all_agents: bool = False,
              name: str | None = None, model: str | None = None) -> list[AfImportReport]:
    """Import the agent(s) of Letta agent file `path`: the file's only agent, the one `agent` names (its name or
    file-local id) or, with `all_agents`, every one. `name` renames a single agent; `model` overrides the model the
    file gives. Nothing is written when the file is bad, a name is taken or no model can be chosen; a failure
    part-way deletes what this call created."""
    from agentos.agent.agent import Agent
    from agentos.storage.lease import Lease

    af = read_af(path)
    plans = [_plan(af, wanted, name, model) for wanted in _choose(af, agent, all_agents, name)]
    seen: set[str] = set()
    for plan in plans:
        target = plan.state.name
        if store.agent_row(target) is not None or target in seen:
            hint = "Import it under another name with --name NEW." if len(plans) == 1 else "Delete or rename it first."
            raise AgentExistsError(f'an agent named "{target}" already exists. {hint}')
        seen.add(target)
    created: list[str] = []
    try:
        for plan in plans:
            state = plan.state
            lease = Lease(agent_id=state.id, name=state.name)
            store.create_agent(state.name, state.id, state.model_dump_json(), lease)
            created.append(state.name)
            store.release(lease)
            opened = Agent.load(state.name, store=store, with_model=False)
            try:
                if plan.messages:
                    opened.add_history(plan.messages, in_context=plan.in_context)
                opened.add_restore_point(f"(imported from {Path(path).name})")
            except BaseException:
                with contextlib.suppress(Exception):
                    opened.close()  # gives the lease back; the agent is deleted below
                raise
            opened.close()
    except BaseException:
        for target in created:
            try:
                Agent.delete(target, store=store, force=True)
            except AgentOSError:
                pass  # the first failure is the one to report
        raise
    return [plan.report for plan in plans]


