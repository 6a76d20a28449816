"""`agentos mcp serve NAME` as other applications reach it: the `mcp` SDK's own client against the real process,
its tools and resources, change notifications, the read-only mode, and the one-writer rule."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from agentos import Agent
from agentos.mcp_server.gate import MemoryGate
from agentos.mcp_server.server import MemoryServer
from agentos.providers import ScriptedProvider, Step
from agentos.providers.base import ModelRequest
from tests.processes import REPO, Chat, agentos

HUMAN = "agentos://sam/blocks/human"


def served(home: Path, *extra: str) -> Client:
    """The SDK's client of `agentos mcp serve sam` running in its own process."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "agentos.cli", "mcp", "serve", "sam", *extra],
                                   env={"AGENTOS_HOME": str(home), "LANCEDB_LOG": "error"}, cwd=str(REPO))
    return Client(stdio_client(params), read_timeout_seconds=60)


def against(client: Client, talk: Callable[[Client], Awaitable[Any]]) -> Any:
    async def session() -> Any:
        async with client:
            return await talk(client)
    return asyncio.run(session())


def text(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


@pytest.fixture
def sam(agentos_home: Path) -> Path:
    assert agentos(agentos_home, "new", "sam", "--model", "scripted/demo").returncode == 0
    return agentos_home


def test_every_tool_and_resource_over_stdio_and_an_edit_shows_in_show_and_the_log(sam: Path) -> None:
    async def talk(client: Client) -> dict[str, Any]:
        seen: dict[str, Any] = {"tools": [t.name for t in (await client.list_tools()).tools],
                                "resources": [r.uri for r in (await client.list_resources()).resources]}
        async with client.listen(resource_subscriptions=[HUMAN]) as changes:
            seen["append"] = await client.call_tool("core_memory_append", {"label": "human", "content": "Likes tea."})
            seen["event"] = await asyncio.wait_for(changes.__anext__(), 20)
        seen["replace"] = await client.call_tool("core_memory_replace", {
            "label": "human", "old_content": "Likes tea.", "new_content": "Likes green tea."})
        seen["missing"] = await client.call_tool("core_memory_replace", {
            "label": "human", "old_content": "coffee", "new_content": "x"})
        seen["blocks"] = await client.call_tool("read_memory_blocks", {"label": "human"})
        seen["human"] = await client.read_resource(HUMAN)
        seen["facts"] = await client.read_resource("agentos://sam/facts")
        seen["insert"] = await client.call_tool("archival_insert", {"content": "The spare key is under the mat."})
        seen["remember"] = await client.call_tool("remember", {"text": "Sam's cat is called Miso."})
        seen["archival"] = await client.call_tool("archival_search", {"query": "cat Miso"})
        seen["recall"] = await client.call_tool("conversation_search", {"query": "tea"})
        return seen

    seen = against(served(sam), talk)
    assert seen["tools"] == ["read_memory_blocks", "core_memory_append", "core_memory_replace", "conversation_search",
                             "archival_insert", "archival_search", "remember"]
    assert seen["resources"] == ["agentos://sam/blocks/persona", HUMAN, "agentos://sam/facts"]
    assert not seen["append"].is_error and text(seen["append"]).startswith('Appended to block "human"')
    assert seen["event"].uri == HUMAN
    assert not seen["replace"].is_error
    assert seen["missing"].is_error
    assert text(seen["missing"]) == 'old_content was not found in block "human". Copy the exact text from the block.'
    assert json.loads(text(seen["blocks"]))[0]["value"].endswith("\nLikes green tea.")
    assert seen["human"].contents[0].text.endswith("\nLikes green tea.")
    assert "has no fact memory" in seen["facts"].contents[0].text
    assert text(seen["remember"]).startswith("Remembered in archival memory: 1 passage(s)")
    assert "Sam's cat is called Miso." in text(seen["archival"])
    assert not seen["recall"].is_error
    shown = agentos(sam, "show", "sam").stdout
    assert "Likes green tea." in shown
    log = agentos(sam, "memory", "sam", "log").stdout
    assert log.count("by an MCP client (mcp)") == 2 and "+Likes green tea." in log


def test_the_read_only_server_offers_only_reads_and_refuses_a_write(sam: Path) -> None:
    async def talk(client: Client) -> tuple[list[str], Any]:
        names = [t.name for t in (await client.list_tools()).tools]
        return names, await client.call_tool("core_memory_append", {"label": "human", "content": "x"})

    names, refused = against(served(sam, "--read-only"), talk)
    assert names == ["read_memory_blocks", "conversation_search", "archival_search"]
    assert refused.is_error and 'no tool "core_memory_append" (this server is read-only)' in text(refused)
    assert "\nx" not in agentos(sam, "show", "sam").stdout


def test_while_a_chat_holds_the_agent_writes_are_refused_naming_it_and_reads_work(sam: Path) -> None:
    chat = Chat(sam, "sam")
    chat.wait_for("> ")

    async def talk(client: Client) -> tuple[Any, Any]:
        return (await client.call_tool("core_memory_append", {"label": "human", "content": "Written twice?"}),
                await client.call_tool("read_memory_blocks", {}))

    try:
        refused, read = against(served(sam), talk)
    finally:
        chat.close()
    assert refused.is_error
    assert text(refused).startswith('nothing was written: agent "sam" is in use by ')
    assert "chat sam` (pid " in text(refused) and "reads keep working" in text(refused)
    assert not read.is_error and "Written twice?" not in text(read)

    after = against(served(sam), lambda c: c.call_tool("core_memory_append", {"label": "human", "content": "Now."}))
    assert not after.is_error  # the chat gave the agent back


def test_an_edit_made_elsewhere_is_announced(sam: Path) -> None:
    async def talk(client: Client) -> Any:
        async with client.listen(resource_subscriptions=[HUMAN]) as changes:
            done = await asyncio.to_thread(agentos, sam, "memory", "sam", "set", "human", "Name: Sam.")
            assert done.returncode == 0, done.stderr
            return await asyncio.wait_for(changes.__anext__(), 20)

    assert against(served(sam), talk).uri == HUMAN


def test_remember_goes_through_fact_consolidation_when_it_is_on() -> None:
    agent = Agent.create("sam", model="scripted/demo")
    agent.update_settings(facts={"mode": "turn"})
    agent.close()
    asked: list[str] = []

    def fact_model(request: ModelRequest) -> Step:
        asked.append(request.messages[0].content)
        if request.tools and request.tools[0].name == "decide":
            return Step(tool_calls=[("decide", {"decisions": [{"candidate": 1, "action": "ADD", "reason": "new"}]})])
        return Step(tool_calls=[("record_facts", {"facts": [
            {"text": "Sam's sister Mia lives in Lisbon", "confidence": 0.9, "sources": [1]}]})])

    server = MemoryServer(MemoryGate("sam", models={"facts": ScriptedProvider(fact_model)}))

    async def talk(client: Client) -> tuple[Any, Any]:
        told = await client.call_tool("remember", {"text": "My sister Mia lives in Lisbon."})
        return told, await client.read_resource("agentos://sam/facts")

    told, facts = against(Client(server.server), talk)
    assert text(told).startswith("Remembered: consolidated into facts (1 message(s) read")
    assert facts.contents[0].text.startswith("- Sam's sister Mia lives in Lisbon (user, since ")
    assert "(told through MCP by mcp) My sister Mia lives in Lisbon." in asked[0]  # the model read the text
