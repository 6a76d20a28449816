"""Model specs and model families: which API serves a spec, and each family's context window and capabilities."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

from agentos.errors import ConfigError


@dataclass(frozen=True)
class ModelInfo:
    """What agentos knows about a model: its context window, output limit and capabilities."""

    context_window: int
    max_output_tokens: int = 8192
    tools: bool = True
    vision: bool = False
    prompt_caching: bool = False
    reasoning: bool = False  # o-series / gpt-5: `max_completion_tokens`, no sampling parameters

    def override(self, **changes: object) -> ModelInfo:
        """A copy with the given fields replaced (fields given as None are kept)."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})  # type: ignore[arg-type]


@dataclass(frozen=True)
class Server:
    """An API endpoint family: which adapter speaks to it, where it lives and which key it needs."""

    api: str  # "openai" or "anthropic"
    base_url: str | None  # None: the SDK's default (or its *_BASE_URL variable)
    key_variable: str | None  # environment variable holding the key
    key_required: bool
    label: str


SERVERS: dict[str, Server] = {
    "openai": Server("openai", None, "OPENAI_API_KEY", True, "OpenAI"),
    "anthropic": Server("anthropic", None, "ANTHROPIC_API_KEY", True, "Anthropic"),
    "ollama": Server("openai", "http://localhost:11434/v1", None, False, "Ollama"),
    "vllm": Server("openai", "http://localhost:8000/v1", "VLLM_API_KEY", False, "vLLM"),
    "lmstudio": Server("openai", "http://localhost:1234/v1", None, False, "LM Studio"),
    "llamacpp": Server("openai", "http://localhost:8080/v1", "LLAMACPP_API_KEY", False, "llama.cpp server"),
    "openrouter": Server("openai", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY", True, "OpenRouter"),
    "openai-compatible": Server("openai", None, "OPENAI_COMPATIBLE_API_KEY", False, "OpenAI-compatible server"),
}

# Servers on the user's own machine (or network): their window is asked of them, their replies' text tool calls read.
LOCAL_FAMILIES = frozenset({"ollama", "llamacpp", "vllm", "lmstudio", "openai-compatible"})

# Ollama serves a model with a small context (num_ctx, 4096 by default) and silently drops the
# start of a longer prompt -- the system prompt first. Budget for that unless the agent overrides.
OLLAMA_DEFAULT_CONTEXT = 4096

# (pattern on the model name, info); the first match wins, so specific names come first.
_FAMILIES: list[tuple[str, ModelInfo]] = [
    (r"^claude-3-5-haiku|^claude-3-haiku", ModelInfo(200_000, 8192, vision=True, prompt_caching=True)),
    (r"^claude-3-(opus|sonnet)", ModelInfo(200_000, 4096, vision=True, prompt_caching=True)),
    (r"^claude-", ModelInfo(200_000, 16_384, vision=True, prompt_caching=True)),
    (r"^gpt-4\.1", ModelInfo(1_047_576, 32_768, vision=True, prompt_caching=True)),
    (r"^gpt-5", ModelInfo(400_000, 32_768, vision=True, prompt_caching=True, reasoning=True)),
    (r"^gpt-4o", ModelInfo(128_000, 16_384, vision=True, prompt_caching=True)),
    (r"^gpt-4-turbo", ModelInfo(128_000, 4096, vision=True)),
    (r"^gpt-4", ModelInfo(8192, 4096)),
    (r"^gpt-3\.5", ModelInfo(16_385, 4096)),
    (r"^o\d", ModelInfo(200_000, 32_768, vision=True, prompt_caching=True, reasoning=True)),
    (r"llama-?3\.[123]|llama-?4", ModelInfo(131_072, 8192)),
    (r"llama-?3", ModelInfo(8192, 4096)),
    (r"qwen-?3", ModelInfo(40_960, 8192)),
    (r"qwen-?2\.5", ModelInfo(32_768, 8192)),
    (r"mistral-nemo|mistral-small|mistral-large", ModelInfo(131_072, 8192)),
    (r"mistral", ModelInfo(32_768, 4096)),
    (r"deepseek", ModelInfo(131_072, 8192)),
    (r"gemma-?3", ModelInfo(131_072, 8192, vision=True)),
]
_UNKNOWN = ModelInfo(32_768, 4096)


def model_info(family: str, model: str) -> ModelInfo:
    """The known limits and capabilities of `model` when served by `family`."""
    name = model.lower().rsplit("/", 1)[-1]  # openrouter: "anthropic/claude-..." -> "claude-..."
    info = next((i for pattern, i in _FAMILIES if re.search(pattern, name)), _UNKNOWN)
    if family == "ollama":
        info = info.override(context_window=min(info.context_window, OLLAMA_DEFAULT_CONTEXT), prompt_caching=False)
    elif family not in ("openai", "anthropic", "openrouter"):
        info = info.override(prompt_caching=False)
    return info


SCRIPTED_WINDOWS = {"demo": 8192}  # scripted models: the demo's window; others take ScriptedProvider's default
SCRIPTED_DEFAULT_WINDOW = 128_000


def spec_info(spec: str) -> ModelInfo:
    """What the catalogue says about a model spec (`family/model[@url]`), scripted ones included; a spec
    it cannot read gets the defaults for an unknown model."""
    try:
        parsed = parse_spec(spec)
    except ConfigError:
        return _UNKNOWN
    if parsed.family == "scripted":
        return ModelInfo(SCRIPTED_WINDOWS.get(parsed.model, SCRIPTED_DEFAULT_WINDOW))
    return model_info(parsed.family, parsed.model)


def context_window_for(spec: str) -> int:
    """The context window the catalogue gives a model spec (what chat, `show`, the TUI and the pager use)."""
    return spec_info(spec).context_window


@dataclass(frozen=True)
class ModelSpec:
    """A parsed model spec `family/model[@base_url]`."""

    family: str
    model: str
    base_url: str | None = None

    @property
    def server(self) -> Server:
        return SERVERS[self.family]

    def __str__(self) -> str:
        return f"{self.family}/{self.model}" + (f"@{self.base_url}" if self.base_url else "")


SPEC_HELP = (
    "Model specs look like openai/gpt-4.1-mini, anthropic/claude-sonnet-4-5, ollama/llama3.1, "
    "vllm/MODEL, lmstudio/MODEL, llamacpp/MODEL, openrouter/VENDOR/MODEL, "
    "openai-compatible/MODEL@http://host:port/v1, or scripted/demo (offline). "
    "Any family but scripted also takes @BASE_URL to point at another server (a proxy, a remote host)."
)


def _check_url(spec: str, base_url: str) -> None:
    """Refuse a base URL with no host or an impossible port, naming the spec it came in."""
    try:
        parts = urlsplit(base_url)
        _ = parts.port  # raises for a port out of range
    except ValueError as exc:
        raise ConfigError(f'the base URL in model spec "{spec}" is not a valid URL ({exc}).') from exc
    if not parts.hostname:
        raise ConfigError(f'the base URL in model spec "{spec}" names no host; write it like http://127.0.0.1:8080/v1.')


def parse_spec(spec: str) -> ModelSpec:
    """Split a spec into family, model and an optional base URL (after `@http://` or `@https://`)."""
    text = spec.strip()
    base_url = None
    match = re.search(r"@(https?://\S+)$", text)
    if match:
        base_url = match.group(1).rstrip("/")
        text = text[: match.start()]
        _check_url(spec, base_url)
    bare = re.search(r"@((?:localhost|[\w.-]+\.[\w-]+|\[[0-9a-fA-F:]+\])(?::\d+)?(?:/\S*)?)$", text)
    if bare and (":" in bare.group(1) or "/" in bare.group(1) or bare.group(1).startswith("localhost")):
        suggestion = f"{text[: bare.start()]}@http://{bare.group(1)}"
        raise ConfigError(f'the base URL in model spec "{spec}" has no scheme: write it with http:// or https://, '
                          f"for example {suggestion}")
    family, _, model = text.partition("/")
    family = family.lower()
    if not family or not model:
        raise ConfigError(f'model spec "{spec}" must look like family/model. {SPEC_HELP}')
    if family != "scripted" and family not in SERVERS:
        known = ", ".join(["scripted", *SERVERS])
        raise ConfigError(f'unknown model family "{family}" in "{spec}". Known families: {known}. {SPEC_HELP}')
    if base_url and family == "scripted":
        raise ConfigError(f'"{spec}": a scripted model takes no base URL. {SPEC_HELP}')
    return ModelSpec(family, model, base_url)
