"""The context window a local server really serves, asked of the server where it says.

llama.cpp answers `/props` (`default_generation_settings.n_ctx`) and `/v1/models` (`meta.n_ctx`); Ollama
answers `/api/show` (a `num_ctx` parameter, else its default, which silently cuts longer prompts); vLLM's
`/v1/models` gives `max_model_len`; LM Studio's `/api/v0/models` gives `loaded_context_length`. A server
that does not say, or cannot be reached, leaves the model catalogue's figure in place.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentos.providers.models import OLLAMA_DEFAULT_CONTEXT

DISCOVERY_TIMEOUT_S = 1.0  # per question; a server on this machine answers in milliseconds

Fetch = Callable[[str, str, "dict[str, Any] | None"], Any]  # (method, absolute URL, JSON body) -> parsed JSON


@dataclass(frozen=True)
class ServedWindow:
    """A window figure and where it came from, for `agentos show` and for warnings."""

    tokens: int
    source: str
    advice: str = ""  # how to serve a larger window, where the server's own default is what limits it


def server_root(base_url: str) -> str:
    """The server's address without its OpenAI-compatible `/v1` path."""
    return re.sub(r"/v1/?$", "", base_url.rstrip("/"))


def _positive(value: Any) -> int | None:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


def from_llamacpp_props(body: Any) -> int | None:
    settings = body.get("default_generation_settings") if isinstance(body, dict) else None
    return _positive((settings or {}).get("n_ctx")) or _positive(body.get("n_ctx") if isinstance(body, dict) else None)


def from_models_list(body: Any, model: str, *, single: bool = False) -> int | None:
    """vLLM's `max_model_len`, llama.cpp's `meta.n_ctx`, or LM Studio's loaded (else max) context length, of the
    entry named `model`; with `single` (llama.cpp serves one model, whatever it is called) of its only entry."""
    entries = body.get("data") if isinstance(body, dict) else body
    if not isinstance(entries, list):
        return None
    named = [e for e in entries if isinstance(e, dict) and e.get("id") == model]
    if not named and single and len(entries) == 1 and isinstance(entries[0], dict):
        named = entries
    for entry in named:
        meta: dict[str, Any] = entry["meta"] if isinstance(entry.get("meta"), dict) else {}
        for value in (entry.get("max_model_len"), meta.get("n_ctx"), entry.get("loaded_context_length"),
                      entry.get("max_context_length")):
            if _positive(value):
                return _positive(value)
    return None


def from_ollama_show(body: Any) -> tuple[int | None, int | None]:
    """(the num_ctx the model is served with, if set; the model's own context length)."""
    if not isinstance(body, dict):
        return None, None
    match = re.search(r"^\s*num_ctx\s+(\d+)", str(body.get("parameters") or ""), re.MULTILINE)
    info: dict[str, Any] = body["model_info"] if isinstance(body.get("model_info"), dict) else {}
    trained = next((_positive(v) for k, v in info.items() if k.endswith(".context_length")), None)
    return (_positive(match.group(1)) if match else None), trained


def discover(family: str, base_url: str, model: str, fetch: Fetch) -> ServedWindow | None:
    """Ask the server what window it serves `model` with; None when it does not say or cannot be reached."""
    root = server_root(base_url)

    def ask(method: str, url: str, body: dict[str, Any] | None = None) -> Any:
        try:
            return fetch(method, url, body)
        except Exception:  # noqa: BLE001 - a server that does not say (404, not JSON, down) leaves the catalogue
            return None

    if family == "ollama":
        served, trained = from_ollama_show(ask("POST", f"{root}/api/show", {"model": model}))
        if served:
            return ServedWindow(served, "served by Ollama (num_ctx of the model)")
        if trained:
            return ServedWindow(min(trained, OLLAMA_DEFAULT_CONTEXT),
                                f"Ollama's default num_ctx, {OLLAMA_DEFAULT_CONTEXT:,}, assumed; the model supports "
                                f"{trained:,}",
                                "Ollama cuts longer prompts silently. If `ollama serve` runs with a larger "
                                "OLLAMA_CONTEXT_LENGTH (its API does not report it), or the model has PARAMETER num_ctx "
                                "in a Modelfile, set the agent's window to match")
        return None
    if family == "llamacpp":
        tokens = from_llamacpp_props(ask("GET", f"{root}/props"))
        if tokens:
            return ServedWindow(tokens, "served by llama.cpp (/props n_ctx)")
    if family == "lmstudio":
        tokens = from_models_list(ask("GET", f"{root}/api/v0/models"), model)
        if tokens:
            return ServedWindow(tokens, "served by LM Studio (/api/v0/models)")
    tokens = from_models_list(ask("GET", f"{base_url.rstrip('/')}/models"), model, single=family == "llamacpp")
    if tokens:
        return ServedWindow(tokens, f"served by the server (/v1/models of {root})")
    return None
