"""The models an evaluation asks, from their specs: the scripted ones of `scripted_models` (scripted/reader,
scripted/judge, scripted/facts), so that a run works offline, and any other spec by the agents' own rule
(`agentos.agent.roles.resolve_spec`)."""

from __future__ import annotations

from collections.abc import Callable

from agentos.agent.roles import resolve_spec
from agentos.agent.state import AgentSettings
from agentos.errors import ConfigError
from agentos.eval.scripted_models import fact_extractor, judge, reader
from agentos.providers.base import Provider
from agentos.providers.scripted import ScriptedProvider

SCRIPTED: dict[str, Callable[[], ScriptedProvider]] = {
    "scripted/reader": reader, "scripted/judge": judge, "scripted/facts": fact_extractor,
}


def resolve(spec: str) -> Provider:
    """A provider for a spec: a new one of the scripted models above, else the spec resolved as an agent with
    default settings would resolve it (the config file's window for it, no timeouts of its own)."""
    if spec in SCRIPTED:
        return SCRIPTED[spec]()
    if spec.startswith("scripted/") and spec != "scripted/demo":
        raise ConfigError(f"{spec!r} is not a scripted model this evaluation knows; it knows {', '.join(SCRIPTED)}.")
    return resolve_spec(spec, AgentSettings())
