"""The `window` command: an agent's context window, where its figure comes from, how full it is, and a new one."""

from __future__ import annotations

import argparse

from agentos.agent.agent import Agent, open_store
from agentos.agent.requests import overfull
from agentos.errors import AgentOSError


def _tokens(text: str) -> int | None:
    """The window asked for: a positive number of tokens, or None for `default` (the model's own)."""
    if text.strip().lower() == "default":
        return None
    try:
        tokens = int(text.replace(",", "").replace("_", ""))
    except ValueError:
        tokens = 0
    if tokens <= 0:
        raise AgentOSError(f"the window is a number of tokens above zero (e.g. 32000), or default for the model's "
                           f"own; got {text!r}.")
    return tokens


def _fullness(agent: Agent) -> str:
    """How much of the window the agent's next request takes, and what to do when it does not fit."""
    breakdown = agent.context_breakdown()
    said = f"the next request takes {breakdown['total']:,} tokens, {round(100 * breakdown['total'] / agent.window)}% of it"
    if overfull(breakdown) is None:
        return said + "."
    return (f"{said}: it does not fit, so a turn would fail. If the model takes more, change it with agentos window "
            f"{agent.name} TOKENS; else shorten the blocks (agentos memory {agent.name} set LABEL ...).")


def cmd_window(args: argparse.Namespace) -> int:
    if args.tokens is None:
        agent = Agent.load(args.name, read_only=True)
        print(f'Context window of "{agent.name}": {agent.window:,} tokens ({agent.window_source}); {_fullness(agent)}')
        return 0
    tokens = _tokens(args.tokens)
    store = open_store()
    agent = Agent.load(args.name, store=store, with_model=False)
    try:
        was = agent.window
        agent.update_settings(context_window=tokens)
        agent.save()
        print(f'Context window of "{agent.name}": {agent.window:,} tokens ({agent.window_source}; it was {was:,}); '
              f"{_fullness(agent)}")
    finally:
        agent.close()
    return 0
