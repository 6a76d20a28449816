"""What a command is: its name, arguments, help, the handler it runs and the front ends that offer it.

Stdlib only, so that building the CLI's parser from the table imports nothing heavy; a handler is named by a
"module:function" string and imported only when its command runs."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

Where = Literal["cli", "slash", "palette"]
Opens = Literal["", "read", "write", "model"]


class Arg:
    """One argument as argparse takes it: flags, then its options (`type` names one of the CLI's argument types;
    `group` puts arguments with the same group name in one mutually exclusive group)."""

    def __init__(self, *flags: str, **options: Any) -> None:
        self.flags = flags
        self.options = options


@dataclass(frozen=True)
class Command:
    """One command, declared once.

    `handler` is "module:function". With `opens` empty it is a CLI command taking the parsed arguments and
    returning the exit code. Otherwise it is an agent command, `handler(agent, console, args) -> int | None`: the CLI
    opens the agent named by NAME that way ("read": read-only without a model, "write": held without a model,
    "model": held with its model, which may take a while), and the REPL and the TUI run it on the agent they show.
    """

    name: str
    help: str
    handler: str = ""
    args: tuple[Arg, ...] = ()
    where: frozenset[Where] = frozenset({"cli"})
    opens: Opens = ""
    busy_ok: bool = True  # may run while a reply is in progress (a quick read)
    description: str | None = None  # the CLI's longer text under `agentos NAME --help`
    actions: tuple[Command, ...] = ()  # `agentos NAME ARG ACTION ...`
    slash: str = ""  # its slash command's name when it is not `name`
    aliases: tuple[str, ...] = ()  # other slash names
    title: str = ""  # its palette entry, and the entry's help below
    palette_help: str = ""
    only_with_facts: bool = False  # offered in the palette only while fact memory is in use

    @property
    def slash_name(self) -> str:
        """`/name` as typed in the REPL and the TUI."""
        return "/" + (self.slash or self.name)

    def run(self) -> Callable[..., Any]:
        """The handler, imported now."""
        module, _, function = self.handler.partition(":")
        return getattr(importlib.import_module(module), function)


def walk(commands: tuple[Command, ...], prefix: str = "") -> Iterator[tuple[str, Command]]:
    """Every command and action with its path (`archival search`), in the table's order."""
    for command in commands:
        path = f"{prefix}{command.name}"
        yield path, command
        yield from walk(command.actions, path + " ")


def offered(commands: tuple[Command, ...], where: Where) -> list[tuple[str, Command]]:
    """The commands and actions a front end offers, with their paths, in the table's order."""
    return [(path, command) for path, command in walk(commands) if where in command.where]
