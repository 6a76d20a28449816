"""The slash commands of the line REPL and the TUI: one table, one help text, one way to run them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from agentos.errors import AgentOSError
from agentos.events import MessagesEvicted, Notice
from agentos.formatting import describe_eviction, format_blocks, format_context

if TYPE_CHECKING:
    from agentos.agent.agent import Agent

Style = Literal["info", "error"]


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    busy_ok: bool = True  # may run while a reply is in progress


COMMANDS = [
    Command("/memory", "show the agent's core memory blocks"),
    Command("/context", "show what fills the context window", busy_ok=False),
    Command("/summarize", "summarize and evict old messages now", busy_ok=False),
    Command("/help", "show this help"),
    Command("/exit", "leave (the agent is saved after every step)"),
]
_BY_NAME = {c.name: c for c in COMMANDS} | {"/quit": COMMANDS[-1]}


def help_text(keys: str) -> str:
    """The commands, then the front end's own keys (for example how to cancel a reply)."""
    lines = ["Commands:", *(f"  {c.name:<12}{c.help}" for c in COMMANDS), keys]
    return "\n".join(lines)


@dataclass
class Outcome:
    """What a command produced: lines to show (text, style), and whether to leave or show the memory panel."""

    lines: list[tuple[str, Style]] = field(default_factory=list)
    exit: bool = False
    memory: bool = False

    def say(self, text: str, style: Style = "info") -> Outcome:
        self.lines.append((text, style))
        return self


def run_command(agent: Agent, line: str, *, keys: str, busy: bool = False) -> Outcome:
    """Run one slash command against `agent` (`busy`: a reply is in progress, so only quick reads run)."""
    name = line.split()[0].lower()
    command = _BY_NAME.get(name)
    if command is None:
        return Outcome().say(f"unknown command {name}. {help_text(keys)}", "error")
    if busy and not command.busy_ok:
        return Outcome().say(f"(wait for the reply, or cancel it, before {name})")
    if command.name == "/exit":
        return Outcome(exit=True)
    if command.name == "/help":
        return Outcome().say(help_text(keys))
    if command.name == "/memory":
        return Outcome(memory=True).say(format_blocks(agent.blocks))
    if command.name == "/context":
        return Outcome().say(format_context(agent.context_breakdown()))
    return summarize(agent)


def summarize(agent: Agent) -> Outcome:
    """Compact now and say what the pager did."""
    out = Outcome()
    try:
        events = agent.compact()
    except AgentOSError as exc:
        return out.say(f"error: {exc}", "error")
    for event in events:
        if isinstance(event, MessagesEvicted):
            out.say(describe_eviction(event))
        elif isinstance(event, Notice):
            out.say(f"! {event.text}")
    return out
