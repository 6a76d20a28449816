"""The handlers of the commands every session has: core memory, the context window, compacting, help and leaving.
Each is `handler(agent, console, args)`, so the CLI, the REPL and the TUI run the same one."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from agentos.commands.console import Console
from agentos.commands.slash import help_text
from agentos.errors import AgentOSError
from agentos.formatting import format_blocks, format_context
from agentos.presenter import event_line

if TYPE_CHECKING:
    from agentos.agent.agent import Agent


def show_blocks(agent: Agent, console: Console, args: argparse.Namespace) -> int:
    """Every core memory block with its size and limit (the TUI shows its memory pane instead)."""
    console.request("memory")
    console.say(format_blocks(agent.blocks))
    return 0


def show_context(agent: Agent, console: Console, args: argparse.Namespace) -> int:
    """What fills the context window, by part."""
    console.say(format_context(agent.context_breakdown()))
    return 0


def summarize_now(agent: Agent, console: Console, args: argparse.Namespace) -> int:
    """Compact now and say what the pager did (a failure is said, and the session goes on)."""
    try:
        events = agent.compact()
    except AgentOSError as exc:
        console.say(f"error: {exc}", "error")
        return 0
    for event in events:
        told = event_line(event)
        if told is not None:
            console.say(told[0])
    return 0


def show_help(agent: Agent, console: Console, args: argparse.Namespace) -> int:
    """The slash commands, then the front end's own keys."""
    console.say(help_text(getattr(args, "keys", "")))
    return 0


def leave(agent: Agent, console: Console, args: argparse.Namespace) -> int:
    """End the session (the agent is saved after every step)."""
    console.request("exit")
    return 0
