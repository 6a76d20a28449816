"""What the LoCoMo retrieval eval scores: one configuration's results per question, the paired bootstrap, the tables."""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from agentos.eval.conversations import CATEGORIES
from agentos.eval.locomo_qa.stats import bootstrap, paired, percentile

K = 10
ASKED = (1, 2, 3, 4)  # the categories scored overall (5, adversarial, has no answer to find)


def score(ranked: list[str], evidence: set[str]) -> dict[str, float]:
    """hit@1/5/10, the share of the evidence in the top K, and the reciprocal rank of the first evidence turn."""
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
    """One way of searching (the paths fused, their weights) and what it scored, question by question in the order
    asked; every configuration of a run is asked the same questions in the same order."""

    paths: tuple[str, ...] | None  # None: the agent's default paths
    weights: dict[str, float] | None = None  # None: the default weights
    name: str | None = None  # a label of its own
    kinds: list[int] = field(default_factory=list)
    folds: list[int] = field(default_factory=list)
    results: list[dict[str, float]] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        paths = "+".join(self.paths) if self.paths else "default"
        return paths + (" " + ",".join(f"{k}={v:g}" for k, v in self.weights.items()) if self.weights else "")

    def add(self, kind: int, fold: int, result: dict[str, float], latency_ms: float, tokens: int = 0) -> None:
        self.kinds.append(kind)
        self.folds.append(fold)
        self.results.append(result)
        self.latencies.append(latency_ms)
        self.tokens.append(tokens)

    @property
    def scores(self) -> dict[int, list[dict[str, float]]]:
        """Results by question category."""
        out: dict[int, list[dict[str, float]]] = {}
        for kind, result in zip(self.kinds, self.results):
            out.setdefault(kind, []).append(result)
        return out

    def overall(self) -> list[dict[str, float]]:
        """Results of categories 1-4, in the order asked (paired across configurations)."""
        return [r for kind, r in zip(self.kinds, self.results) if kind in ASKED]

    def held(self, fold: int) -> Config:
        """The same configuration with only the questions of `fold`."""
        keep = [i for i, f in enumerate(self.folds) if f == fold]
        return Config(self.paths, self.weights, self.name, [self.kinds[i] for i in keep], [fold] * len(keep),
                      [self.results[i] for i in keep], [self.latencies[i] for i in keep], [self.tokens[i] for i in keep])

    def mean(self, key: str = "hit@10") -> float:
        overall = self.overall()
        return statistics.mean(r[key] for r in overall) if overall else 0.0


def paired_gain(ours: list[float], theirs: list[float]) -> tuple[float, float, float]:
    """Mean of ours - theirs over the same questions, with a 95% paired-bootstrap interval (seed 0)."""
    gain = paired(ours, theirs, seed=0)
    return (gain["mean"], gain["low"], gain["high"]) if gain["n"] else (0.0, 0.0, 0.0)


def gain_over(config: Config, base: Config, key: str = "hit@10") -> tuple[float, float, float]:
    """`config`'s gain over `base` on the same questions (categories 1-4), with its 95% interval."""
    return paired_gain([r[key] for r in config.overall()], [r[key] for r in base.overall()])


def interval(values: list[float]) -> str:
    """'0.704 [0.681, 0.726]': a mean and its 95% bootstrap interval."""
    found = bootstrap(values, seed=0)
    return f"{found['mean']:.3f} [{found['low']:.3f}, {found['high']:.3f}]" if found["n"] else "-"


def table(config: Config) -> None:
    """hit@1/5/10, evidence recall and MRR by category and overall."""
    print(f"{'category':<18}{'n':>5}{'hit@1':>8}{'hit@5':>8}{'hit@10':>8}{'ev.rec@10':>11}{'MRR':>7}")
    scores = config.scores
    for cat in sorted(scores):
        _line(f"{cat} {CATEGORIES.get(cat, '')}", scores[cat])
    _line(f"overall ({asked_label(scores)})", config.overall())


def asked_label(kinds: Iterable[int]) -> str:
    """The scored categories among `kinds`: "1-4" when all of them, else the numbers ("3", "1,3")."""
    asked = sorted(set(kinds) & set(ASKED))
    return "1-4" if asked == list(ASKED) else ",".join(map(str, asked)) or "none of 1-4"


def ablation(configs: list[Config], base: Config, title: str) -> None:
    """hit@10 per category and overall (with its 95% interval) for every configuration, with its gain over `base`
    (keywords alone; 95% paired bootstrap), MRR, search latency and the tokens of the first page the model would
    see."""
    print(f"\n{title}")
    width = max(len(c.label) for c in configs) + 2
    head = "".join(f"{CATEGORIES[c][:10]:>11}" for c in ASKED)
    print(f"{'paths':<{width}}{head}{'overall [95%]':>24}{'gain [95%]':>25}{'MRR':>7}{'p50 ms':>8}{'p95 ms':>8}"
          f"{'tokens':>8}")
    for config in configs:
        scores = config.scores
        cats = "".join(f"{statistics.mean(r['hit@10'] for r in scores[c]):>11.3f}" if scores.get(c) else f"{'-':>11}"
                       for c in ASKED)
        gain, low, high = gain_over(config, base)
        print(f"{config.label:<{width}}{cats}{interval([r['hit@10'] for r in config.overall()]):>24}"
              f"{f'{gain:+.3f} [{low:+.3f}, {high:+.3f}]':>25}{config.mean('mrr'):>7.3f}"
              f"{statistics.median(config.latencies):>8.1f}{percentile(config.latencies, 95):>8.1f}"
              f"{statistics.mean(config.tokens):>8.0f}")


def compare(hybrid: list[dict[str, float]], keyword: list[dict[str, float]]) -> None:
    """How search with vectors differs from the same search without them, on the same questions."""
    if not hybrid:
        return
    print("with vectors, model stages and cross vs without (the same paths otherwise), same questions, gain with 95% "
          "paired-bootstrap interval:")
    for key, label in (("hit@10", "hit@10"), ("recall@10", "ev.rec@10"), ("mrr", "MRR")):
        mean, low, high = paired_gain([r[key] for r in hybrid], [r[key] for r in keyword])
        print(f"  {label:<10} {mean:+.3f}  [{low:+.3f}, {high:+.3f}]")
    only_hybrid = sum(1 for h, k in zip(hybrid, keyword) if h["hit@10"] and not k["hit@10"])
    only_keyword = sum(1 for h, k in zip(hybrid, keyword) if k["hit@10"] and not h["hit@10"])
    print(f"  evidence in the top 10 with them only: {only_hybrid} questions; without only: {only_keyword}")


def _line(label: str, scores: list[dict[str, Any]]) -> None:
    if not scores:
        return
    mean = {k: statistics.mean(s[k] for s in scores) for k in scores[0]}
    print(f"{label:<18}{len(scores):>5}{mean['hit@1']:>8.3f}{mean['hit@5']:>8.3f}{mean['hit@10']:>8.3f}"
          f"{mean['recall@10']:>11.3f}{mean['mrr']:>7.3f}")
