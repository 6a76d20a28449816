"""The model a Letta agent gets in agentos: a spec made from Letta's `llm_config`, with its window and output cap.

`llm_config` (endpoint type, model, endpoint URL) becomes a spec such as `openai/gpt-4o-mini`,
`anthropic/claude-...`, `ollama/NAME`, `openai-compatible/NAME@URL`, written and checked with the spec grammar of
`agentos.providers.models`; its context window and output cap become the agent's settings. A file agentos wrote
carries its exact spec in the agent's metadata. When nothing maps, the configured default model is used. The
spec is recorded, not resolved: no key or network is needed.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from agentos.agent.state import AgentSettings
from agentos.config import default_model_and_source
from agentos.errors import ConfigError
from agentos.portable.letta_file import AfSource, Findings, _dict
from agentos.portable.trust import check_model_server
from agentos.providers.models import LOCAL_FAMILIES, SERVERS, ModelSpec, parse_spec

# Letta endpoint types of servers on the user's machine that agentos names otherwise; the rest are agentos families.
LOCAL_ALIASES = {"lmstudio-legacy": "lmstudio", "lmstudio-chatcompletions": "lmstudio"}
OPENAI_COMPATIBLE_TYPES = {"groq", "together", "deepseek", "xai", "mistral", "fireworks"}
SAMPLING = ("temperature", "frequency_penalty", "presence_penalty", "reasoning_effort", "effort", "verbosity")


def _local_family(kind: str) -> str | None:
    """The agentos family of a Letta endpoint type for a local server (one with a default address), if it is one."""
    family = LOCAL_ALIASES.get(kind, kind)
    return family if family in LOCAL_FAMILIES and SERVERS[family].base_url else None


def spec_from_llm_config(llm: dict[str, Any]) -> str | None:
    """The agentos spec Letta's `llm_config` describes, or None when its endpoint type has no agentos family."""
    model, kind, endpoint = llm.get("model"), llm.get("model_endpoint_type"), llm.get("model_endpoint") or None
    if not isinstance(model, str) or not isinstance(kind, str):
        return None
    try:
        host = (urlsplit(endpoint).hostname or "") if isinstance(endpoint, str) else ""
    except ValueError:
        return None
    spec = None
    if kind == "openrouter" or (kind == "openai" and "openrouter.ai" in host):
        spec = ModelSpec("openrouter", model)
    elif kind == "openai":
        spec = ModelSpec("openai", model) if host in ("", "api.openai.com") else ModelSpec("openai-compatible", model, endpoint)
    elif kind == "anthropic":
        base = str(endpoint or "").rstrip("/").removesuffix("/v1")
        spec = ModelSpec("anthropic", model, None if host in ("", "api.anthropic.com") else base)
    elif family := _local_family(kind):
        base = str(endpoint or "").rstrip("/")
        if base and not base.endswith("/v1"):
            base += "/v1"
        spec = ModelSpec(family, model, base if base and base != SERVERS[family].base_url else None)
    elif kind in OPENAI_COMPATIBLE_TYPES and endpoint:
        spec = ModelSpec("openai-compatible", model, endpoint)
    return None if spec is None else str(spec)


def _valid_spec(spec: Any) -> str | None:
    if not isinstance(spec, str):
        return None
    try:
        parse_spec(spec)
    except ConfigError:
        return None
    return spec


def agent_model(source: AfSource, override: str | None) -> tuple[str, AgentSettings, Findings]:
    """The model spec and the model settings (window, output cap) the agent gets, with a note on where they came
    from and the model settings agentos does not carry."""
    raw, found = source.raw, Findings()
    llm, settings, metadata = _dict(raw.get("llm_config")), _dict(raw.get("model_settings")), _dict(raw.get("metadata"))
    described = f"{llm.get('model_endpoint_type')}/{llm.get('model')}" if llm else str(raw.get("model"))
    from_file = False
    if override:
        parse_spec(override)  # a ConfigError names what is wrong with it
        spec, where = override, "given on import"
    elif _valid_spec(metadata.get("agentos_model")):
        spec, where, from_file = metadata["agentos_model"], "recorded in the file by agentos", True
    else:
        mapped = (_valid_spec(spec_from_llm_config(llm)) or _valid_spec(llm.get("handle"))
                  or _valid_spec(raw.get("model")))
        if mapped and not mapped.startswith("scripted/"):
            spec, where, from_file = mapped, "from llm_config", True
        else:
            try:
                spec, origin = default_model_and_source()
            except ConfigError:
                raise ConfigError(f'the model of agent "{source.name}" in {source.af.path} ({described}) has no agentos '
                                  f"equivalent, and no default model is configured: pass --model SPEC (for example "
                                  f"openai/gpt-4.1-mini or ollama/llama3.1), or set AGENTOS_MODEL.") from None
            where = f"the default ({origin}): {described} has no agentos equivalent"
    if from_file:
        check_model_server(spec, source.af.path)  # the file may not choose who receives the user's key
    window = llm.get("context_window") or raw.get("context_window_limit")
    cap = llm.get("max_tokens") or raw.get("max_tokens") or settings.get("max_output_tokens")
    window = window if isinstance(window, int) and window > 0 and from_file else None  # the file's model's limits
    cap = cap if isinstance(cap, int) and cap > 0 and from_file else None
    extra = (f", context window {window:,} tokens" if window else "") + (f", output cap {cap:,} tokens" if cap else "")
    found.notes.append(f"model {spec} ({where}){extra}")
    sampling = {**settings, **llm}
    unused = [f"{k} {sampling[k]}" for k in SAMPLING
              if sampling.get(k) is not None and not (k == "temperature" and sampling[k] == 1.0)]
    if llm.get("enable_reasoner") and llm.get("max_reasoning_tokens"):
        unused.append(f"extended thinking ({llm['max_reasoning_tokens']:,} reasoning tokens)")
    if unused:
        found.left_out.append(f"model settings agentos does not carry: {', '.join(unused)}")
    return spec, AgentSettings(context_window=window, max_output_tokens=cap), found
