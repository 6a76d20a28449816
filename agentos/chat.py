"""The line REPL behind `agentos chat`: streams replies and shows tool calls and memory edits compactly."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Callable, TextIO

from agentos.events import (
    MemoryEdited,
    MessagesEvicted,
    Notice,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFailed,
)

if TYPE_CHECKING:
    from agentos.agent.agent import Agent

HELP = """Commands:
  /memory   show the agent's core memory blocks
  /context  show what fills the context window
  /summarize  summarize and evict old messages now
  /help     show this help
  /exit     leave (the agent is saved after every step)
Ctrl-C cancels a reply in progress; Ctrl-D leaves."""


def format_blocks(agent: "Agent") -> str:
    """Every core memory block with its size and limit."""
    lines = []
    for block in agent.memory:
        flag = ", read-only" if block.read_only else ""
        lines.append(f"[{block.label}] {len(block.value)}/{block.limit} chars{flag}")
        lines.extend(f"  {line}" for line in (block.value or "(empty)").splitlines())
    return "\n".join(lines)


def format_context(agent: "Agent") -> str:
    """The context window by part, in tokens."""
    b = agent.context_breakdown()
    window = b["window"]
    lines = [f"Context: {b['total']:,} of {window:,} tokens ({100 * b['total'] / window:.0f}%), counted with {b['counter']}"]
    for key, label in (("system", "system instructions"), ("memory", "memory blocks"), ("tools", "tool schemas"),
                       ("summary", "summary"), ("messages", f"messages ({b['message_count']})")):
        lines.append(f"  {label:<22}{b[key]:>9,}")
    if b["correction"]:
        lines.append(f"  {'provider correction':<22}{b['correction']:>+9,}")
    lines.append(f"  {b['hidden']:,} older messages are out of context (in recall); alert at {b['warn_at']:.0%}, "
                 f"compact at {b['evict_at']:.0%} down to {b['target']:.0%}, keep the last {b['keep_last']}")
    return "\n".join(lines)


def describe_eviction(event: MessagesEvicted) -> str:
    """One line saying what the pager did."""
    how = "summarized" if event.summarized else "not summarized"
    note = f"; {event.note}" if event.note else ""
    return (f"  ⋯ {event.count} old messages moved out of context, {how} "
            f"({event.tokens_before:,}→{event.tokens_after:,} tokens{note})")


def _short(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def describe_edit(event: MemoryEdited) -> str:
    """One line saying how a block changed."""
    delta = len(event.new_value) - len(event.old_value)
    return f"  ✎ memory [{event.label}] {delta:+d} chars: {_short(event.new_value, 60)}"


class Repl:
    """Reads lines, runs turns and prints their events."""

    def __init__(
        self,
        agent: "Agent",
        read: Callable[[str], str] = input,
        out: TextIO | None = None,
    ) -> None:
        self.agent = agent
        self.read = read
        self.out = out or sys.stdout

    def write(self, text: str = "", end: str = "\n") -> None:
        self.out.write(text + end)
        self.out.flush()

    def run(self) -> int:
        self.write(f'Chatting with "{self.agent.name}" ({self.agent.state.model}). /help for commands.')
        while True:
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
                if self.command(line) == "exit":
                    break
                continue
            self.take_turn(line)
        self.agent.close()
        return 0

    def command(self, line: str) -> str | None:
        name = line.split()[0].lower()
        if name in ("/exit", "/quit"):
            return "exit"
        if name == "/memory":
            self.write(format_blocks(self.agent))
        elif name == "/context":
            self.write(format_context(self.agent))
        elif name == "/summarize":
            for event in self.agent.compact():
                self.write(describe_eviction(event) if isinstance(event, MessagesEvicted) else f"  ! {event.text}")
        elif name == "/help":
            self.write(HELP)
        else:
            self.write(f"unknown command {name}. {HELP}")
        return None

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
                    self.write(f"  → {event.name}({_short(event.arguments, 70)})")
                elif isinstance(event, ToolCallFinished) and event.is_error:
                    self.write(f"  ✗ {_short(event.result, 100)}")
                elif isinstance(event, MemoryEdited):
                    self.write(describe_edit(event))
                elif isinstance(event, MessagesEvicted):
                    self.write(describe_eviction(event))
                elif isinstance(event, Notice):
                    self.write(f"  ! {event.text}")
                elif isinstance(event, TurnFailed):
                    self.write(f"error: {event.error}")
        except KeyboardInterrupt:
            events.close()
            self.write("\n(cancelled; the agent is saved and ready)")
