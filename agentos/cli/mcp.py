"""`agentos mcp add|list|remove|serve`: an agent's MCP servers, and its memory served over MCP."""

from __future__ import annotations

import argparse
import shlex
import sys

import anyio
from pydantic import ValidationError

from agentos.agent.agent import Agent
from agentos.config import data_home
from agentos.errors import ConfigError
from agentos.mcp_server.gate import MemoryGate
from agentos.mcp_server.http import address, serve_http, server_key
from agentos.mcp_server.server import MemoryServer, serve
from agentos.tools.mcp.servers import McpServerSpec, find_server
from agentos.tools.mcp.toolbox import McpToolbox


def _pairs(items: list[str] | None, what: str, *, bare_ok: bool) -> dict[str, str]:
    """`A=B` items as {A: B}; a bare `A` (when `bare_ok`) as {A: A}."""
    pairs = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not key or (not sep and not bare_ok):
            raise ConfigError(f"{what} {item!r} should look like NAME=VALUE.")
        pairs[key] = value if sep else key
    return pairs


def cmd_add(args: argparse.Namespace) -> int:
    """`mcp add NAME SERVER --stdio CMD | --url URL`: give the agent a server's tools (from its next turn)."""
    try:
        spec = McpServerSpec(
            name=args.server, command=shlex.split(args.stdio) if args.stdio is not None else None, url=args.url,
            env=_pairs(args.env, "--env", bare_ok=True), headers=_pairs(args.header, "--header", bare_ok=False),
            allow=[t.strip() for t in args.allow.split(",") if t.strip()] if args.allow else None,
            timeout_s=args.timeout or 30.0, cwd=args.cwd)
    except ValidationError as exc:
        raise ConfigError("; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors())) from exc
    agent = Agent.load(args.name, with_model=False)
    try:
        servers = [s for s in agent.settings.mcp_servers if s.name != spec.name]
        replaced = len(servers) < len(agent.settings.mcp_servers)
        agent.update_settings(mcp_servers=[*servers, spec])
        agent.save()
    finally:
        agent.close()
    print(f'{"Replaced" if replaced else "Added"} MCP server "{spec.name}" ({spec.transport}: {spec.where()}) for '
          f'{args.name}; its tools are offered as {spec.name}__TOOL from the next turn. '
          f"See them with: agentos mcp list {args.name} --tools")
    return 0


def cmd_remove(args: argparse.Namespace) -> int:
    """`mcp remove NAME SERVER`."""
    agent = Agent.load(args.name, with_model=False)
    try:
        find_server(agent.settings.mcp_servers, args.server)
        agent.update_settings(mcp_servers=[s for s in agent.settings.mcp_servers if s.name != args.server])
        agent.save()
    finally:
        agent.close()
    print(f'Removed MCP server "{args.server}" from {args.name}.')
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    """`mcp list NAME [--tools]`: the agent's servers; with --tools, each is started and its tools listed."""
    agent = Agent.load(args.name, read_only=True, with_model=False)
    try:
        servers = agent.settings.mcp_servers
        taken = {t.name for t in agent.tools}
    finally:
        agent.close()
    if not servers:
        print(f"{args.name} has no MCP servers. Add one with: agentos mcp add {args.name} SERVER --stdio \"CMD\"")
        return 0
    for spec in servers:
        extra = [f"env {', '.join(f'{k}<-${v}' for k, v in spec.env.items())}" if spec.env else "",
                 f"headers {', '.join(spec.headers)}" if spec.headers else "",
                 f"allow {', '.join(spec.allow)}" if spec.allow is not None else "", f"timeout {spec.timeout_s:g} s"]
        print(f"{spec.name}  {spec.transport}: {spec.where()}  ({'; '.join(e for e in extra if e)})")
        if args.tools:
            _show_tools(spec, taken)
    return 0


def _show_tools(spec: McpServerSpec, taken: set[str]) -> None:
    box = McpToolbox([spec], data_home() / "logs")
    try:
        tools, notices = box.offer(set(taken))
    finally:
        box.close()
    for tool in tools:
        print(f"    {tool.name}: {tool.description.splitlines()[0] if tool.description else ''}")
    for line in notices:
        print(f"    ! {line}")


def cmd_serve(args: argparse.Namespace) -> int:
    """`mcp serve NAME [--read-only] [--http [HOST:]PORT]`: the agent's memory as an MCP server on stdin/stdout, or
    over streamable HTTP behind the key in $AGENTOS_MCP_KEY."""
    if args.http is not None:
        key = server_key()
        host, port = address(args.http)
        memory = MemoryServer(MemoryGate(args.name), read_only=args.read_only)
        print(f"Serving {args.name}'s memory over MCP at http://{host}:{port}/mcp (clients send "
              f"Authorization: Bearer $AGENTOS_MCP_KEY); Ctrl-C stops.", file=sys.stderr, flush=True)
        try:
            anyio.run(serve_http, memory, host, port, key)
        except KeyboardInterrupt:
            pass
        return 0
    if sys.stdin.isatty():
        print(f"agentos mcp serve {args.name}: an MCP server speaking on stdin/stdout. Start it from an MCP client "
              f"(see the README, \"MCP\"); press Ctrl-C to stop.", file=sys.stderr)
    try:
        serve(args.name, read_only=args.read_only)
    except KeyboardInterrupt:
        return 0
    return 0
