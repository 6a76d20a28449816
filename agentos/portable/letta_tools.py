"""Letta's tools in agentos: never executed or imported, whatever source code they carry.

Letta's `core_memory_append`, `core_memory_replace`, `conversation_search`, `archival_memory_insert` and
`archival_memory_search` are agentos built-ins (the last two as `archival_insert`, `archival_search`);
`send_message` is not needed; every other tool is listed as not imported. Calls in the history keep their names
and arguments. `letta_export` writes the built-ins back under their Letta names.
"""

from __future__ import annotations

from typing import Any

from agentos.portable.letta_file import Findings

BUILTINS = {  # Letta tool -> the agentos built-in that does its work
    "core_memory_append": "core_memory_append",
    "core_memory_replace": "core_memory_replace",
    "conversation_search": "conversation_search",
    "archival_memory_insert": "archival_insert",
    "archival_memory_search": "archival_search",
}
LETTA_TOOL_TYPES = {"core_memory_append": "letta_memory_core", "core_memory_replace": "letta_memory_core"}


def tool_findings(tools: list[dict[str, Any]]) -> Findings:
    """Which of the agent's tools are agentos built-ins, and why each other one is not imported."""
    found = Findings()
    mapped = []
    for tool in tools:
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
        found.left_out.append(f'tool "{name}": {why}')
    if mapped:
        found.notes.append(f"tools that are agentos built-ins: {', '.join(mapped)}")
    return found
