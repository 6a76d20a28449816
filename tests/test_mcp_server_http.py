"""`agentos mcp serve NAME --http PORT`: the memory server over streamable HTTP, behind the key, with the `mcp` SDK's
client in this process and the server in its own."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.processes import REPO, agentos, env_for, free_port, wait_for_port

KEY = "k" * 24


@pytest.fixture
def served(agentos_home: Path) -> Iterator[str]:
    assert agentos(agentos_home, "new", "sam", "--model", "scripted/demo").returncode == 0
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "agentos.cli", "mcp", "serve", "sam", "--http", str(port)],
                               cwd=REPO, env={**env_for(agentos_home), "AGENTOS_MCP_KEY": KEY},
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wait_for_port(port, process)
    yield f"http://127.0.0.1:{port}/mcp"
    process.terminate()
    process.wait(20)


def call(url: str, key: str, tool: str, arguments: dict[str, Any]) -> Any:
    async def session() -> Any:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {key}"})
        async with Client(streamable_http_client(url, http_client=http), read_timeout_seconds=60) as client:
            return await client.call_tool(tool, arguments)
    return asyncio.run(session())


def test_the_memory_server_over_http_takes_the_key_and_nothing_else(served: str, agentos_home: Path) -> None:
    done = call(served, KEY, "core_memory_append", {"label": "human", "content": "Over HTTP."})
    assert not done.is_error and done.content[0].text.startswith('Appended to block "human"')
    assert "Over HTTP." in agentos(agentos_home, "show", "sam").stdout
    assert httpx2.post(served, json={}, headers={"Authorization": "Bearer wrong-key-wrong-key"}).status_code == 401
    assert httpx2.post(served, json={}).status_code == 401


def test_serving_over_http_without_a_key_is_refused_with_how_to_make_one(agentos_home: Path) -> None:
    assert agentos(agentos_home, "new", "sam", "--model", "scripted/demo").returncode == 0
    done = agentos(agentos_home, "mcp", "serve", "sam", "--http", "0")
    assert done.returncode == 1
    assert "needs a key of at least 16 characters in $AGENTOS_MCP_KEY" in done.stderr
