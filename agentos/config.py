"""Settings: where agentos keeps its data and which model an agent uses by default."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from platformdirs import user_data_dir

from agentos.errors import ConfigError

HOME_VARIABLE = "AGENTOS_HOME"
MODEL_VARIABLE = "AGENTOS_MODEL"


def data_home() -> Path:
    """The folder holding the database and config: $AGENTOS_HOME, else the per-user data dir."""
    override = os.environ.get(HOME_VARIABLE)
    if override:
        return Path(override).expanduser()
    return Path(user_data_dir("agentos", appauthor=False))


def database_uri(home: Path | None = None) -> str:
    """Where the LanceDB database lives: `db/` under the data home unless config names a URI."""
    configured = load_config(home).get("database_uri")
    return str(configured) if configured else str((home or data_home()) / "db")


def storage_options(home: Path | None = None) -> dict[str, str] | None:
    """Options for an object-store `database_uri` (endpoint, region, credentials), from `storage_options` in config."""
    options = load_config(home).get("storage_options")
    if options is None:
        return None
    if not isinstance(options, dict):
        raise ConfigError(f'"storage_options" in {config_path(home)} must be an object of strings.')
    return {str(k): str(v) for k, v in options.items()}


def config_path(home: Path | None = None) -> Path:
    return (home or data_home()) / "config.json"


def load_config(home: Path | None = None) -> dict[str, Any]:
    """The user's config file (JSON) as a dict; empty when there is none."""
    path = config_path(home)
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}. Fix or delete it.") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a JSON object.")
    return data


NO_MODEL_HELP = (
    "no model is configured: set AGENTOS_MODEL (e.g. openai/gpt-4.1-mini, anthropic/claude-sonnet-4-5, "
    "ollama/llama3.1), or OPENAI_API_KEY / ANTHROPIC_API_KEY, or \"model\" in $AGENTOS_HOME/config.json, "
    "or pass --model. To try agentos offline with no key: agentos demo"
)


def api_key(family: str, variable: str | None, home: Path | None = None) -> str | None:
    """An API key: the environment variable first, else `api_keys` (by family or variable) in the config file."""
    if variable and os.environ.get(variable):
        return os.environ[variable]
    keys = load_config(home).get("api_keys") or {}
    if not isinstance(keys, dict):
        raise ConfigError(f'"api_keys" in {config_path(home)} must be an object like {{"openai": "sk-..."}}.')
    value = keys.get(family) or (keys.get(variable) if variable else None)
    return str(value) if value else None


def configured_base_url(family: str, home: Path | None = None) -> str | None:
    """A server address for a model family from `base_urls` in the config file, if any."""
    urls = load_config(home).get("base_urls") or {}
    value = urls.get(family) if isinstance(urls, dict) else None
    return str(value).rstrip("/") if value else None


def configured_window(model: str, home: Path | None = None) -> int | None:
    """A context window for a model spec (or its family/model without @URL, or its family) from `context_windows`
    in the config file, if any."""
    windows = load_config(home).get("context_windows") or {}
    if not isinstance(windows, dict):
        raise ConfigError(f'"context_windows" in {config_path(home)} must map model specs to token counts.')
    for key in (model, model.split("@", 1)[0], model.split("/", 1)[0]):
        value = windows.get(key)
        if value is not None:
            if not isinstance(value, int) or value <= 0:
                raise ConfigError(f'"context_windows" in {config_path(home)}: {key!r} must be a positive number of '
                                  f"tokens, not {value!r}.")
            return value
    return None


def default_model(home: Path | None = None) -> str:
    """The model spec to use when none is given: config, $AGENTOS_MODEL, then whichever API key is set."""
    return default_model_and_source(home)[0]


def default_model_and_source(home: Path | None = None) -> tuple[str, str]:
    """`default_model`, and where it came from (to name in an error about the spec)."""
    configured = load_config(home).get("model")
    if configured:
        return str(configured), f'"model" in {config_path(home)}'
    if os.environ.get(MODEL_VARIABLE):
        return os.environ[MODEL_VARIABLE], f"${MODEL_VARIABLE}"
    if api_key("openai", "OPENAI_API_KEY", home):
        return "openai/gpt-4.1-mini", "the default for OPENAI_API_KEY"
    if api_key("anthropic", "ANTHROPIC_API_KEY", home):
        return "anthropic/claude-sonnet-4-5", "the default for ANTHROPIC_API_KEY"
    raise ConfigError(NO_MODEL_HELP)


TIMEOUT_VARIABLES = {"read": "AGENTOS_READ_TIMEOUT", "connect": "AGENTOS_CONNECT_TIMEOUT"}


def configured_timeout(kind: str, home: Path | None = None) -> float | None:
    """Seconds for the provider's `kind` timeout ("read": between streamed bytes, "connect"): the environment
    ($AGENTOS_READ_TIMEOUT, $AGENTOS_CONNECT_TIMEOUT), else "timeouts" in the config file; None when unset."""
    variable = TIMEOUT_VARIABLES[kind]
    raw: Any = os.environ.get(variable)
    source = f"${variable}"
    if not raw:
        timeouts = load_config(home).get("timeouts") or {}
        raw = timeouts.get(kind) if isinstance(timeouts, dict) else None
        source = f'"timeouts": {{"{kind}": ...}} in {config_path(home)}'
    if raw is None or raw == "":
        return None
    try:
        seconds = float(raw)
    except (TypeError, ValueError):
        raise ConfigError(f"{source} must be a number of seconds, not {raw!r}.") from None
    if not 0 < seconds < 86_400:
        raise ConfigError(f"{source} must be between 0 and 86400 seconds, not {raw!r}.")
    return seconds
