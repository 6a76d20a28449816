"""The context window a local server really serves, asked of the server where it says.

llama.cpp answers `/props` (`default_generation_settings.n_ctx`) and `/v1/models` (`meta.n_ctx`); Ollama
answers `/api/show` (a `num_ctx` parameter, else its default, which silently cuts longer prompts); vLLM's
`/v1/models` gives `max_model_len`; LM Studio's `/api/v0/models` gives `loaded_context_length`.
llama-cpp-python's server states its window nowhere (no `/props`; its `/v1/models` entries are only
`{"id", "object", "owned_by": "me", "permissions": []}`), so it is asked with a probe: a request longer than any
window it can serve, without streaming and for one token, which it refuses after tokenizing the prompt, before
evaluating any of it ("This model's maximum context length is N tokens", a 400; its prompt cache is left as it
was). A window learnt this way, or from an overflow error (`remember`), is kept for the rest of the process.
A server that does not say, or cannot be reached, leaves the model catalogue's figure in place; `ServedWindow`
with no tokens says why, for a warning.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentos.providers.models import OLLAMA_DEFAULT_CONTEXT

DISCOVERY_TIMEOUT_S = 1.0  # per question; a server on this machine answers in milliseconds
PROBE_TIMEOUT_S = 10.0  # the probe's prompt is a few hundred kilobytes to send and tokenize (0.1 s measured)
# The probe's length in units of " 0" (each at least one token, in every tokenizer that splits digits): more than
# any window llama-cpp-python can serve by default, whose scores array (`logits_all`, on by default) takes
# window x vocabulary floats (131,072 x 32,000 is 17 GB), and more than the model catalogue's figure.
PROBE_UNITS = 131_072 + 1
_WINDOW_SAID = re.compile(r"maximum context length is (\d+)|exceed context window of (\d+)|"
                          r"available context size \((\d+) tokens\)|\bn_ctx\D{1,4}(\d+)", re.IGNORECASE)

# (method, absolute URL, JSON body, timeout in seconds) -> parsed JSON; raises on an error status
Fetch = Callable[[str, str, "dict[str, Any] | None", float], Any]
_learnt: dict[tuple[str, str], ServedWindow] = {}


@dataclass(frozen=True)
class ServedWindow:
    """A window figure and where it came from, for `agentos show` and for warnings."""

    tokens: int  # 0: not learnt (`advice` then says why)
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


def window_in_error(text: str) -> int | None:
    """The window an overflow error names (llama-cpp-python, vLLM and OpenAI: "maximum context length is N";
    llama.cpp: "available context size (N tokens)" or its n_ctx), else None."""
    match = _WINDOW_SAID.search(text)
    return _positive(next(group for group in match.groups() if group)) if match else None


def remember(base_url: str, model: str, tokens: int, source: str) -> ServedWindow:
    """Keep a window learnt from the server (by a probe or from an overflow error) for the rest of the process."""
    learnt = _learnt[(server_root(base_url), model)] = ServedWindow(tokens, source)
    return learnt


def forget() -> None:
    """Forget the windows learnt so far (a server restarted with another window; tests)."""
    _learnt.clear()


def is_llama_cpp_python(body: Any) -> bool:
    """Whether a `/v1/models` answer is llama-cpp-python's: entries of id, object, owned_by "me" and no more."""
    entries = body.get("data") if isinstance(body, dict) else None
    if not isinstance(entries, list) or not entries:
        return False
    return all(isinstance(e, dict) and e.get("owned_by") == "me" and "meta" not in e for e in entries)


def probe(base_url: str, model: str, fetch: Fetch, at_least: int = 0) -> ServedWindow | None:
    """Ask llama-cpp-python's server its window with a request too long for it (see the module's notes)."""
    units = max(PROBE_UNITS, at_least + 1)
    body = {"model": model, "messages": [{"role": "user", "content": " 0" * units}], "max_tokens": 1, "stream": False}
    try:
        fetch("POST", f"{base_url.rstrip('/')}/chat/completions", body, PROBE_TIMEOUT_S)
    except Exception as exc:  # noqa: BLE001 - the refusal is the answer; anything else says nothing
        tokens = window_in_error(str(getattr(exc, "message", "")) + " " + str(exc))
        if tokens:
            return remember(base_url, model, tokens, "served by llama-cpp-python (learnt with a probe request)")
    return None


def discover(family: str, base_url: str, model: str, fetch: Fetch, catalogue: int = 0) -> ServedWindow | None:
    """Ask the server what window it serves `model` with; None when it does not say or cannot be reached, or (for
    llama.cpp, whose default window is small) a `ServedWindow` of no tokens that says why it is not known."""
    root = server_root(base_url)
    failures: list[str] = []

    def ask(method: str, url: str, body: dict[str, Any] | None = None) -> Any:
        try:
            return fetch(method, url, body, DISCOVERY_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - a server that does not say (404, not JSON, down) leaves the catalogue
            failures.append(type(exc).__name__)
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
    listed = ask("GET", f"{base_url.rstrip('/')}/models")
    tokens = from_models_list(listed, model, single=family == "llamacpp")
    if tokens:
        return ServedWindow(tokens, f"served by the server (/v1/models of {root})")
    if family not in ("llamacpp", "openai-compatible"):
        return None
    if is_llama_cpp_python(listed):
        return _learnt.get((root, model)) or probe(base_url, model, fetch, catalogue) or ServedWindow(
            0, "", "llama-cpp-python's server states its window nowhere, and did not name it when asked with a "
                   "longer request")
    if family != "llamacpp":
        return None
    if listed is None and not any("Timeout" in kind for kind in failures):
        return None  # not reachable (or not a server that lists models): the first call will say so
    why = (f"the server at {root} did not answer within {DISCOVERY_TIMEOUT_S:g} s (busy with another request?)"
           if any("Timeout" in kind for kind in failures) else f"the server at {root} states it nowhere")
    return _learnt.get((root, model)) or ServedWindow(0, "", why)
