"""Changing an agent's main model: the spec checked, the agent's state saved with it; the next opening of the agent
sets the model up (its window, its pager, its roles follow)."""

from __future__ import annotations

from agentos.agent.agent import Agent
from agentos.providers.models import parse_spec
from agentos.storage import Store


def change_model(name: str, spec: str, store: Store) -> str:
    """Give agent `name` the main model `spec` (a ConfigError, before anything changes, when it is no model spec);
    the model it had. The agent must be free to open for writing: an open Agent keeps the model it was opened with."""
    parse_spec(spec)
    agent = Agent.load(name, store=store, with_model=False)
    try:
        before = agent.model
        if spec != before:
            agent.state.set_model(spec)
            agent.save()
        return before
    finally:
        agent.close()
