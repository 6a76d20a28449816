"""The slash commands of the line REPL and the TUI: the table's commands offered there, one help text, one way to
run them."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from agentos.commands.console import Outcome
from agentos.commands.spec import Command, offered
from agentos.commands.table import COMMANDS

if TYPE_CHECKING:
    from agentos.agent.agent import Agent


def _by_name() -> dict[str, Command]:
    """Each slash name (and alias) with its command."""
    found: dict[str, Command] = {}
    for command in slash_commands():
        found[command.slash_name] = command
        found.update({f"/{alias}": command for alias in command.aliases})
    return found


def slash_commands() -> list[Command]:
    """The commands the REPL and the TUI offer as /name, in the table's order."""
    return [command for _, command in offered(COMMANDS, "slash")]


def help_text(keys: str) -> str:
    """The commands, then the front end's own keys (for example how to cancel a reply)."""
    lines = ["Commands:", *(f"  {c.slash_name:<12}{c.help}" for c in slash_commands()), keys]
    return "\n".join(lines)


def find(line: str) -> Command | None:
    """The command a slash line names, if there is one."""
    return _by_name().get(line.split()[0].lower())


def runs_long(line: str) -> bool:
    """Whether the command asks the model (the TUI runs it in a worker so that the screen never freezes)."""
    command = find(line)
    return command is not None and command.opens == "model"


def run_command(agent: Agent, line: str, *, keys: str, busy: bool = False) -> Outcome:
    """Run one slash command against `agent` (`busy`: a reply is in progress, so only quick reads run)."""
    name = line.split()[0].lower()
    command = find(line)
    if command is None:
        return Outcome().say(f"unknown command {name}. {help_text(keys)}", "error")
    if busy and not command.busy_ok:
        return Outcome().say(f"(wait for the reply, or cancel it, before {name})")
    out = Outcome()
    command.run()(agent, out, argparse.Namespace(name=agent.name, keys=keys))
    return out
