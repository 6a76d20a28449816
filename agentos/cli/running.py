"""Running an agent command from the CLI: the agent named is opened as the command says, handed to the handler
with a console that prints, and closed."""

from __future__ import annotations

import argparse
from typing import Any

from agentos.agent.agent import Agent
from agentos.commands.console import PrintConsole
from agentos.commands.spec import Command


def open_for(command: Command, name: str) -> Agent:
    """The agent an agent command runs on, opened as the command says."""
    if command.opens == "read":
        return Agent.load(name, read_only=True, with_model=False)
    if command.opens == "write":
        return Agent.load(name, with_model=False)
    return Agent.load(name)


def run_on_agent(command: Command, args: argparse.Namespace) -> int:
    """Open the agent, run the handler on it, close it; the handler's exit code (0 when it returns none)."""
    handler: Any = command.run()
    agent = open_for(command, args.name)
    try:
        return int(handler(agent, PrintConsole(), args) or 0)
    finally:
        agent.close()
