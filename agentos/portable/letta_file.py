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
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from agentos.portable.archive import ExportFileError

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


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


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
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def report_lines(head: str, blocks: int, messages: int, in_context: int, notes: list[str], left_out: list[str],
                 verb: str) -> list[str]:
    """An import's or export's report: what it moved, its notes, then what the file could not carry (`not VERB:`)."""
    return [f"{head}: {blocks} blocks, {messages:,} messages, {in_context:,} in context",
            *(f"  {line}" for line in notes), *(f"  not {verb}: {line}" for line in left_out)]
