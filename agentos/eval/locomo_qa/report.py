"""The QA report as a dict (printed by `table`, written with --json): per condition, per category and overall, the
mean LoCoMo F1 with its 95% bootstrap interval and, when judged, accuracy with its 95% Wilson interval; the time
and tokens per question and the failed answers; the paired F1 difference of `agent` and `search` over `none`;
what loading and consolidation did; the sample; and every row with every answer."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from agentos.eval.locomo_qa.options import Options
from agentos.eval.locomo_qa.results import Conversation, Grade, Row
from agentos.eval.locomo_qa.sampling import Pick
from agentos.eval.locomo_qa.stats import RESAMPLES, bootstrap, paired, percentile, wilson

COMPARED = ("agent", "search")  # each compared with `none`, question by question


def accuracy(grades: Sequence[Grade]) -> dict[str, Any]:
    """Accuracy over the graded answers, with its 95% Wilson interval and the count left ungraded."""
    graded = [g for g in grades if g.correct is not None]
    correct = sum(1 for g in graded if g.correct)
    low, high = wilson(correct, len(graded))
    return {"n": len(graded), "correct": correct, "ungraded": len(grades) - len(graded),
            "accuracy": correct / len(graded) if graded else None, "low": low, "high": high}


def per_category(rows: Sequence[Row], categories: Sequence[int], figure: Any) -> dict[str, Any]:
    """`figure(rows)` for each category's rows and for all of them ('overall')."""
    return {**{str(c): figure([r for r in rows if r.category == c]) for c in categories}, "overall": figure(rows)}


def condition(name: str, rows: Sequence[Row], categories: Sequence[int], seed: int) -> dict[str, Any]:
    """One condition's figures over its rows."""
    answers = [r.answers[name] for r in rows]
    seconds = [a.seconds for a in answers]
    grades = [r.grades[name] for r in rows if name in r.grades]
    n = max(1, len(rows))
    judged = bool(grades)
    figures: dict[str, Any] = {
        "f1": per_category(rows, categories, lambda some: bootstrap([r.f1[name] for r in some], seed)),
        "judge": per_category(rows, categories, lambda some: accuracy([r.grades[name] for r in some]))
        if judged else None,
        "seconds_per_question": {"p50": percentile(seconds, 50), "mean": sum(seconds) / n,
                                 "p95": percentile(seconds, 95)},
        "tokens_per_question": {"answer": sum(a.input_tokens + a.output_tokens for a in answers) / n,
                                "answer_input": sum(a.input_tokens for a in answers) / n,
                                "answer_output": sum(a.output_tokens for a in answers) / n,
                                "judge": sum(g.input_tokens + g.output_tokens for g in grades) / n},
        "failed_answers": sum(1 for a in answers if a.error),
        "failures": sorted({a.error for a in answers if a.error})[:5],
        "ungraded": sum(1 for g in grades if g.correct is None),
        "ungraded_reasons": sorted({g.error or "" for g in grades if g.correct is None}),
    }
    if name in ("search", "gold"):  # how often the prompt held a turn the question cites
        held = [bool(set(r.answers[name].context) & set(r.evidence)) for r in rows if r.evidence]
        figures["evidence_given"] = sum(held) / len(held) if held else None
    return figures


def differences(rows: Sequence[Row], conditions: Sequence[str], categories: Sequence[int],
                seed: int) -> dict[str, Any]:
    """The paired F1 difference of `agent` and of `search` over `none` (each question's own difference), per
    category and overall, with 95% paired-bootstrap intervals; empty without `none`."""
    if "none" not in conditions:
        return {}
    return {f"{name}-none": per_category(rows, categories,
                                         lambda some, name=name: paired([r.f1[name] for r in some],
                                                                        [r.f1["none"] for r in some], seed))
            for name in COMPARED if name in conditions}


def build_report(options: Options, done: Sequence[Conversation],
                 picks: Sequence[Pick] | None = None) -> dict[str, Any]:
    """The whole report, as printed and as written with --json; `picks` is the sample, when one was drawn."""
    rows = [r for c in done for r in c.rows]
    categories = [c for c in options.categories if any(r.category == c for r in rows)]
    return {
        "suite": "locomo-qa",
        "file": options.path,
        "models": {"answer": options.model, "facts": (options.fact_model or options.model) if options.facts else None,
                   "judge": (options.judge or options.model) if options.judging else None},
        "categories": list(options.categories),
        "conditions": list(options.conditions),
        "window": options.window,
        "prompts": options.prompts,
        "sample": None if picks is None else {
            "n": len(picks), "seed": options.seed, "stratified_by": "category",
            "questions": [{"conversation": p.conversation, "index": p.index, "category": p.category}
                          for p in picks]},
        "bootstrap": {"resamples": RESAMPLES, "seed": options.seed, "interval": "95% percentile"},
        "conversations": len(done),
        "questions": len(rows),
        "results": {name: condition(name, rows, categories, options.seed) for name in options.conditions},
        "differences": differences(rows, options.conditions, categories, options.seed),
        "memory": {"facts": options.facts,
                   "messages_loaded": sum(c.messages_loaded for c in done),
                   "facts_stored": sum(c.facts_stored for c in done),
                   "load_s": sum(c.load_s for c in done),
                   "consolidation_s": sum(c.consolidation_s for c in done),
                   "consolidation_tokens": sum(c.consolidation_tokens for c in done),
                   "per_conversation": [{k: v for k, v in asdict(c).items() if k != "rows"} for c in done]},
        "rows": [asdict(r) for r in rows],
    }
