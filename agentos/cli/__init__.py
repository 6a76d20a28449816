"""The `agentos` command: a thin layer over the library, its commands declared in `agentos.commands.table`. Each
handler is imported only when its command runs, so that starting is cheap."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from agentos.actors import acting_as
from agentos.cli.parser import build_parser
from agentos.commands.spec import Command
from agentos.errors import AgentOSError, show_damage_warnings

__all__ = ["build_parser", "main", "run", "show_damage_warnings", "tolerant_streams"]


def tolerant_streams() -> None:
    """Undecodable input becomes U+FFFD and unprintable output a replacement, instead of ending the command
    (a pasted binary, a terminal in another encoding, a C locale)."""
    for stream, errors in ((sys.stdin, "replace"), (sys.stdout, "replace"), (sys.stderr, "backslashreplace")):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors=errors)
            except (ValueError, OSError):  # a stream that cannot change (a test's capture, a closed pipe)
                pass


def run(command: Command, args: argparse.Namespace) -> int:
    """Run one command of the table: a CLI command on its arguments, an agent command on the agent named (the user
    acting, for the audit log, as `agentos COMMAND ACTION`)."""
    words = [getattr(args, "command", None) or command.name, getattr(args, "action", None)]
    with acting_as("user", " ".join(["agentos", *(w for w in words if isinstance(w, str))])):
        if command.opens:
            return int(importlib.import_module("agentos.cli.running").run_on_agent(command, args))
        return int(command.run()(args))


def main(argv: list[str] | None = None) -> int:
    tolerant_streams()
    show_damage_warnings()
    parser = build_parser()
    args = parser.parse_args(argv)
    command: Command | None = getattr(args, "entry", None)
    if command is None:
        parser.print_help()
        return 0
    try:
        return run(command, args)
    except BrokenPipeError:  # the reader went away (`agentos show sam | head -1`): not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so that the interpreter's own flush at exit is quiet too
        return 0
    except AgentOSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - never a traceback for the user
        if os.environ.get("AGENTOS_DEBUG"):
            raise
        print(f"error: unexpected {type(exc).__name__}: {exc} (set AGENTOS_DEBUG=1 for details)", file=sys.stderr)
        return 1
