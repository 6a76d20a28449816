"""The `agentos` argument parser, built from the command table: each command and action with its arguments and
help, and the argument types the table names."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from agentos.commands.spec import Command
from agentos.commands.table import COMMANDS
from agentos.version import __version__


def positive(text: str) -> int:
    """An argparse type: a whole number above zero."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{value} must be above zero")
    return value


def count_above_zero(text: str) -> int:
    """An argparse type: a whole number from 1 (a negative one is said to be below 0)."""
    value = count(text)
    if value == 0:
        raise argparse.ArgumentTypeError("0 must be above zero")
    return value


def count(text: str, why: str = "") -> int:
    """An argparse type: a whole number from 0 (`why` follows the error for a negative one)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is below 0{why}")
    return value


def page_number(text: str) -> int:
    """An argparse type: a page number, from 0."""
    return count(text, " (pages start at 0)")


def fraction(text: str) -> float:
    """An argparse type: a number from 0 to 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{value:g} is not between 0 and 1")
    return value


def seconds(text: str) -> float:
    """An argparse type: a number of seconds above zero."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{value:g} must be above zero")
    return value


ARG_TYPES: dict[str, Callable[[str], Any]] = {
    "int": int, "positive": positive, "count": count, "count_above_zero": count_above_zero, "page": page_number,
    "fraction": fraction, "seconds": seconds,
}


def add_arguments(parser: argparse.ArgumentParser, command: Command) -> None:
    """The command's own arguments (those sharing a `group` are mutually exclusive)."""
    groups: dict[str, Any] = {}
    for arg in command.args:
        options = dict(arg.options)
        group = options.pop("group", None)
        if isinstance(options.get("type"), str):
            options["type"] = ARG_TYPES[options["type"]]
        target: Any = parser
        if group is not None:
            target = groups.setdefault(group, parser.add_mutually_exclusive_group())
        target.add_argument(*arg.flags, **options)


def add_command(sub: Any, command: Command, *, top: bool) -> None:
    """One command (`top`: of `agentos` itself, described by its help unless it says more) and its actions."""
    description = command.description or (command.help if top else None)
    parser = sub.add_parser(command.name, help=command.help, description=description)
    if command.handler:
        parser.set_defaults(entry=command)
    add_arguments(parser, command)
    if command.actions:
        actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
        for action in command.actions:
            if "cli" in action.where:
                add_command(actions, action, top=False)


def build_parser() -> argparse.ArgumentParser:
    """`agentos`'s parser: every command of the table that the CLI offers."""
    parser = argparse.ArgumentParser(
        prog="agentos",
        description="Agents that manage their own memory. Data lives in $AGENTOS_HOME.",
    )
    parser.add_argument("--version", action="version", version=f"agentos {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        if "cli" in command.where:
            add_command(sub, command, top=True)
    return parser
