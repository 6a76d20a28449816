"""One MCP server as agentos holds it: started on first use, called with a timeout, restarted after a crash.

The `mcp` SDK is async; agentos's turn is not. Each connection's client lives in a task on an event loop of its own
thread (`EventLoop`), and the turn's thread waits for one call at a time with a deadline. A stdio server's stderr
goes to a log file, whose last lines are quoted when it fails.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, TypeVar

from agentos.errors import ConfigError, ToolError
from agentos.tools.mcp.servers import McpServerSpec
from agentos.version import __version__

T = TypeVar("T")
CONNECTION_CLOSED = -32000  # the SDK's code for a transport that ended (the server exited, the socket closed)
REQUEST_TIMEOUT = -32001  # the SDK's code for a request its own read timeout (the same deadline as ours) gave up on
STOP_WAIT_S = 5.0
LOG_LINES = 5


class McpError(ToolError):
    """An MCP server could not be started or reached, or a call to it failed; the message says which and why."""


class EventLoop:
    """An asyncio loop running in a daemon thread, for the connections of one agent."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="agentos-mcp", daemon=True)
        self.thread.start()

    def submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(STOP_WAIT_S)


class McpConnection:
    """A client of one MCP server; `list_tools` and `call` start it when it is not running."""

    def __init__(self, spec: McpServerSpec, loop: EventLoop, log_dir: Path, client_name: str = "agentos") -> None:
        self.spec = spec
        self.client_name = client_name  # how agentos introduces itself to the server
        self._loop = loop
        self.log_path = log_dir / f"mcp-{spec.name}.log"
        self._client: Any = None
        self._stop: asyncio.Event | None = None
        self._held: Future[None] | None = None
        self.starts = 0
        self._log_from = 0  # where this start's lines begin in the log

    @property
    def running(self) -> bool:
        return self._client is not None and self._held is not None and not self._held.done()

    # -- the calls ------------------------------------------------------------------------------

    def list_tools(self) -> list[Any]:
        """Every tool the server lists (all pages)."""
        async def every_page() -> list[Any]:
            tools, cursor = [], None
            while True:
                page = await self._client.list_tools(cursor=cursor)
                tools += page.tools
                cursor = page.next_cursor
                if not cursor:
                    return tools
        return self._run(every_page, "list its tools")

    def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        """Call `tool`; the SDK's CallToolResult. McpError when the server fails, crashes or does not answer."""
        return self._run(lambda: self._client.call_tool(tool, arguments), f'run "{tool}"')

    def _run(self, make: Any, what: str) -> Any:
        self._ensure_started()
        future = self._loop.submit(make())
        try:
            return future.result(self.spec.timeout_s)
        except Exception as exc:  # noqa: BLE001 - whatever the SDK raises becomes a tool error
            # the SDK's read timeout and ours are one deadline; on a busy machine either may be seen first
            if isinstance(exc, (FutureTimeout, TimeoutError)) or getattr(exc, "code", None) == REQUEST_TIMEOUT:
                future.cancel()
                raise McpError(f'MCP server "{self.spec.name}" did not {what} within {self.spec.timeout_s:g} s; the '
                               f"call was abandoned (raise its timeout with: agentos mcp add ... --timeout S).") from exc
            if getattr(exc, "code", None) == CONNECTION_CLOSED or not self.running:
                self._forget()
                raise McpError(f'MCP server "{self.spec.name}" stopped while asked to {what}'
                               f"{self._last_words()}. It is started again on the next call.") from exc
            raise McpError(f'MCP server "{self.spec.name}" could not {what}: {_said(exc)}') from exc

    # -- starting and stopping ------------------------------------------------------------------

    def _ensure_started(self) -> None:
        if self.running:
            return
        self._forget()
        ready: Future[None] = Future()
        self._held = self._loop.submit(self._hold(ready))
        self.starts += 1
        try:
            ready.result(self.spec.timeout_s)
        except FutureTimeout as exc:
            self.close()
            raise McpError(f'MCP server "{self.spec.name}" ({self.spec.where()}) did not start within '
                           f"{self.spec.timeout_s:g} s{self._last_words()}.") from exc
        except ConfigError:
            raise
        except Exception as exc:  # noqa: BLE001 - a server that cannot start is said, never raised as-is
            raise McpError(f'MCP server "{self.spec.name}" ({self.spec.where()}) could not be started: '
                           f"{_said(exc)}{self._last_words()}") from exc

    async def _hold(self, ready: Future[None]) -> None:
        """Enter the SDK client, say it is ready, and keep it until told to stop (its context needs one task)."""
        self._stop = asyncio.Event()
        try:
            async with AsyncExitStack() as stack:
                self._client = await stack.enter_async_context(self._make_client(stack))
                ready.set_result(None)
                await self._stop.wait()
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread, or ends the connection
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else McpError(str(exc)))
        finally:
            self._client = None

    def _make_client(self, stack: AsyncExitStack) -> Any:
        from mcp import Client, Implementation, StdioServerParameters  # deferred: 0.7 s, only agents with servers
        from mcp.client.stdio import stdio_client
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        spec = self.spec
        me = Implementation(name=self.client_name, version=__version__)
        if spec.command is not None:
            params = StdioServerParameters(command=spec.command[0], args=spec.command[1:], env=spec.environment(),
                                           cwd=spec.cwd)
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log_from = self.log_path.stat().st_size if self.log_path.exists() else 0
            log = stack.enter_context(self.log_path.open("a", encoding="utf-8"))
            return Client(stdio_client(params, errlog=log), read_timeout_seconds=spec.timeout_s, client_info=me)
        http = create_mcp_http_client(headers=spec.expanded_headers())
        return Client(streamable_http_client(str(spec.url), http_client=http), read_timeout_seconds=spec.timeout_s,
                      client_info=me)

    def _forget(self) -> None:
        """Let a connection that ended go (its task is done or is told to finish)."""
        if self._stop is not None:
            self._loop.loop.call_soon_threadsafe(self._stop.set)
        self._client, self._stop, self._held = None, None, None

    def close(self) -> None:
        """Stop the server (a stdio one's process ends with its pipes) and wait a little for it."""
        held = self._held
        self._forget()
        if held is not None:
            try:
                held.result(STOP_WAIT_S)
            except Exception:  # noqa: BLE001 - closing: what it ended with no longer matters
                pass

    def _last_words(self) -> str:
        if self.spec.command is None or not self.log_path.exists():
            return ""
        with self.log_path.open("rb") as log:
            log.seek(self._log_from)
            said = log.read().decode("utf-8", errors="replace")
        lines = [line for line in said.splitlines() if line.strip()]
        if not lines:
            return ""
        return f"; its last words: {' | '.join(lines[-LOG_LINES:])[-600:]} (log: {self.log_path})"


def _said(exc: BaseException) -> str:
    """An exception's message, looking inside the exception groups anyio wraps errors in."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return str(exc) or type(exc).__name__
