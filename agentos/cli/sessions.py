"""The commands that open a session with an agent: chat (the line REPL), tui (full screen) and demo (either, on an
offline demo agent). Textual is imported only when the TUI runs."""

from __future__ import annotations

import argparse
import importlib
import sys
from types import ModuleType

from agentos.agent.agent import Agent
from agentos.agent.state import AgentSettings
from agentos.chat import Repl
from agentos.errors import AgentNotFoundError, AgentOSError
from agentos.memory.facts.settings import FactSettings
from agentos.providers.demo import DEMO_TOUR


def _tui() -> ModuleType:
    """The TUI's app module, imported now (textual takes a while, and `chat` never needs it)."""
    return importlib.import_module("agentos.tui.app")


def cmd_chat(args: argparse.Namespace) -> int:
    agent = Agent.load(args.name)
    return Repl(agent).run()


def on_a_terminal() -> bool:
    """Whether both ends are a terminal (the full-screen TUI needs one to draw on and read keys from)."""
    return sys.stdin.isatty() and sys.stdout.isatty()


def cmd_tui(args: argparse.Namespace) -> int:
    """The full-screen TUI; without a terminal (piped, in a script, under a CI runner), the line REPL instead."""
    if not on_a_terminal():
        print(f"agentos tui needs a terminal, and this is not one (input or output is piped); chatting with "
              f'"{args.name}" in the line REPL instead (agentos chat {args.name}).', file=sys.stderr)
        return Repl(Agent.load(args.name)).run()
    return _tui().run_tui(lambda: Agent.load(args.name))  # the frame paints at once; the agent loads behind it


DEMO_MODEL = "scripted/demo"


def demo_settings() -> AgentSettings:
    """The demo agent's settings: fact memory on, after every turn (the demo model answers consolidation too)."""
    return AgentSettings(facts=FactSettings(mode="turn"))


def cmd_demo(args: argparse.Namespace) -> int:
    try:
        model = Agent.load(args.name, read_only=True, with_model=False).model
    except AgentNotFoundError:
        agent = Agent.create(args.name, model=DEMO_MODEL, settings=demo_settings())
        print(f'Created the offline demo agent "{args.name}".')
        return run_demo(agent, args.plain)
    if model != DEMO_MODEL:
        raise AgentOSError(f'"{args.name}" is not a demo agent: it uses {model}. Chat with it with: agentos chat '
                           f"{args.name}, or give the demo another name: agentos demo NAME")
    return run_demo(Agent.load(args.name), args.plain)


def run_demo(agent: Agent, plain: bool) -> int:
    """The demo in the TUI with its guided tour on a terminal; the line REPL with --plain or when piped."""
    if plain or not on_a_terminal():

        print("Tell it your name and what you like, ask it to remember something, quit, and come back. "
              f"A tour to type: {' · '.join(DEMO_TOUR)}")
        return Repl(agent).run()
    return _tui().run_tui(agent, tour=DEMO_TOUR if agent.state.message_count == 0 else ())  # the tour once, on a new agent
