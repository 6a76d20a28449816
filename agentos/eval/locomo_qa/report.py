"""The QA report: accuracy with 95% Wilson intervals per category and side, tokens and latency per question, and
what consolidation did; as a dict (written with --json) and as a printed table."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from agentos.eval.conversations import CATEGORIES
from agentos.eval.locomo_qa.options import Options
from agentos.eval.locomo_qa.results import Answer, Conversation, Grade

Z95 = 1.959964
CELL = 29  # the width of one side's cell: n, accuracy, [low, high]


def wilson(correct: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion (95% by default); (0, 1) when there is nothing to go on."""
    if n == 0:
        return 0.0, 1.0
    p = correct / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    low = 0.0 if correct == 0 else max(0.0, centre - half)  # exact at the ends, where rounding would miss p
    high = 1.0 if correct == n else min(1.0, centre + half)
    return low, high


def percentile(values: Sequence[float], p: float) -> float:
    """The nearest-rank percentile (p in 0-100); 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def accuracy(grades: Sequence[Grade]) -> dict[str, Any]:
    """Accuracy over the graded answers, with its 95% Wilson interval and the count left ungraded."""
    graded = [g for g in grades if g.correct is not None]
    correct = sum(1 for g in graded if g.correct)
    low, high = wilson(correct, len(graded))
    return {"n": len(graded), "correct": correct, "ungraded": len(grades) - len(graded),
            "accuracy": correct / len(graded) if graded else None, "low": low, "high": high}


def side(pairs: Sequence[tuple[int, Answer, Grade]], categories: Sequence[int]) -> dict[str, Any]:
    """One side's figures: accuracy per category and overall, tokens and latency per question."""
    answers = [a for _, a, _ in pairs]
    grades = [g for _, _, g in pairs]
    n = max(1, len(pairs))
    return {
        "accuracy": {**{str(c): accuracy([g for cat, _, g in pairs if cat == c]) for c in categories},
                     "overall": accuracy(grades)},
        "tokens_per_question": {"answer": sum(a.input_tokens + a.output_tokens for a in answers) / n,
                                "answer_input": sum(a.input_tokens for a in answers) / n,
                                "answer_output": sum(a.output_tokens for a in answers) / n,
                                "judge": sum(g.input_tokens + g.output_tokens for g in grades) / n},
        "latency_s": {"p50": percentile([a.seconds for a in answers], 50),
                      "p95": percentile([a.seconds for a in answers], 95)},
        "failed_answers": sum(1 for a in answers if a.error),
        "ungraded": sum(1 for g in grades if g.correct is None),
        "ungraded_reasons": sorted({g.error or "" for g in grades if g.correct is None}),
    }


def build_report(options: Options, done: Sequence[Conversation]) -> dict[str, Any]:
    """The whole report, as printed and as written with --json."""
    rows = [r for c in done for r in c.rows]
    categories = [c for c in options.categories if any(r.category == c for r in rows)]
    baseline = None
    if options.baseline:
        baseline = side([(r.category, r.baseline, r.baseline_grade) for r in rows
                         if r.baseline is not None and r.baseline_grade is not None], categories)
    return {
        "suite": "locomo-qa",
        "file": options.path,
        "models": {"answer": options.model, "facts": options.fact_model or options.model,
                   "judge": options.judge or options.model},
        "categories": list(options.categories),
        "conversations": len(done),
        "questions": len(rows),
        "agent": side([(r.category, r.agent, r.agent_grade) for r in rows], categories),
        "baseline": baseline,
        "memory": {"messages_loaded": sum(c.messages_loaded for c in done),
                   "facts_stored": sum(c.facts_stored for c in done),
                   "consolidation_s": sum(c.consolidation_s for c in done),
                   "consolidation_tokens": sum(c.consolidation_tokens for c in done),
                   "per_conversation": [{k: v for k, v in asdict(c).items() if k != "rows"} for c in done]},
        "rows": [asdict(r) for r in rows],
    }


def _cell(figures: dict[str, Any] | None) -> str:
    if not figures or figures["accuracy"] is None:
        return f"{'-':>5}".ljust(CELL)
    return f"{figures['n']:>5}  {figures['accuracy']:.3f} [{figures['low']:.3f}, {figures['high']:.3f}]"


def print_report(report: dict[str, Any]) -> None:
    """The report as a table and a few lines."""
    models, memory, agent, baseline = report["models"], report["memory"], report["agent"], report["baseline"]
    print(f"LoCoMo QA: {report['conversations']} conversation(s), {report['questions']} questions (categories "
          f"{','.join(map(str, report['categories']))}); answer {models['answer']}, facts {models['facts']}, "
          f"judge {models['judge']}")
    print(f"memory: {memory['messages_loaded']} messages loaded, {memory['facts_stored']} facts stored; "
          f"consolidation {memory['consolidation_s']:.1f} s, {memory['consolidation_tokens']:,} tokens")
    sides = ["agent (memory)", *(["full-context baseline"] if baseline else [])]
    print(f"{'accuracy, 95% Wilson':<22}" + "    ".join(f"{name:<{CELL}}" for name in sides).rstrip())
    print(f"{'category':<22}" + "    ".join(f"{'n':>5}  {'acc':<5} {'[low, high]':<16}" for _ in sides).rstrip())
    for key in [*(k for k in agent["accuracy"] if k != "overall"), "overall"]:
        label = "overall" if key == "overall" else f"{key} {CATEGORIES.get(int(key), '')}"
        other = _cell(baseline["accuracy"][key]) if baseline else ""
        print(f"{label:<22}{_cell(agent['accuracy'][key])}    {other}".rstrip())
    for name, figures in (("agent", agent), ("baseline", baseline)):
        if figures is None:
            continue
        tokens, latency = figures["tokens_per_question"], figures["latency_s"]
        print(f"{name:<9}tokens/question {tokens['answer']:,.0f} answering ({tokens['answer_input']:,.0f} in, "
              f"{tokens['answer_output']:,.0f} out) + {tokens['judge']:,.0f} judge; latency p50 {latency['p50']:.2f} s, "
              f"p95 {latency['p95']:.2f} s; failed answers {figures['failed_answers']}, ungraded {figures['ungraded']}"
              + (f" ({'; '.join(figures['ungraded_reasons'])})" if figures["ungraded"] else ""))
