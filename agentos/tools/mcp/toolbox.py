"""An agent's MCP servers as tools: started when first needed, offered under namespaced names, stopped on close."""

from __future__ import annotations

import time
from collections.abc import Sequence
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from agentos.errors import AgentOSError, ToolError
from agentos.tools.decorator import Tool
from agentos.tools.mcp.connection import EventLoop, McpConnection
from agentos.tools.mcp.content import result_text
from agentos.tools.mcp.offer import choose
from agentos.tools.mcp.servers import McpServerSpec
from agentos.tools.schema_tool import SchemaTool

RETRY_AFTER_S = 60.0  # a server that could not start is tried again at a turn this much later


class McpToolbox:
    """The MCP servers of one open agent and the tools they offer."""

    def __init__(self, specs: Sequence[McpServerSpec], log_dir: Path, client_name: str = "agentos") -> None:
        self.specs = list(specs)
        self._log_dir = log_dir
        self._client_name = client_name
        self._loop: EventLoop | None = None
        self.connections: dict[str, McpConnection] = {}
        self._offered: set[str] = set()  # servers whose tools are offered
        self.tools: list[Tool] = []  # the tools offered so far
        self._failed_at: dict[str, float] = {}

    def pending(self) -> bool:
        """Whether a server's tools are still to be offered (and it is time to try)."""
        return any(s.name not in self._offered and self._due(s.name) for s in self.specs)

    def offer(self, taken: set[str]) -> tuple[list[Tool], list[str]]:
        """Start the servers not yet offered and return their tools, and a line for each thing the user should
        know (a server that could not start, a tool skipped); `taken` holds the names in use and gains the new."""
        tools: list[Tool] = []
        notices: list[str] = []
        for spec in self.specs:
            if spec.name in self._offered or not self._due(spec.name):
                continue
            try:
                listed = self._connection(spec).list_tools()
            except AgentOSError as exc:
                self._failed_at[spec.name] = time.monotonic()
                notices.append(f"{exc} Its tools are not offered; it is tried again at a turn in "
                               f"{RETRY_AFTER_S:g} s.")
                continue
            self._offered.add(spec.name)
            self._failed_at.pop(spec.name, None)
            allowed = [t for t in listed if spec.allows(t.name)]
            offers, skipped = choose(spec.name, [(t.name, t.description or "", t.input_schema) for t in allowed], taken)
            notices += skipped + _unmatched(spec, [t.name for t in listed])
            connection = self.connections[spec.name]
            tools += [SchemaTool(o.name, o.description, o.parameters, _runner(connection, o.remote_name))
                      for o in offers]
        self.tools += tools
        return tools, notices

    def _due(self, name: str) -> bool:
        return time.monotonic() - self._failed_at.get(name, -RETRY_AFTER_S) >= RETRY_AFTER_S

    def _connection(self, spec: McpServerSpec) -> McpConnection:
        if spec.name not in self.connections:
            if self._loop is None:
                self._loop = EventLoop()
            self.connections[spec.name] = McpConnection(spec, self._loop, self._log_dir, self._client_name)
        return self.connections[spec.name]

    def close(self) -> None:
        """Stop every server this toolbox started."""
        for connection in self.connections.values():
            connection.close()
        self.connections.clear()
        self._offered.clear()
        self.tools = []
        if self._loop is not None:
            self._loop.stop()
            self._loop = None


def _runner(connection: McpConnection, remote: str) -> Any:
    def run(arguments: dict[str, Any]) -> str:
        result = connection.call(remote, arguments)
        text = result_text(list(result.content or []), result.structured_content)
        if result.is_error:
            raise ToolError(f'the "{remote}" tool of MCP server "{connection.spec.name}" failed: {text}')
        return text
    return run


def _unmatched(spec: McpServerSpec, names: list[str]) -> list[str]:
    """A line for each allow-list entry that matches none of the server's tools (a typo, or a tool it dropped)."""
    if spec.allow is None:
        return []
    lonely = [p for p in spec.allow if not any(fnmatchcase(n, p) for n in names)]
    return [f'MCP server "{spec.name}" has no tool matching "{p}" from its allow-list (it has: '
            f"{', '.join(sorted(names)) or 'none'})." for p in lonely]
