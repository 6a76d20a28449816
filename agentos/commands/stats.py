"""`stats`: an agent's numbers in a few lines (messages, context, core memory, archival, facts, restore points),
read through the library's public calls only."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from agentos.commands.console import Console
from agentos.memory.archival import ArchivalTier
from agentos.memory.facts.tier import FactTier

if TYPE_CHECKING:
    from agentos.agent.agent import Agent

LABEL_WIDTH = 20


def _row(label: str, value: str) -> str:
    return f"  {label:<{LABEL_WIDTH}}{value}"


def stats_lines(agent: Agent) -> list[str]:
    """The agent's numbers, one per line."""
    context = agent.context_breakdown()
    share = 100 * context["total"] / context["window"] if context["window"] else 0
    lines = [f'Stats of "{agent.name}" ({agent.model})',
             _row("messages", f"{agent.state.message_count:,} in all, {len(agent.context):,} in context"),
             _row("context", f"{context['total']:,} of {context['window']:,} tokens ({share:.0f}%)"),
             "  core memory"]
    lines += [_row(f"  [{b.label}]", f"{len(b.value):,}/{b.limit:,} chars") for b in agent.blocks]
    lines.append(_row("archival", f"{agent.tier(ArchivalTier).count():,} passage(s)"))
    facts = agent.tier(FactTier)
    if facts.in_use:
        lines.append(_row("facts", f"{facts.count_current():,} current"))
    lines.append(_row("restore points", f"{len(agent.restore_points()):,}"))
    return lines


def show_stats(agent: Agent, console: Console, args: argparse.Namespace) -> int:
    """Say the agent's numbers."""
    console.say("\n".join(stats_lines(agent)))
    return 0
