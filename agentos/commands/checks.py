"""Checks the CLI and the server make before a change, with the messages both give."""

from __future__ import annotations

from typing import Any

from agentos.errors import AgentOSError


def require_facts(facts: Any, name: str) -> None:
    """Refuse to change fact memory an agent does not use (a writer would create its tables for nothing)."""
    if not facts.in_use:
        raise AgentOSError(f'agent "{name}" has no facts yet. Consolidate its conversation with: agentos facts {name} '
                           f"consolidate, or turn fact memory on with: agentos facts {name} on")



def named(text: str, name: str) -> str:
    """A library message with the agent's name in its hint (`agentos facts AGENT ...`)."""
    return text.replace("agentos facts AGENT ", f"agentos facts {name} ")
