"""The line REPL behind `agentos chat`: streams replies and shows tool calls and memory edits compactly; between
turns, what background fact consolidation did since the last prompt."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, TextIO

from agentos.commands.slash import help_text, run_command
from agentos.config import data_home
from agentos.events import Event, FactsNotice, MemoryEdited, Retrying, ToolCallFinished, ToolCallStarted, TurnFailed
from agentos.formatting import describe_edit, short
from agentos.presenter import Kind, fact_change_line, fact_notice_line, present

if TYPE_CHECKING:
    from agentos.agent.agent import Agent

KEYS = "Ctrl-C cancels a reply in progress; Ctrl-D leaves."
HELP = help_text(KEYS)
HISTORY_FILE = "repl_history"  # in the agentos data home
HISTORY_LENGTH = 1000  # input lines kept in it


def history_path() -> Path:
    """Where the REPL keeps the lines typed into it, across sessions: `repl_history` in the data home."""
    return data_home() / HISTORY_FILE


def _readline() -> ModuleType | None:
    """The stdlib `readline` module, or None where this Python has none (Windows)."""
    try:
        import readline
    except ImportError:
        return None
    return readline


def _no_history() -> None:
    """Saves nothing: what `setup_line_editing` returns when there is no line editing."""


def setup_line_editing(path: Path | None = None) -> Callable[[], None]:
    """Turn on line editing for `input()` and load the input history from `path`; returns what saves it.

    This is the standard library's `readline`, so line editing adds no dependency. Where it is missing, or the
    history file cannot be read (a first session, permissions), the REPL carries on without; never an error.
    """
    readline = _readline()
    if readline is None:
        return _no_history
    where = path or history_path()
    readline.set_history_length(HISTORY_LENGTH)  # the file keeps the newest lines when written
    try:
        readline.read_history_file(where)
    except (OSError, ValueError):
        pass  # no history yet, or none that can be read: start with an empty one

    def save() -> None:
        save_history(readline, where)

    return save


def save_history(readline: ModuleType, path: Path) -> None:
    """Write the input history to `path`, its newest HISTORY_LENGTH lines; a file that cannot be written is skipped."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        readline.set_history_length(HISTORY_LENGTH)
        readline.write_history_file(path)
    except (OSError, ValueError):
        pass  # the history is a convenience: losing it must not fail the session


class Repl:
    """Reads lines, runs turns and prints their events."""
    def __init__(
        self,
        agent: Agent,
        read: Callable[[str], str] = input,
        out: TextIO | None = None,
    ) -> None:
        self.agent = agent
        self.read = read
        self.out = out or sys.stdout
        self.ended: str | None = None  # why the session ended early (the agent was deleted or taken over)
        self.streaming = False  # a reply is being written on the current line
        self.gone = False  # the output was closed (`agentos chat sam | head -3`): turns finish, nothing more prints
        # With piped input nothing echoes what was read: the REPL writes it after the prompt itself, so that the
        # transcript reads `you> line`, then the reply on a line of its own.
        self.piped = self.echo = read is input and not sys.stdin.isatty()
        self.failures = 0  # turns that failed: piped, any of them makes the exit status 1

    def write(self, text: str = "", end: str = "\n") -> None:
        """Print; once the reader has gone away, print nothing (the turn under way still completes and is saved,
        and no further line is read)."""
        if self.gone:
            return
        try:
            self.out.write(text + end)
            self.out.flush()
        except (BrokenPipeError, ValueError):  # a closed pipe, or a closed stream
            self.gone = True
            if self.out is sys.stdout:  # so that the interpreter's own flush at exit is quiet too
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())

    def run(self) -> int:
        """Chat until the user leaves or the session ends; 1 when it ended because the agent was lost, or when a turn
        failed in a piped chat (a script's `printf 'hi\n' | agentos chat sam` sees that its turn did not go through)."""
        save_history = self.line_editing()
        self.write(f'Chatting with "{self.agent.name}" ({self.agent.model}). /help for commands.')
        try:
            self.loop()
        finally:
            save_history()
            self.agent.close()
        self.show_news()  # what the batch under way at the end made (closing let it finish)
        return 1 if self.ended or (self.piped and self.failures) else 0

    def line_editing(self) -> Callable[[], None]:
        """Line editing and history for a person typing at a terminal; nothing for piped input or a test's `read`."""
        if self.read is input and sys.stdin.isatty():
            return setup_line_editing()
        return _no_history

    def loop(self) -> None:
        """Read lines and answer them until the user leaves or the session ends."""
        while self.ended is None and not self.gone:
            self.show_news()
            try:
                line = self.read("you> ")
                if self.echo:
                    self.write(line)
            except EOFError:
                self.write()
                break
            except KeyboardInterrupt:
                self.write("\n(/exit or Ctrl-D to leave)")
                continue
            line = line.strip()
            if not line:
                continue
            if line.startswith("/"):
                if self.command(line):
                    break
                continue
            self.take_turn(line)

    def show_news(self) -> None:
        """Print the background news since the last prompt (what fact consolidation did), as turn events are."""
        try:
            for event in self.agent.idle():
                self.show(event)
        except Exception:  # noqa: BLE001 - the news is a nicety; the chat goes on without it
            pass

    def command(self, line: str) -> bool:
        """Run a slash command; True when it asks to leave."""
        outcome = run_command(self.agent, line, keys=KEYS)
        for text, _ in outcome.lines:
            self.write(text)
        return outcome.exit

    def take_turn(self, text: str) -> None:
        """Run one turn, printing its events; Ctrl-C cancels it. The reply always ends its own line."""
        events = self.agent.turn(text)
        self.streaming = False
        try:
            for event in events:
                self.show(event)
        except KeyboardInterrupt:
            events.close()
            self.streaming = False
            self.write("\n(cancelled; the agent is saved and ready)")
        finally:
            self.reply_end()

    def show(self, event: Event) -> None:
        """Print one event: reply text as it streams, everything else on a line of its own."""
        present(event, self)

    # -- the presenter's view: how each kind of event prints -------------------------------------

    def reply_text(self, text: str) -> None:
        if not self.streaming:
            self.write(f"{self.agent.name}> ", end="")
        self.streaming = True
        self.write(text, end="")

    def reply_end(self) -> None:
        """End the line a streamed reply is on, so that what comes next starts a line of its own."""
        if self.streaming:
            self.streaming = False
            self.write()

    def retry_over(self) -> None:
        """Nothing to take back: a retry was one line."""

    def tool_started(self, event: ToolCallStarted) -> None:
        self.write(f"  → {event.name}({short(event.arguments, 70)})")

    def tool_finished(self, event: ToolCallFinished) -> None:
        if event.is_error:
            self.write(f"  ✗ {short(event.result, 100)}")

    def memory_edited(self, event: MemoryEdited) -> None:
        self.write(f"  {describe_edit(event)}")

    def retrying(self, event: Retrying, text: str) -> None:
        if event.remaining == event.wait:  # once per retry, not every tick of its countdown
            self.write(f"  ! {text}")

    def line(self, text: str, kind: Kind) -> None:
        self.write(f"  {text}")

    def failed(self, event: TurnFailed, text: str, ends_session: bool) -> None:
        self.failures += 1
        self.write(text)
        if ends_session:
            self.ended = event.error

    def facts_changed(self, lines: list[str]) -> None:
        for change in lines:
            self.write(fact_change_line(change))

    def facts_notice(self, event: FactsNotice) -> None:
        self.write(fact_notice_line(event))
