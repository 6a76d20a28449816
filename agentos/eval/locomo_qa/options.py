"""What one QA run evaluates (`Options`) and the three models it asks (`Models`), resolved and checked up front."""

from __future__ import annotations

from dataclasses import dataclass

from agentos.errors import AgentOSError, ConfigError
from agentos.eval.models import resolve
from agentos.messages import Message
from agentos.providers.base import ModelRequest, Provider, complete
from agentos.providers.scripted import ScriptedProvider

DEFAULT_CATEGORIES = (1, 2, 3, 4)


@dataclass
class Options:
    """What to evaluate, and how."""

    path: str
    model: str
    judge: str | None = None
    fact_model: str | None = None
    limit: int | None = None
    questions: int | None = None
    categories: tuple[int, ...] = DEFAULT_CATEGORIES
    home: str | None = None
    json_path: str | None = None
    baseline: bool = True
    embedder: str = "none"


@dataclass
class Models:
    """The providers of one run: answering (agent and baseline), consolidation, judging."""

    answer: Provider
    facts: Provider
    judge: Provider


def check_reachable(spec: str, provider: Provider) -> None:
    """One tiny call to a real model, so a missing key or a server that is not running is said before any work."""
    if isinstance(provider, ScriptedProvider):
        return
    request = ModelRequest(system_static="Reply with the word OK.", system_dynamic="",
                           messages=[Message.user("OK?")], max_output_tokens=16)
    try:
        complete(provider, request)
    except AgentOSError as exc:
        raise ConfigError(f"the model {spec} cannot be used: {exc}") from exc


def open_models(options: Options) -> Models:
    """Resolve and check the three models (a spec used twice is one provider)."""
    specs = {"answer": options.model, "facts": options.fact_model or options.model,
             "judge": options.judge or options.model}
    made: dict[str, Provider] = {}
    for spec in dict.fromkeys(specs.values()):
        try:
            made[spec] = resolve(spec)
        except AgentOSError as exc:
            raise ConfigError(f"the model {spec} cannot be used: {exc}") from exc
        check_reachable(spec, made[spec])
    return Models(answer=made[specs["answer"]], facts=made[specs["facts"]], judge=made[specs["judge"]])
