"""The line REPL behind `agentos chat`: streams replies and shows tool calls and memory edits compactly."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

from agentos.commands import help_text, run_command
from agentos.events import (
    MemoryEdited,
    MessagesEvicted,
    Notice,
    ReplyIncomplete,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFailed,
)
from agentos.formatting import (
    describe_edit,
    describe_eviction,
    describe_failure,
    describe_incomplete,
    ends_session,
    short,
)

if TYPE_CHECKING:
    from agentos.agent.agent import Agent

KEYS = "Ctrl-C cancels a reply in progress; Ctrl-D leaves."
HELP = help_text(KEYS)


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

    def write(self, text: str = "", end: str = "\n") -> None:
        self.out.write(text + end)
        self.out.flush()

    def run(self) -> int:
        self.write(f'Chatting with "{self.agent.name}" ({self.agent.model}). /help for commands.')
        while self.ended is None:
            try:
                line = self.read("you> ")
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
        self.agent.close()
        return 1 if self.ended else 0

    def command(self, line: str) -> bool:
        """Run a slash command; True when it asks to leave."""
        outcome = run_command(self.agent, line, keys=KEYS)
        for text, _ in outcome.lines:
            self.write(text)
        return outcome.exit

    def take_turn(self, text: str) -> None:
        events = self.agent.turn(text)
        streaming = False
        try:
            for event in events:
                if isinstance(event, TextDelta):
                    if not streaming:
                        self.write(f"{self.agent.name}> ", end="")
                    streaming = True
                    self.write(event.text, end="")
                    continue
                if streaming:
                    self.write()
                    streaming = False
                if isinstance(event, ToolCallStarted):
                    self.write(f"  → {event.name}({short(event.arguments, 70)})")
                elif isinstance(event, ToolCallFinished) and event.is_error:
                    self.write(f"  ✗ {short(event.result, 100)}")
                elif isinstance(event, MemoryEdited):
                    self.write(f"  {describe_edit(event)}")
                elif isinstance(event, MessagesEvicted):
                    self.write(f"  {describe_eviction(event)}")
                elif isinstance(event, ReplyIncomplete):
                    self.write(f"  {describe_incomplete(event)}")
                elif isinstance(event, Notice):
                    self.write(f"  ! {event.text}")
                elif isinstance(event, TurnFailed):
                    self.write(describe_failure(event))
                    if ends_session(event):
                        self.ended = event.error
        except KeyboardInterrupt:
            events.close()
            self.write("\n(cancelled; the agent is saved and ready)")
