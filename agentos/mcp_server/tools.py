"""The tools the memory server offers: the agent's own memory tools (the same schemas, rules and errors, with
edits logged as made by the MCP client), the blocks to read, and remember-this."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentos.agent.agent import Agent
from agentos.errors import AgentOSError
from agentos.mcp_server.gate import MemoryGate
from agentos.memory.archival import ArchivalTier
from agentos.messages import Message, ToolCall, new_id

READS = ("conversation_search", "archival_search", "fact_search")  # the agent's own tools that only read
WRITES = ("core_memory_append", "core_memory_replace", "archival_insert")  # and those that write

BLOCKS_SCHEMA: dict[str, Any] = {"type": "object", "additionalProperties": False, "properties": {
    "label": {"type": "string", "description": "only this block (default: every block)"}}}
REMEMBER_SCHEMA: dict[str, Any] = {"type": "object", "additionalProperties": False, "required": ["text"], "properties": {
    "text": {"type": "string", "description": "what the agent should remember, in a sentence or a few"}}}


@dataclass(frozen=True)
class ServedTool:
    """One tool as served: its name, description and schema, and whether it writes."""

    name: str
    description: str
    schema: dict[str, Any]
    writes: bool


@dataclass(frozen=True)
class Answer:
    """A tool's result: its text, and whether it is an error the client should see as one."""

    text: str
    is_error: bool = False


def served_tools(gate: MemoryGate, read_only: bool) -> list[ServedTool]:
    """What the server offers now (fact_search only while the agent has fact memory)."""
    def listing(agent: Agent) -> list[ServedTool]:
        own = [ServedTool(t.name, t.description, t.parameters, t.name in WRITES)
               for t in agent.tools if t.name in READS or (t.name in WRITES and not read_only)]
        blocks = ServedTool("read_memory_blocks", f'Read agent "{agent.name}"\'s core memory blocks: each one\'s '
                            f"label, text, size and limit.", BLOCKS_SCHEMA, writes=False)
        remember = ServedTool("remember", f'Tell agent "{agent.name}" something to remember: it goes through fact '
                              f"consolidation when the agent has fact memory on, else into its archival memory.",
                              REMEMBER_SCHEMA, writes=True)
        return [blocks, *own, *([] if read_only else [remember])]
    return gate.read(listing)


def call(gate: MemoryGate, tool: ServedTool, arguments: dict[str, Any], client: str) -> Answer:
    """Run `tool` for the MCP client named `client`; refusals and tool errors come back as error answers."""
    try:
        if tool.name == "read_memory_blocks":
            return gate.read(lambda agent: _blocks(agent, arguments.get("label")))
        if tool.name == "remember":
            return remember(gate, str(arguments.get("text", "")), client)
        run: Callable[[Agent], Answer] = lambda agent: _own_tool(agent, tool.name, arguments, client)
        return gate.write(run) if tool.writes else gate.read(run)
    except AgentOSError as exc:
        return Answer(str(exc), is_error=True)


def _own_tool(agent: Agent, name: str, arguments: dict[str, Any], client: str) -> Answer:
    """One of the agent's own tools, exactly as the model would call it, its edits logged as the client's."""
    call_id = f"mcp:{client}"
    outcome = agent.tools.execute(ToolCall(id=new_id("call"), name=name, arguments=json.dumps(arguments)),
                                  agent.tool_context(call_id, by="mcp"))
    return Answer(outcome.text.removeprefix("Error: ") if outcome.is_error else outcome.text, outcome.is_error)


def _blocks(agent: Agent, label: str | None) -> Answer:
    blocks = [agent.block(label)] if label else agent.blocks
    agent.note_read("core memory", len(blocks), target=label or "")
    return Answer(json.dumps([{"label": b.label, "value": b.value, "chars": len(b.value), "limit": b.limit,
                               "read_only": b.read_only} for b in blocks], ensure_ascii=False, indent=1))


def remember(gate: MemoryGate, text: str, client: str) -> Answer:
    """The text through fact consolidation when fact memory is on (saved to the conversation first, so nothing is
    lost if the model fails), else into archival memory."""
    if not text.strip():
        return Answer("there is nothing to remember: text is empty.", is_error=True)
    if gate.read(lambda agent: agent.settings.facts.mode != "off"):
        return gate.write(lambda agent: _consolidate(agent, text, client), with_model=True)
    return gate.write(lambda agent: _archive(agent, text, client))


def _consolidate(agent: Agent, text: str, client: str) -> Answer:
    agent.add_history([Message.user(f"(told through MCP by {client}) {text}")])
    try:
        report = agent.consolidate()
    except AgentOSError as exc:
        return Answer(f"Saved to the conversation; consolidating it into facts failed for now ({exc}). It is "
                      f"consolidated when the agent next runs.")
    return Answer(f"Remembered: consolidated into facts ({report.summary()}).")


def _archive(agent: Agent, text: str, client: str) -> Answer:
    done = agent.tier(ArchivalTier).insert(text, tags=["mcp"], source=f"mcp:{client}")
    if not done.ids:
        return Answer("Already in archival memory; nothing new was stored.")
    return Answer(f"Remembered in archival memory: {len(done.ids)} passage(s) ({', '.join(done.ids)}).")
