"""Which model plays which role for an agent (main, summary, facts, search), resolved by one rule.

A role's spec is the one given for it (`use`), else the agent's setting for that role, else the agent's own model.
A spec becomes a provider with the context window the config file names for it (the agent's own setting for the
main model) and the agent's timeouts; a provider's served window is then what it reports. Background roles (facts,
search) get a connection of their own even when they use the agent's model, so they share nothing with a turn.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from agentos.agent.state import AgentSettings
from agentos.config import configured_window
from agentos.errors import ConfigError
from agentos.providers.base import Provider
from agentos.providers.models import context_window_for
from agentos.providers.registry import resolve_model
from agentos.providers.sdk_client import default_timeout

Role = Literal["main", "summary", "facts", "search"]
ROLES: tuple[Role, ...] = ("main", "summary", "facts", "search")
OWN_CONNECTION: frozenset[Role] = frozenset({"facts", "search"})  # run on their own threads


def provider_options(settings: AgentSettings) -> dict[str, Any]:
    """What an agent's settings ask of its provider: the timeouts, when set."""
    if settings.read_timeout_s is None and settings.connect_timeout_s is None:
        return {}
    return {"timeout": default_timeout(settings.read_timeout_s, settings.connect_timeout_s)}


def setting_spec(settings: AgentSettings, role: Role) -> str | None:
    """The model spec the agent's settings name for a role (None: the agent's own model)."""
    if role == "summary":
        return settings.pager.summary_model
    if role == "facts":
        return settings.facts.model
    if role == "search":
        return settings.search.model
    return None


def resolve_spec(spec: str, settings: AgentSettings, *, main: bool = False) -> Provider:
    """A provider for `spec` by the one rule: the window of the agent's setting (main model only), else the config
    file's for the spec, else what the server serves; and the agent's timeouts."""
    window = (settings.context_window if main else None) or configured_window(spec)
    return resolve_model(spec, context_window=window, **provider_options(settings))


def context_window(settings: AgentSettings, model: str, provider: Provider | None) -> int:
    """The agent's context window: its setting, else the config file's for its model, else what its provider
    serves, else the model catalogue's."""
    return (settings.context_window or configured_window(model) or (provider.context_window if provider else 0)
            or context_window_for(model))


class ModelRoles:
    """The providers of one agent's roles: resolved on first use, again when the role's spec changes."""

    def __init__(self, model: str, settings: Callable[[], AgentSettings], main: Provider | None = None) -> None:
        self.model = model
        self._settings = settings
        self._given: dict[Role, Provider] = {} if main is None else {"main": main}
        self._resolved: dict[Role, tuple[str, Provider]] = {}

    def spec(self, role: Role) -> str:
        """The model spec a role uses now."""
        given = self._given.get(role)
        if given is not None:
            return f"{given.name}/{given.model}"
        return setting_spec(self._settings(), role) or self.model

    def given(self, role: Role) -> Provider | None:
        """The provider handed in for a role (`use`), if one was."""
        return self._given.get(role)

    def has(self, role: Role) -> bool:
        """Whether the role has a provider without resolving one (the main model of an agent opened to edit has not)."""
        return role != "main" or "main" in self._given

    def use(self, role: Role, model: Provider | str) -> Provider:
        """Give a role this provider, or the provider of this spec (resolved by the one rule), from its next call on."""
        if role not in ROLES:
            raise ConfigError(f"unknown model role {role!r}: the roles are {', '.join(ROLES)}.")
        provider = resolve_spec(model, self._settings(), main=role == "main") if isinstance(model, str) else model
        self._given[role] = provider
        return provider

    def provider(self, role: Role) -> Provider:
        """The provider of a role: the one given for it, else the main model's (summaries) or a connection of the
        role's own to its spec (background roles, and a summary model of its own)."""
        given = self._given.get(role)
        if given is not None:
            return given
        if role == "main":
            raise ConfigError("this agent was opened without a model, so it cannot take turns.")
        named = setting_spec(self._settings(), role)
        if named is None and role not in OWN_CONNECTION:
            return self.provider("main")
        spec = named or self.model
        known = self._resolved.get(role)
        if known is None or known[0] != spec:
            known = spec, resolve_spec(spec, self._settings())
            self._resolved[role] = known
        return known[1]
