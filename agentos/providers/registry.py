"""Model specs ("openai/gpt-4.1-mini", "scripted/demo", ...) resolved to providers."""

from __future__ import annotations

from agentos.errors import ConfigError
from agentos.providers.base import Provider


def resolve_model(spec: str, *, context_window: int | None = None) -> Provider:
    """Build the provider for a model spec `family/model`."""
    family, _, model = spec.partition("/")
    if not model:
        raise ConfigError(
            f'model spec "{spec}" must look like family/model, for example openai/gpt-4.1-mini or scripted/demo.'
        )
    if family == "scripted":
        if model == "demo":
            from agentos.providers.demo import demo_provider

            provider = demo_provider()
            if context_window:
                provider.context_window = context_window
            return provider
        raise ConfigError(
            f'"{spec}" is a scripted model; its script lives in code. Load the agent with '
            f"provider=ScriptedProvider(...), or use scripted/demo."
        )
    raise ConfigError(f'unknown model family "{family}" in "{spec}". Known families: scripted.')
