"""LoCoMo retrieval: one recall message per turn (session date as timestamp, dia_id kept in the id).

Every question goes through `Recall.search`, the function behind `conversation_search`.
"""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from agentos.agent.agent import Agent
from agentos.agent.state import AgentSettings, SearchSettings
from agentos.embedders.base import NoEmbedder
from agentos.embedders.onnx_models import INSTALL
from agentos.errors import AgentOSError
from agentos.eval.conversations import (
    CATEGORIES,
    DatasetError,
    agent_name,
    category,
    evidence_ids,
    read_samples,
    turn_messages,
)
from agentos.eval.models import resolve
from agentos.memory.recall import RecallTier
from agentos.memory.tier import TierContext
from agentos.messages import Message
from agentos.providers.scripted import ScriptedProvider
from agentos.retrieval.cross_encoder import cross_available
from agentos.retrieval.recall_paths import MODEL_PATHS, PATHS, STAGES
from agentos.storage import Store
from agentos.tokens import EstimateCounter

K = 10


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


def score(ranked: list[str], evidence: set[str]) -> dict[str, float]:
    first = next((i for i, d in enumerate(ranked) if d in evidence), None)
    return {
        "hit@1": float(first is not None and first < 1),
        "hit@5": float(first is not None and first < 5),
        "hit@10": float(first is not None and first < 10),
        "recall@10": len(evidence & set(ranked[:K])) / len(evidence),
        "mrr": 1.0 / (first + 1) if first is not None else 0.0,
    }


@dataclass
class Config:
    """One way of searching: the paths fused, and what it scored."""

    paths: tuple[str, ...] | None  # None: the agent's default paths
    scores: dict[int, list[dict[str, float]]] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)

    @property
    def label(self) -> str:
        return "+".join(self.paths) if self.paths else "default"

    def overall(self) -> list[dict[str, float]]:
        return [r for c in (1, 2, 3, 4) for r in self.scores.get(c, [])]


def ablation_configs(available: list[str]) -> list[Config]:
    """Each path alone (a stage that reorders what others found, with keywords), then cumulative in PATHS order."""
    alone = [("keyword", p) if p in STAGES else (p,) for p in available]
    cumulative = [tuple(available[: i + 1]) for i in range(1, len(available))]
    return [Config(paths) for paths in dict.fromkeys(alone + cumulative)]  # keyword+speakers is both: once


def compact(store: Store, agent: Agent) -> None:
    """Compact every table the conversation wrote and fold its rows into the indexes, so that figures do not
    depend on whether background maintenance has run."""
    store.wait_for_maintenance()  # its own compaction first (two at once conflict, and one of them retries)
    for table in ["messages", *agent.tiers.table_names()]:
        store.db.optimize(table)


def run(path: str, *, embedder: str = "none", limit: int | None = None, home: str | None = None,
        paths: tuple[str, ...] | None = None, ablation: bool = False, search_model: str | None = None) -> int:
    """Load every conversation, ask every question through recall search, print the figures. `search_model`
    (a model spec) is the model the rewrite and rerank paths ask; without one they are left out."""
    try:
        data = read_samples(path, limit)
    except DatasetError as exc:
        print(f"locomo: {exc}", file=sys.stderr)
        return 2
    available = [p for p in PATHS if (p != "vector" or embedder != "none") and p != "facts"  # no consolidation here
                 and (p not in MODEL_PATHS or search_model) and (p != "cross" or "cross" in (paths or ()))]
    if "cross" in available and not cross_available():
        print(f"the cross stage needs the bge extra: {INSTALL}", file=sys.stderr)
        return 2
    default = tuple(p for p in SearchSettings().paths if p in available)  # what agents search with by default
    default += MODEL_PATHS if search_model else ()
    provider = resolve(search_model) if search_model else None
    configs = ablation_configs(available) if ablation else [Config(paths or default)]
    baseline: dict[int, list[dict[str, float]]] = {}  # the same questions without vectors, when an embedder is set
    counter = EstimateCounter()
    load_s = 0.0
    left_out = uncited = 0  # questions that cannot be scored; those whose cited turns the conversation lacks
    root = Path(home) if home else Path(tempfile.mkdtemp(prefix="agentos-locomo-"))
    store = Store(root / "db")
    try:
        for sample in data:
            messages = turn_messages(sample)
            if not messages:
                print(f"locomo: {sample['sample_id']} has no turns; its questions are not asked", file=sys.stderr)
                continue
            t = time.perf_counter()
            agent = load_conversation(store, sample, embedder, messages)
            compact(store, agent)
            load_s += time.perf_counter() - t
            prefix = f"{sample['sample_id']}|"
            turns = {m.id.removeprefix(prefix) for m in messages}
            now = max(m.created_at for m in messages)  # questions are asked after the conversation
            if provider is not None:
                agent.roles.use("search", provider)
            # the same paths, less vectors, the model's stages and the cross-encoder: a baseline when any is used
            without = tuple(p for p in configs[0].paths or () if p not in ("vector", "cross", *MODEL_PATHS))
            keywords = None if ablation or without == configs[0].paths else keyword_recall(store, agent)
            recall = agent.tier(RecallTier)
            for qa in sample["qa"]:
                asked = question_of(qa, turns)
                if asked is None:
                    left_out += 1
                    continue
                question, kind, evidence = asked
                uncited += not evidence & turns
                for config in configs:
                    t = time.perf_counter()
                    page = recall.search(question, page_size=K, paths=config.paths, now=now)
                    config.latencies.append((time.perf_counter() - t) * 1000)
                    config.tokens.append(sum(counter.count(h.text) for h in page.hits[:5]))  # the first page shown
                    ranked = [h.id.removeprefix(prefix) for h in page.hits]
                    config.scores.setdefault(kind, []).append(score(ranked, evidence))
                if keywords is not None:
                    hits = keywords.search(question, page_size=K, paths=without, now=now).hits
                    alone = [h.id.removeprefix(prefix) for h in hits]
                    baseline.setdefault(kind, []).append(score(alone, evidence))
    except AgentOSError as exc:
        print(f"locomo: {exc}", file=sys.stderr)
        return 2
    finally:
        store.close()
        if not home:
            shutil.rmtree(root, ignore_errors=True)
    main = configs[0] if not ablation else configs[-1]
    latencies = main.latencies
    if not latencies:
        print(f"locomo: no question in {path} names the turns that answer it ('evidence': ['D1:3', ...]), so nothing "
              "can be scored", file=sys.stderr)
        return 2
    print(f"LoCoMo retrieval: {len(data)} conversations, embedder {embedder!r}, paths {main.label}, load {load_s:.1f} s; "
          f"search p50 {statistics.median(latencies):.1f} ms, p95 {sorted(latencies)[int(0.95 * len(latencies))]:.1f} ms")
    _table(main)
    if left_out or uncited:
        print(f"questions left out (no text, category or cited turn): {left_out}; asked but citing no turn of their "
              f"conversation (scored as misses): {uncited}")
    if ablation:
        _ablation(configs)
    if baseline:
        _compare(main.overall(), [r for c in (1, 2, 3, 4) for r in baseline.get(c, [])])
    return 0


def _table(config: Config) -> None:
    print(f"{'category':<18}{'n':>5}{'hit@1':>8}{'hit@5':>8}{'hit@10':>8}{'ev.rec@10':>11}{'MRR':>7}")
    for cat in sorted(config.scores):
        _line(f"{cat} {CATEGORIES.get(cat, '')}", config.scores[cat])
    _line("overall (1-4)", config.overall())


def _ablation(configs: list[Config]) -> None:
    """hit@10 per category and overall for every configuration, with its gain over keywords alone (95% paired
    bootstrap), search latency and the tokens of the first page the model would see."""
    base = next(c for c in configs if c.paths == ("keyword",))
    print("\nablation: each path alone, then cumulative; hit@10 (gain over keyword alone, 95% paired bootstrap)")
    head = "".join(f"{CATEGORIES[c][:10]:>11}" for c in (1, 2, 3, 4))
    print(f"{'paths':<44}{head}{'overall':>9}{'gain [95%]':>24}{'MRR':>7}{'p50 ms':>8}{'p95 ms':>8}{'tokens':>8}")
    for config in configs:
        cats = "".join(f"{statistics.mean(r['hit@10'] for r in config.scores.get(c, [])) if config.scores.get(c) else 0:>11.3f}"
                       for c in (1, 2, 3, 4))
        overall = config.overall()
        hit = statistics.mean(r["hit@10"] for r in overall)
        gain, low, high = paired_gain([r["hit@10"] for r in overall], [r["hit@10"] for r in base.overall()])
        mrr = statistics.mean(r["mrr"] for r in overall)
        lat = sorted(config.latencies)
        print(f"{config.label:<44}{cats}{hit:>9.3f}{f'{gain:+.3f} [{low:+.3f}, {high:+.3f}]':>24}{mrr:>7.3f}"
              f"{statistics.median(lat):>8.1f}{lat[int(0.95 * len(lat))]:>8.1f}{statistics.mean(config.tokens):>8.0f}")


def paired_gain(ours: list[float], theirs: list[float], resamples: int = 2000) -> tuple[float, float, float]:
    """Mean of ours - theirs over the same questions, with a 95% paired-bootstrap interval."""
    diff = np.asarray(ours, dtype=float) - np.asarray(theirs, dtype=float)
    picks = np.random.default_rng(0).integers(0, len(diff), size=(resamples, len(diff)))
    low, high = np.percentile(diff[picks].mean(axis=1), [2.5, 97.5])
    return float(diff.mean()), float(low), float(high)


def _compare(hybrid: list[dict[str, float]], keyword: list[dict[str, float]]) -> None:
    """How search with vectors differs from the same search without them, on the same questions (categories 1-4)."""
    if not hybrid:
        return
    print("with vectors, model stages and cross vs without (the same paths otherwise), same questions (1-4), gain with 95% "
          "paired-bootstrap interval:")
    for key, label in (("hit@10", "hit@10"), ("recall@10", "ev.rec@10"), ("mrr", "MRR")):
        mean, low, high = paired_gain([r[key] for r in hybrid], [r[key] for r in keyword])
        print(f"  {label:<10} {mean:+.3f}  [{low:+.3f}, {high:+.3f}]")
    only_hybrid = sum(1 for h, k in zip(hybrid, keyword) if h["hit@10"] and not k["hit@10"])
    only_keyword = sum(1 for h, k in zip(hybrid, keyword) if k["hit@10"] and not h["hit@10"])
    print(f"  evidence in the top 10 with them only: {only_hybrid} questions; without only: {only_keyword}")


def _line(label: str, scores: list[dict[str, float]]) -> None:
    if not scores:
        return
    mean = {k: statistics.mean(s[k] for s in scores) for k in scores[0]}
    print(f"{label:<18}{len(scores):>5}{mean['hit@1']:>8.3f}{mean['hit@5']:>8.3f}{mean['hit@10']:>8.3f}"
          f"{mean['recall@10']:>11.3f}{mean['mrr']:>7.3f}")
