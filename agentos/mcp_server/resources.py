"""The memory server's resources: each core memory block, and the agent's current facts, by URI; and which of them
a new saved revision changed (for change notifications)."""

from __future__ import annotations

from dataclasses import dataclass

from agentos.agent.agent import Agent
from agentos.blocks import Block
from agentos.errors import AgentOSError
from agentos.memory.facts.tier import FactTier

SCHEME = "agentos"
FACTS_SHOWN = 500  # the most facts the facts resource lists (newest first)


@dataclass(frozen=True)
class Listed:
    """One resource as listed: its URI, name and description."""

    uri: str
    name: str
    description: str


def block_uri(agent: str, label: str) -> str:
    return f"{SCHEME}://{agent}/blocks/{label}"


def facts_uri(agent: str) -> str:
    return f"{SCHEME}://{agent}/facts"


def listed(agent: Agent) -> list[Listed]:
    """Every block, then the facts."""
    blocks = [Listed(block_uri(agent.name, b.label), f"{b.label} block",
                     f'Core memory block "{b.label}" of agent "{agent.name}" ({len(b.value):,} of {b.limit:,} '
                     f"characters){' (read-only)' if b.read_only else ''}.") for b in agent.blocks]
    facts = Listed(facts_uri(agent.name), "facts", f'The current facts of agent "{agent.name}", newest first.')
    return [*blocks, facts]


def read(agent: Agent, uri: str) -> str:
    """The text of the resource at `uri`; AgentOSError for a URI this agent has no resource at."""
    if uri == facts_uri(agent.name):
        return _facts_text(agent)
    prefix = block_uri(agent.name, "")
    if uri.startswith(prefix):
        label = uri[len(prefix):]
        value = agent.block(label).value
        agent.note_read("core memory", 1, target=label)
        return value
    raise AgentOSError(f"no resource {uri}: this server has {', '.join(r.uri for r in listed(agent))}")


def _facts_text(agent: Agent) -> str:
    tier = agent.tier(FactTier)
    if not tier.in_use:
        return f'Agent "{agent.name}" has no fact memory (turn it on with: agentos facts {agent.name} on).'
    facts = tier.listing()[:FACTS_SHOWN]
    agent.note_read("facts", len(facts))
    if not facts:
        return "No facts yet."
    return "\n".join(f"- {f.text} ({f.subject}, since {f.valid_from:%Y-%m-%d}, {f.id})" for f in facts)


def changed_uris(agent: str, before: tuple[Block, ...] | None, after: tuple[Block, ...]) -> list[str]:
    """The block URIs whose text differs between two saved revisions (every block when `before` is unknown is
    not a change: nothing was being watched)."""
    if before is None:
        return []
    old = {b.label: b.value for b in before}
    return [block_uri(agent, b.label) for b in after if old.get(b.label) != b.value]
