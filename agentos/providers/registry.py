"""Model specs ("openai/gpt-4.1-mini", "anthropic/claude-sonnet-4-5", "ollama/llama3.1", ...) resolved to providers.

The SDKs are imported only when a provider is made (inside its constructor), so importing agentos stays fast.
"""

from __future__ import annotations

from typing import Any

from agentos.errors import ConfigError
from agentos.providers.anthropic_provider import AnthropicProvider
from agentos.providers.base import Provider
from agentos.providers.demo import demo_provider
from agentos.providers.models import LOCAL_FAMILIES, parse_spec
from agentos.providers.openai_provider import OpenAIProvider


def resolve_model(spec: str, *, context_window: int | None = None, **options: Any) -> Provider:
    """Build the provider for a model spec `family/model[@base_url]`.

    `context_window` overrides the model family's known window; `options` go to the provider
    (api_key, http_client, retry, timeout, info, ...).
    """
    parsed = parse_spec(spec)
    if parsed.family == "scripted":
        if parsed.model == "demo":
            provider = demo_provider()
            if context_window:
                provider.context_window = context_window
            return provider
        raise ConfigError(
            f'"{spec}" is a scripted model; its script lives in code. Load the agent with '
            f"provider=ScriptedProvider(...), or use scripted/demo."
        )
    if parsed.server.api == "anthropic":
        return AnthropicProvider(parsed.model, base_url=parsed.base_url, context_window=context_window, **options)
    compatible = OpenAIProvider(
        parsed.model, family=parsed.family, base_url=parsed.base_url, context_window=context_window, **options
    )
    if parsed.family in LOCAL_FAMILIES:
        compatible.learn_served_window(context_window)
    return compatible
