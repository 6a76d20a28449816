"""The command palette (Ctrl-P): the table's commands offered there, each bound to the app's dialog for it or run
as its slash command; then the TUI's own entries (switching agent, each block's edit and history)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Protocol

from textual.app import SystemCommand
from textual.markup import escape

from agentos.agent.agent import Agent
from agentos.commands.spec import offered
from agentos.commands.table import COMMANDS


class Host(Protocol):
    """What the palette's entries call on the app."""

    agent: Agent

    def action_pick_agent(self) -> None: ...

    def action_edit_block(self, label: str) -> None: ...

    def action_block_history(self, label: str) -> None: ...

    def command(self, line: str) -> None: ...

DIALOGS = {  # a command's path in the table -> the app's action that asks for its arguments in a dialog
    "new": "action_new_agent", "archival search": "action_search_archival", "recall search": "action_search_recall",
    "facts list": "action_facts", "export": "action_export", "rewind": "action_rewind",
}


def palette_entries(app: Host, facts_shown: bool) -> Iterator[SystemCommand]:
    """Every palette entry for the agent the app shows (Facts only while its fact memory is in use)."""
    yield SystemCommand("Switch agent", "Open another agent, or create one", app.action_pick_agent)
    for path, command in offered(COMMANDS, "palette"):
        if command.only_with_facts and not facts_shown:
            continue
        run = _binding(app, path, command.slash_name if "slash" in command.where else "")
        if run is not None:
            yield SystemCommand(command.title or command.name, command.palette_help or command.help, run)
    for block in app.agent.blocks:
        label = block.label
        yield SystemCommand(f"Edit block: {label}", escape(f"Edit [{label}] by hand (logged as your edit)"),
                            lambda label=label: app.action_edit_block(label))
        yield SystemCommand(f"Block history: {label}", escape(f"Every edit of [{label}] as a diff"),
                            lambda label=label: app.action_block_history(label))


def _binding(app: Host, path: str, slash: str) -> Callable[[], object] | None:
    """What choosing a command does: its dialog, else its slash command; None when the TUI has neither."""
    action = DIALOGS.get(path)
    if action is not None:
        return getattr(app, action)
    if slash:
        return lambda: app.command(slash)
    return None
