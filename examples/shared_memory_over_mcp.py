"""One agent uses another agent's memory over MCP: `bob`'s memory is served by `agentos mcp serve bob`, and `alice`
reads it and adds to it through the tools that server offers (as bob__read_memory_blocks, ...).

    python examples/shared_memory_over_mcp.py

Offline: alice's model is scripted here, so the run needs no API key; with a real model the same tools are offered
and the model chooses when to call them. Run it again and bob's memory has grown.
"""

from __future__ import annotations

import os
import sys

from agentos import Agent
from agentos.errors import AgentNotFoundError
from agentos.events import Notice, ToolCallFinished, TurnFinished
from agentos.providers import ScriptedProvider, Step
from agentos.tools.mcp.servers import McpServerSpec


def open_or_create(name: str, **options: str) -> Agent:
    try:
        return Agent.load(name, with_model=False)
    except AgentNotFoundError:
        return Agent.create(name, **options)


bob = open_or_create("bob", model="scripted/demo", human="The user is Ada. She keeps bees.")
bob.close()  # bob's memory server opens bob itself, one call at a time

alice_script = [
    Step(tool_calls=[("bob__read_memory_blocks", {"label": "human"})]),
    Step(tool_calls=[("bob__core_memory_append", {"label": "human", "content": "Alice says: Ada's hives are in Kent."})]),
    "Bob's memory says Ada keeps bees; I added where her hives are.",
]
alice = Agent.create("alice-reader", provider=ScriptedProvider(alice_script))
# A stdio server gets only a few of our environment variables (PATH, HOME, ...): pass on where the agents live.
home = {"AGENTOS_HOME": "AGENTOS_HOME"} if "AGENTOS_HOME" in os.environ else {}
bobs_memory = McpServerSpec(name="bob", command=[sys.executable, "-m", "agentos.cli", "mcp", "serve", "bob"], env=home)
alice.update_settings(mcp_servers=[bobs_memory])
for event in alice.turn("What does Bob know about Ada? Add where her hives are."):
    if isinstance(event, Notice):
        print(f"[notice] {event.text}")
    elif isinstance(event, ToolCallFinished):
        print(f"[{event.name}] {' '.join(event.result.split())[:100]}")
    elif isinstance(event, TurnFinished):
        print(f"alice: {event.reply.content}")
alice.close()
Agent.delete("alice-reader")

bob = Agent.load("bob", read_only=True)
print(f"bob's human block now: {bob.block('human').value!r}")
print(f"bob's last edit was made by: {bob.memory_edits()[-1].by} ({bob.memory_edits()[-1].tool_call_id})")
bob.close()
