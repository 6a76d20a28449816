"""What a call to an agent's memory over MCP costs: the SDK's client against a real `agentos mcp serve` process.

    python benchmarks/mcp_memory_server.py [--calls 30]

Prints the server's start (until its tools are listed), then the median and p95 of a read (read_memory_blocks),
a search (conversation_search over 2,000 messages) and a write (core_memory_append, which takes the agent's lease,
saves and gives it back), and an agent's turn that calls a tool of that server (scripted model, so the figure is
agentos's and MCP's own).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from agentos import Agent
from agentos.messages import Message
from agentos.providers import ScriptedProvider, Step
from agentos.tools.mcp.servers import McpServerSpec


def pct(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))]


async def measure(calls: int) -> None:
    params = StdioServerParameters(command=sys.executable, args=["-m", "agentos.cli", "mcp", "serve", "bob"],
                                   env={"AGENTOS_HOME": os.environ["AGENTOS_HOME"]})
    started = time.perf_counter()
    async with Client(stdio_client(params), read_timeout_seconds=120) as client:
        await client.list_tools()
        print(f"start and list tools: {time.perf_counter() - started:.2f} s", flush=True)
        cases = [("read_memory_blocks", lambda i: {}), ("conversation_search", lambda i: {"query": "tea garden"}),
                 ("core_memory_append", lambda i: {"label": "human", "content": f"fact {i}"})]
        for tool, arguments in cases:
            times = []
            for i in range(calls):
                t = time.perf_counter()
                result = await client.call_tool(tool, arguments(i))
                times.append((time.perf_counter() - t) * 1000)
                assert not result.is_error, result.content
            print(f"{tool:<22} median {statistics.median(times):7.1f} ms   p95 {pct(times, .95):7.1f} ms", flush=True)


def turn_through_mcp(turns: int) -> None:
    spec = McpServerSpec(name="bob", command=[sys.executable, "-m", "agentos.cli", "mcp", "serve", "bob"],
                         env={"AGENTOS_HOME": "AGENTOS_HOME"})
    script = [item for _ in range(turns + 1) for item in (Step(tool_calls=[("bob__read_memory_blocks", {})]), "ok")]
    alice = Agent.create("alice", provider=ScriptedProvider(script))
    alice.update_settings(mcp_servers=[spec])
    t = time.perf_counter()
    list(alice.turn("warm up"))
    print(f"first turn (starts bob's server): {time.perf_counter() - t:.2f} s")
    times = []
    for _ in range(turns):
        t = time.perf_counter()
        list(alice.turn("what does bob know?"))
        times.append((time.perf_counter() - t) * 1000)
    print(f"a turn calling bob__read_memory_blocks: median {statistics.median(times):.1f} ms, p95 {pct(times, .95):.1f} ms")
    alice.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=30)
    args = parser.parse_args()
    os.environ["AGENTOS_HOME"] = tempfile.mkdtemp(prefix="agentos-mcp-bench-")
    bob = Agent.create("bob", model="scripted/demo")
    bob.add_history([Message.user(f"message {i} about the tea garden") for i in range(2000)])
    bob.close()
    print(f"agentos mcp serve, {args.calls} calls per tool, {os.cpu_count()} CPUs, home {Path(os.environ['AGENTOS_HOME'])}")
    asyncio.run(measure(args.calls))
    turn_through_mcp(args.calls)


if __name__ == "__main__":
    main()
