"""Letta Agent Files (`.af`) read: either shape, double-encoded or not, with a clear error for anything else.

**v2** (Letta 0.8 on): `{"agents": [...], "blocks": [...], "tools": [...], "groups", "files", "sources",
"mcp_servers", "skills", "metadata", "created_at"}`, entities pointing at each other by file-local ids (`agent-0`,
`block-3`, `tool-1`, `message-7`). **v1** (older): the whole file is one agent, with `core_memory` (or
`memory.blocks`), `messages`, `in_context_message_indices` (positions in `messages`), `tools` with their source.
Either may be *double-encoded*: the file is a JSON string whose text is the JSON. `letta_import` maps them to
agentos agents and `letta_export` writes v2 files.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from agentos.portable.archive import ExportFileError
from agentos.text import plural
from agentos.times import iso_moment

SUFFIX = ".af"

# -- reading -------------------------------------------------------------------------------------


@dataclass
class AfAgent:
    """One agent a file holds: its file-local id and its name."""

    id: str
    name: str


@dataclass
class AfFile:
    """A parsed Letta agent file: its shape, whether it was double-encoded, the agents it holds, the JSON itself."""

    path: Path
    version: Literal["v1", "v2"]
    double_encoded: bool
    agents: list[AfAgent]
    data: dict[str, Any]


def _cut_short(text: str) -> bool:
    """Whether JSON text ends inside a string or with brackets still open (a truncated file)."""
    depth, in_string, escaped = 0, False, False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
    return in_string or depth > 0


def _decode(text: str, path: Path, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        at = f"{exc.msg} at line {exc.lineno}, column {exc.colno}{where}"
        if _cut_short(text):
            raise ExportFileError(f"{path} is cut short: its JSON ends before it is complete ({at}). Export the "
                                  f"agent from Letta again, or find the whole file.") from None
        raise ExportFileError(f"{path} is not a Letta agent file: it is not valid JSON ({at}).") from None
    except RecursionError:
        raise ExportFileError(f"{path} is not a Letta agent file: its JSON is nested too deeply.") from None


def read_af(path: str | Path) -> AfFile:
    """Parse a Letta agent file (v1 or v2, double-encoded or not); ExportFileError says what is wrong with a bad one."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ExportFileError(f"{path} does not exist.") from None
    except OSError as exc:
        raise ExportFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ExportFileError(f"{path} is not a Letta agent file: it is not UTF-8 text.") from None
    if not text.strip():
        raise ExportFileError(f"{path} is empty.")
    data = _decode(text, path, "")
    double = isinstance(data, str)
    if double:
        data = _decode(data, path, " of the JSON text the file's string holds")
    if isinstance(data, dict) and isinstance(data.get("agents"), list):
        agents = []
        for index, agent in enumerate(data["agents"]):
            if not isinstance(agent, dict) or not isinstance(agent.get("name"), str):
                raise ExportFileError(f"{path} is damaged: agent #{index + 1} of its agents list has no name.")
            agents.append(AfAgent(id=str(agent.get("id") or f"agent-{index}"), name=agent["name"]))
        if not agents:
            raise ExportFileError(f"{path} is a Letta agent file that holds no agents.")
        return AfFile(path, "v2", double, agents, data)
    if isinstance(data, dict) and isinstance(data.get("name"), str) and any(
            key in data for key in ("system", "messages", "core_memory", "memory", "llm_config", "agent_type")):
        return AfFile(path, "v1", double, [AfAgent(id=str(data.get("id") or "agent-0"), name=data["name"])], data)
    kinds = {list: "a list", str: "a string", int: "a number", float: "a number", bool: "true or false"}
    kind = ("an object with keys " + ", ".join(list(data)[:6])) if isinstance(data, dict) else kinds.get(type(data), "null")
    raise ExportFileError(f"{path} holds JSON but not a Letta agent file: {kind}, where a v2 file has an "
                          f'"agents" list and a v1 file is one agent with "name", "system" and "messages".')


def _preview(value: Any) -> str:
    if isinstance(value, str):
        return repr(value if len(value) <= 60 else value[:57] + "...")
    if isinstance(value, dict):
        return "{" + ", ".join(map(str, list(value)[:8])) + (", ..." if len(value) > 8 else "") + "}"
    if isinstance(value, list):
        names = [v if isinstance(v, str) else _dict(v).get("tag") or _dict(v).get("name") for v in value]
        if all(isinstance(n, str) for n in names):
            return ", ".join(map(str, names))
        return f"{len(value)} item(s)"
    return repr(value)


# -- reading one agent of a file -----------------------------------------------------------------


def _bad(path: Path, what: str) -> ExportFileError:
    return ExportFileError(f"{path} is damaged: {what}.")


def _items(value: Any, path: Path, what: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _bad(path, f"{what} is not a list")
    return value


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _time(value: Any) -> datetime | None:
    """A Letta time field (ISO 8601) as aware UTC; None when it is missing or not a time."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return iso_moment(value)
    except (ValueError, OverflowError):
        return None


@dataclass
class AfSource:
    """One agent of a file, whichever the file's shape: its blocks, tools and messages resolved from their ids."""

    af: AfFile
    raw: dict[str, Any]
    name: str
    id: str
    blocks: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    messages: list[tuple[str, dict[str, Any]]]  # (file-local key, message)
    in_context: list[str] | None  # keys; None when the file does not say
    unresolved: list[str] = field(default_factory=list)  # ids the agent names that the file does not hold


def read_agent(af: AfFile, wanted: AfAgent) -> AfSource:
    """The agent `wanted` of `af`, read from a v1 file (the whole file) or a v2 one (its entry and what it points at)."""
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
        return AfSource(af, raw, wanted.name, wanted.id, [b for b in blocks if isinstance(b, dict)], tools, messages,
                        in_context)
    raw = next(a for i, a in enumerate(data["agents"]) if str(a.get("id") or f"agent-{i}") == wanted.id)
    by_id = {str(b.get("id")): b for b in _items(data.get("blocks"), path, "blocks") if isinstance(b, dict)}
    tools_by_id = {str(t.get("id")): t for t in _items(data.get("tools"), path, "tools") if isinstance(t, dict)}
    blocks, tools, unresolved = [], [], []
    for block_id in _items(raw.get("block_ids"), path, f"agent {wanted.id}'s block_ids"):
        if str(block_id) in by_id:
            blocks.append(by_id[str(block_id)])
        else:
            unresolved.append(f"block {block_id}: the agent refers to it, but the file does not hold it")
    blocks += [b for b in _items(raw.get("memory_blocks"), path, "memory_blocks") if isinstance(b, dict)]
    for tool_id in _items(raw.get("tool_ids"), path, f"agent {wanted.id}'s tool_ids"):
        if str(tool_id) in tools_by_id:
            tools.append(tools_by_id[str(tool_id)])
        else:
            unresolved.append(f"tool {tool_id}: the agent refers to it, but the file does not hold it")
    known = {t.get("name") for t in tools}
    tools += [{"name": n, "tool_type": "unknown"} for n in _items(raw.get("tools"), path, "tools")
              if isinstance(n, str) and n not in known]
    messages = []
    for index, message in enumerate(_items(raw.get("messages"), path, f"agent {wanted.id}'s messages")):
        if isinstance(message, dict):
            messages.append((str(message.get("id") or f"#{index}"), message))
    ids = raw.get("in_context_message_ids", raw.get("message_ids"))
    in_context = None if ids is None else [str(i) for i in _items(ids, path, "in_context_message_ids")]
    return AfSource(af, raw, wanted.name, wanted.id, blocks, tools, messages, in_context, unresolved)


# -- reporting -----------------------------------------------------------------------------------


@dataclass
class Findings:
    """What mapping one part of an agent has to report: notes on what it did, and what agentos cannot carry."""

    notes: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)


def report_lines(head: str, blocks: int, messages: int, in_context: int, notes: list[str], left_out: list[str],
                 verb: str, warnings: Sequence[str] = ()) -> list[str]:
    """An import's or export's report: what it moved, its warnings, its notes, then what the file could not carry
    (`not VERB:`)."""
    return [f"{head}: {plural(blocks, 'block')}, {plural(messages, 'message')}, {in_context:,} in context",
            *(f"  warning: {line}" for line in warnings), *(f"  {line}" for line in notes),
            *(f"  not {verb}: {line}" for line in left_out)]
