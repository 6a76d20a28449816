"""`agentos mcp serve NAME`: an agent's memory as an MCP server (stdio), on the `mcp` SDK's low-level server.

Tools and resources are those of `tools` and `resources`. A watcher reads the agent's saved revision every
second; when it moves (a write here, or a chat elsewhere), each block whose text changed is announced to the
clients listening for it (`subscriptions/listen`, and `resources/subscribe` for clients of earlier protocols).
"""

from __future__ import annotations

from typing import Any

from agentos.actors import acting_as
from agentos.errors import AgentOSError
from agentos.mcp_server import resources, tools
from agentos.mcp_server.gate import MemoryGate, Saved
from agentos.version import __version__

WATCH_SECONDS = 1.0
INSTRUCTIONS = ("The long-term memory of an agentos agent: its core memory blocks (always in its prompt), its "
                "archival passages, its past conversation and its facts. Read with read_memory_blocks and the "
                "searches; write with core_memory_append / core_memory_replace, archival_insert and remember.")


class MemoryServer:
    """One agent's memory served over MCP: the handlers, and the watcher that announces block changes."""

    def __init__(self, gate: MemoryGate, read_only: bool = False) -> None:
        import anyio
        import mcp_types as types
        from mcp.server.lowlevel import Server
        from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler

        self.gate = gate
        self.read_only = read_only
        self._types = types
        self._anyio = anyio
        self.bus = InMemorySubscriptionBus()
        self._legacy: dict[str, set[Any]] = {}  # uri -> sessions that asked by resources/subscribe
        self._seen: Saved | None = gate.saved()
        self._served = tools.served_tools(gate, read_only)  # read again when the agent's revision moves
        self.server = Server(
            f"agentos-{gate.name}", version=__version__, instructions=INSTRUCTIONS,
            on_list_tools=self._list_tools, on_call_tool=self._call_tool, on_list_resources=self._list_resources,
            on_read_resource=self._read_resource, on_subscribe_resource=self._subscribe,
            on_unsubscribe_resource=self._unsubscribe, on_subscriptions_listen=ListenHandler(self.bus))

    # -- handlers --------------------------------------------------------------------------------

    async def _list_tools(self, ctx: Any, params: Any) -> Any:
        t = self._types
        return t.ListToolsResult(tools=[t.Tool(name=s.name, description=s.description, input_schema=s.schema)
                                        for s in self._served])

    async def _call_tool(self, ctx: Any, params: Any) -> Any:
        t = self._types
        name, arguments = params.name, dict(params.arguments or {})
        tool = next((s for s in self._served if s.name == name), None)
        if tool is None:
            known = ", ".join(s.name for s in self._served)
            why = " (this server is read-only)" if self.read_only and name in (*tools.WRITES, "remember") else ""
            answer = tools.Answer(f'no tool "{name}"{why}; the tools are: {known}.', is_error=True)
        else:
            with acting_as("mcp", f"mcp client {_client_name(ctx)}"):  # reaches the worker thread: its context is copied
                answer = await self._anyio.to_thread.run_sync(
                    lambda: tools.call(self.gate, tool, arguments, _client_name(ctx)))
            if tool.writes:
                await self.announce_changes()
        return t.CallToolResult(content=[t.TextContent(type="text", text=answer.text)], is_error=answer.is_error)

    async def _list_resources(self, ctx: Any, params: Any) -> Any:
        t = self._types
        listed = await self._anyio.to_thread.run_sync(lambda: self.gate.read(resources.listed))
        return t.ListResourcesResult(resources=[t.Resource(uri=r.uri, name=r.name, description=r.description,
                                                           mime_type="text/plain") for r in listed])

    async def _read_resource(self, ctx: Any, params: Any) -> Any:
        t = self._types
        uri = str(params.uri)
        try:
            with acting_as("mcp", f"mcp client {_client_name(ctx)}"):
                text = await self._anyio.to_thread.run_sync(lambda: self.gate.read(lambda a: resources.read(a, uri)))
        except AgentOSError as exc:
            from mcp.shared.exceptions import MCPError

            raise MCPError(code=t.INVALID_PARAMS, message=str(exc)) from exc
        return t.ReadResourceResult(contents=[t.TextResourceContents(uri=uri, mime_type="text/plain", text=text)])

    async def _subscribe(self, ctx: Any, params: Any) -> Any:
        self._legacy.setdefault(str(params.uri), set()).add(ctx.session)
        return self._types.EmptyResult()

    async def _unsubscribe(self, ctx: Any, params: Any) -> Any:
        self._legacy.get(str(params.uri), set()).discard(ctx.session)
        return self._types.EmptyResult()

    # -- change notifications --------------------------------------------------------------------

    async def announce_changes(self) -> list[str]:
        """Announce the blocks changed since the last look; their URIs."""
        from mcp.server.subscriptions import ResourceUpdated

        before = self._seen
        now = await self._anyio.to_thread.run_sync(lambda: self.gate.saved(before.rev if before else None))
        if now is None:
            return []
        self._seen = now
        self._served = await self._anyio.to_thread.run_sync(lambda: tools.served_tools(self.gate, self.read_only))
        changed = resources.changed_uris(self.gate.name, before.blocks if before else None, now.blocks)
        for uri in changed:
            await self.bus.publish(ResourceUpdated(uri=uri))
            for session in list(self._legacy.get(uri, ())):
                try:
                    await session.send_resource_updated(uri)
                except Exception:  # noqa: BLE001 - a client that went away stops hearing
                    self._legacy[uri].discard(session)
        return changed

    async def watch(self) -> None:
        """Look for changes made elsewhere (a chat, the TUI, `agentos memory set`) every second, for ever."""
        while True:
            await self._anyio.sleep(WATCH_SECONDS)
            try:
                await self.announce_changes()
            except AgentOSError:
                pass  # a store being repaired, an agent renamed: looked at again in a second

    async def serve_stdio(self) -> None:
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read, write), self._anyio.create_task_group() as group:
            group.start_soon(self.watch)
            await self.server.run(read, write, self.server.create_initialization_options())
            group.cancel_scope.cancel()


def _client_name(ctx: Any) -> str:
    """The MCP client's name as it introduced itself ("client" when it did not)."""
    params = getattr(getattr(ctx, "session", None), "client_params", None)
    info = getattr(params, "client_info", None)
    return str(getattr(info, "name", "") or "client")


def serve(name: str, read_only: bool = False) -> None:
    """Serve agent `name`'s memory over stdio until the client closes the pipe."""
    import anyio

    server = MemoryServer(MemoryGate(name), read_only=read_only)
    anyio.run(server.serve_stdio)
