"""What a command's handler talks to: say a line, ask yes or no, show progress, ask the front end for something.
The CLI prints (`PrintConsole`); the REPL and the TUI collect an `Outcome` and show it their way."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Literal, Protocol, TextIO

Style = Literal["info", "error"]
Request = Literal["exit", "memory"]  # leave the session; show the memory pane


class Console(Protocol):
    """Where a handler's output goes."""

    def say(self, text: str, style: Style = "info") -> None: ...

    def confirm(self, question: str) -> bool: ...

    def progress(self, what: str, done: int, total: int) -> None: ...

    def request(self, what: Request) -> None: ...


def progress_bar(what: str, done: int, total: int) -> None:
    """A progress bar on stderr, redrawn in place; the line ends when `done` reaches `total`. Where stderr is no
    terminal (a pipe, a log file) no frames are drawn: one plain line says each part done."""
    if not sys.stderr.isatty():
        if done >= total:
            sys.stderr.write(f"{what}: {done:,}/{total:,} done\n")
            sys.stderr.flush()
        return
    width = 30
    filled = width * done // total if total else width
    sys.stderr.write(f"\r{what:<18} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
    if done >= total:
        sys.stderr.write("\n")
    sys.stderr.flush()


class PrintConsole:
    """The CLI's console: lines on stdout, progress on stderr, a y/N question on a terminal (no without one)."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out

    def say(self, text: str, style: Style = "info") -> None:
        print(text, file=self.out or sys.stdout)

    def confirm(self, question: str) -> bool:
        if not sys.stdin.isatty():
            return False
        return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")

    def progress(self, what: str, done: int, total: int) -> None:
        progress_bar(what, done, total)

    def request(self, what: Request) -> None:
        """Nothing to do: a CLI command ends by itself and shows no pane."""


@dataclass
class Outcome:
    """What a command produced, kept to be shown: lines (text, style), and whether to leave or show the memory pane."""

    lines: list[tuple[str, Style]] = field(default_factory=list)
    exit: bool = False
    memory: bool = False

    def say(self, text: str, style: Style = "info") -> Outcome:
        self.lines.append((text, style))
        return self

    def confirm(self, question: str) -> bool:
        """No one to ask inside a session's command: no."""
        return False

    def progress(self, what: str, done: int, total: int) -> None:
        """Not shown: the front end shows that the command is running."""

    def request(self, what: Request) -> None:
        if what == "exit":
            self.exit = True
        else:
            self.memory = True
