"""`agentos secrets NAME show|on|off|add|remove|check`: an agent's secret gate, which replaces secrets by placeholders
before anything is stored or sent to the model again (see docs/memory.md)."""

from __future__ import annotations

import argparse

from agentos.agent.agent import Agent
from agentos.cli.memory import read_value
from agentos.errors import ConfigError
from agentos.memory.secret_gate import SecretGate, check_pattern, describe


def _status(agent: Agent) -> str:
    settings = agent.settings
    state = "on" if settings.secret_gate else "off: secrets are stored and sent to the model as they are"
    lines = [f'Secret gate of "{agent.name}": {state}.']
    if settings.secret_patterns:
        lines.append("Your patterns" + ("" if settings.secret_gate else " (unused while the gate is off)") + ":")
        lines += [f"  {pattern}" for pattern in settings.secret_patterns]
    else:
        lines.append(f"No patterns of your own (add one with: agentos secrets {agent.name} add REGEX).")
    return "\n".join(lines)


def _change(name: str, **settings: object) -> None:
    """Change the gate's settings of agent `name`, save, and show them."""
    agent = Agent.load(name, with_model=False)
    try:
        agent.update_settings(**settings)
        agent.save()
        print(_status(agent))
    finally:
        agent.close()


def cmd_show(args: argparse.Namespace) -> int:
    agent = Agent.load(args.name, read_only=True)
    print(_status(agent))
    return 0


def cmd_on(args: argparse.Namespace) -> int:
    _change(args.name, secret_gate=True)
    return 0


def cmd_off(args: argparse.Namespace) -> int:
    _change(args.name, secret_gate=False)
    return 0


def cmd_add(args: argparse.Namespace) -> int:
    """`secrets NAME add REGEX`: a pattern of the agent's own secrets (refused when it is no usable expression)."""
    try:
        pattern = check_pattern(args.pattern)
    except ValueError as exc:
        raise ConfigError(f"{exc}. Nothing was changed.") from None
    agent = Agent.load(args.name, read_only=True)
    patterns = agent.settings.secret_patterns
    if pattern in patterns:
        print(f"That pattern is already there.\n{_status(agent)}")
        return 0
    _change(args.name, secret_patterns=[*patterns, pattern])
    return 0


def cmd_remove(args: argparse.Namespace) -> int:
    agent = Agent.load(args.name, read_only=True)
    patterns = agent.settings.secret_patterns
    if args.pattern not in patterns:
        shown = ", ".join(repr(p) for p in patterns) or "none"
        raise ConfigError(f'agent "{agent.name}" has no pattern {args.pattern!r} (its patterns: {shown}).')
    _change(args.name, secret_patterns=[p for p in patterns if p != args.pattern])
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    """`secrets NAME check TEXT`: the text as the agent's gate would store it, and what it would remove."""
    agent = Agent.load(args.name, read_only=True)
    done = SecretGate(True, agent.settings.secret_patterns).redact(read_value(args.text))
    print(done.text)
    print(f"(removed: {describe(done.found)})" if done.found else "(nothing would be removed)")
    if not agent.settings.secret_gate:
        print(f"The gate is off, so nothing is removed now; turn it on with: agentos secrets {agent.name} on")
    return 0
