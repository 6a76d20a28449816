"""Live smoke tests against the real APIs: they run only when the API key is set, and are skipped otherwise."""

from __future__ import annotations

import os

import pytest

from agentos.agent.agent import Agent
from agentos.events import TurnFinished
from agentos.providers.registry import resolve_model

LIVE_MODELS = [
    ("OPENAI_API_KEY", os.environ.get("AGENTOS_LIVE_OPENAI_MODEL", "openai/gpt-4.1-mini")),
    ("ANTHROPIC_API_KEY", os.environ.get("AGENTOS_LIVE_ANTHROPIC_MODEL", "anthropic/claude-haiku-4-5")),
]


@pytest.mark.parametrize("variable, spec", LIVE_MODELS)
def test_live_memory_turn(live_key, variable: str, spec: str) -> None:  # type: ignore[no-untyped-def]
    live_key(variable)
    agent = Agent.create("live", provider=resolve_model(spec), human="Nothing is known about the user yet.")
    events = list(agent.turn("Hi! My name is Ada Lovelace. Please save my name to your core memory."))
    assert isinstance(events[-1], TurnFinished), events[-1]
    assert "Ada" in agent.block("human").value
