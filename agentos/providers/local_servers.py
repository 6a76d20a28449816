"""Local model servers as a user meets them: what each offers (`agentos models`), and whether a model exists
before an agent is made for it (`agentos new --model ollama/...`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from agentos.config import configured_base_url
from agentos.errors import ConfigError
from agentos.providers.models import LOCAL_FAMILIES, SERVERS, parse_spec
from agentos.providers.served_window import is_llama_cpp_python, server_root

# A server on this machine answers at once when idle; llama-cpp-python answers nothing while it generates, so a
# server that does not answer in time is reported as busy, not as unreachable.
PROBE_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class Offer:
    """What one server answered: its models, or why it could not be asked."""

    family: str
    base_url: str
    models: list[str]
    error: str | None = None
    busy: bool = False  # it was reached but did not answer in time

    def spec(self, model: str) -> str:
        """The model spec that reaches `model` on this server (with @URL when it is not the family's default)."""
        default = SERVERS[self.family].base_url
        return f"{self.family}/{model}" + ("" if self.base_url == default else f"@{self.base_url}")


def _get(url: str) -> Any:
    import httpx2

    response = httpx2.get(url, timeout=PROBE_TIMEOUT_S)
    response.raise_for_status()
    return response.json()


def _reason(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    return "nothing is listening there" if "refused" in text.lower() else text.splitlines()[0][:160]


def _llama_server(body: Any) -> bool:
    """Whether a `/v1/models` answer is a llama.cpp server's (llama-server, or llama-cpp-python's server)."""
    entries = body.get("data") if isinstance(body, dict) else None
    owned = isinstance(entries, list) and bool(entries) and all(
        isinstance(e, dict) and e.get("owned_by") == "llamacpp" for e in entries)
    return owned or is_llama_cpp_python(body)


def _short_names(names: list[str]) -> list[str]:
    """A llama.cpp server that serves one model answers to any model name, and lists the model by its file's path
    when started without an alias: the file's name without `.gguf` says the same in a spec."""
    if len(names) == 1 and names[0].lower().endswith(".gguf"):
        return [PurePath(names[0]).stem]
    return names


def offer(family: str, base_url: str) -> Offer:
    """Ask one server which models it offers (Ollama: /api/tags; others: the OpenAI-compatible /v1/models). A server
    asked as merely OpenAI-compatible that is llama.cpp's or llama-cpp-python's is offered as `llamacpp`."""
    import httpx2

    base_url = base_url.rstrip("/")
    try:
        if family == "ollama":
            names = [m.get("name") or m.get("model") for m in _get(f"{server_root(base_url)}/api/tags").get("models", [])]
        else:
            listed = _get(f"{base_url}/models")
            names = [m.get("id") for m in listed.get("data", [])]
            if family in ("llamacpp", "openai-compatible") and _llama_server(listed):
                family, names = "llamacpp", _short_names([n for n in names if isinstance(n, str)])
    except httpx2.TimeoutException:
        return Offer(family, base_url, [], f"it did not answer within {PROBE_TIMEOUT_S:g} s (llama-cpp-python answers "
                                           "nothing while it generates); try again when it is idle", busy=True)
    except Exception as exc:  # noqa: BLE001 - a server that is down or says nothing useful: report why
        return Offer(family, base_url, [], _reason(exc))
    return Offer(family, base_url, sorted(n for n in names if isinstance(n, str)))


def offers(base_url: str | None = None, family: str | None = None) -> list[Offer]:
    """What the local servers at their default addresses offer, or the one at `base_url`."""
    if base_url:
        return [offer(family or "openai-compatible", base_url)]
    families = [family] if family else [f for f in sorted(LOCAL_FAMILIES) if SERVERS[f].base_url]
    return [offer(f, SERVERS[f].base_url or "") for f in families]


def check_model(spec: str) -> str | None:
    """For an Ollama spec: an error when the server has no such model (saying how to pull it), None when it has
    it; a warning text when the server cannot be asked. Other specs: None."""
    parsed = parse_spec(spec)
    if parsed.family != "ollama":
        return None
    base_url = parsed.base_url or configured_base_url("ollama") or SERVERS["ollama"].base_url or ""
    found = offer("ollama", base_url)
    if found.error:
        return (f"could not ask Ollama at {server_root(base_url)} whether it has {parsed.model!r} ({found.error}); "
                f"start it with: ollama serve")
    wanted = parsed.model if ":" in parsed.model else f"{parsed.model}:latest"
    if parsed.model not in found.models and wanted not in found.models:
        have = ", ".join(found.models) or "none yet"
        raise ConfigError(f'Ollama at {server_root(base_url)} has no model "{parsed.model}". Pull it first with: '
                          f"ollama pull {parsed.model}   (models it has: {have})")
    return None
