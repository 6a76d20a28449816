"""What one QA run evaluates (`Options`) and the models it asks (`Models`), resolved and checked up front.

The conditions (`CONDITIONS`), each a way of answering the same questions with the same model and wording:
`agent` the agent's turn, searching its memory with its tools; `search` agentos's recall search of the question
(the agent's default paths, top 10) given in the prompt, one call; `none` the question alone; `gold` the question's
evidence turns given in the prompt, one call (the model's upper bound); `full` the whole transcript, one call.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentos.errors import AgentOSError, ConfigError
from agentos.eval.models import resolve
from agentos.messages import Message
from agentos.providers.base import ModelRequest, Provider, complete
from agentos.providers.scripted import ScriptedProvider

DEFAULT_CATEGORIES = (1, 2, 3, 4)
CONDITIONS = ("agent", "search", "none", "gold", "full")
DEFAULT_CONDITIONS = ("agent", "full")
NO_JUDGE = "none"  # --judge none: no judge, LoCoMo F1 alone


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
    conditions: tuple[str, ...] = DEFAULT_CONDITIONS
    embedder: str = "none"
    facts: bool = True  # consolidate the conversation into facts before the questions (--no-facts: recall only)
    sample: int | None = None  # a stratified sample of this many questions
    seed: int = 0  # the sample's seed, and the bootstrap's
    conversations: tuple[str, ...] | None = None  # only these conversations (by sample_id)
    window: int | None = None  # the agents' context window (e.g. a local server's 4,096)
    prompts: str = "standard"  # the agents' prompt set: standard, or compact (shorter, for a small model's window)

    @property
    def judging(self) -> bool:
        return self.judge != NO_JUDGE

    @property
    def baseline(self) -> bool:
        """Whether the full-context condition runs (what --no-baseline turns off)."""
        return "full" in self.conditions


@dataclass
class Models:
    """The providers of one run: answering (every condition), consolidation (None without facts), judging (None
    without a judge)."""

    answer: Provider
    facts: Provider | None
    judge: Provider | None


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
    """Resolve and check the models the run asks (a spec used twice is one provider)."""
    specs = {"answer": options.model}
    if options.facts:
        specs["facts"] = options.fact_model or options.model
    if options.judging:
        specs["judge"] = options.judge or options.model
    made: dict[str, Provider] = {}
    for spec in dict.fromkeys(specs.values()):
        try:
            made[spec] = resolve(spec)
        except AgentOSError as exc:
            raise ConfigError(f"the model {spec} cannot be used: {exc}") from exc
        check_reachable(spec, made[spec])
    return Models(answer=made[specs["answer"]], facts=made[specs["facts"]] if "facts" in specs else None,
                  judge=made[specs["judge"]] if "judge" in specs else None)
