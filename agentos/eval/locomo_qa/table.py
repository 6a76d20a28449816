"""The QA report printed: a header, LoCoMo F1 per category and condition, judge accuracy when judged, the paired
differences over `none`, and per condition the time and tokens per question."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentos.eval.conversations import CATEGORIES

CELL = 22  # one condition's cell: mean [low, high]
LABEL = 20


def f1_cell(figures: dict[str, Any]) -> str:
    if figures["mean"] is None:
        return "-".ljust(CELL)
    return f"{figures['mean']:.3f} [{figures['low']:.3f}, {figures['high']:.3f}]".ljust(CELL)


def difference_cell(figures: dict[str, Any]) -> str:
    if figures["mean"] is None:
        return "-".ljust(CELL + 3)
    return f"{figures['mean']:+.3f} [{figures['low']:+.3f}, {figures['high']:+.3f}]".ljust(CELL + 3)


def accuracy_cell(figures: dict[str, Any]) -> str:
    if figures["accuracy"] is None:
        return "-".ljust(CELL)
    return f"{figures['accuracy']:.3f} [{figures['low']:.3f}, {figures['high']:.3f}]".ljust(CELL)


def grid(title: str, columns: dict[str, dict[str, Any]], cell: Callable[[dict[str, Any]], str],
         counts: dict[str, Any], width: int = CELL) -> None:
    """One table: a row per category and overall, a column per condition (or difference)."""
    print(f"\n{title}")
    print(f"{'category':<{LABEL}}{'n':>4}  " + "".join(f"{name:<{width}}" for name in columns).rstrip())
    for key in counts:
        label = "overall" if key == "overall" else f"{key} {CATEGORIES.get(int(key), '')}"
        print(f"{label:<{LABEL}}{counts[key]['n']:>4}  " + "".join(cell(c[key]) for c in columns.values()).rstrip())


def print_report(report: dict[str, Any]) -> None:
    """The report as tables and a few lines."""
    models, memory, results = report["models"], report["memory"], report["results"]
    print(f"LoCoMo QA: {report['conversations']} conversation(s), {report['questions']} questions (categories "
          f"{','.join(map(str, report['categories']))}); conditions {', '.join(report['conditions'])}; answer "
          f"{models['answer']}, facts {models['facts'] or 'none (--no-facts)'}, judge {models['judge'] or 'none'}"
          + (f"; window {report['window']:,}" if report.get("window") else ""))
    if report["sample"]:
        sample = report["sample"]
        print(f"sample: {sample['n']} questions stratified by category, seed {sample['seed']} (listed above, and in "
              "--json)")
    facts = (f"{memory['facts_stored']} facts stored; consolidation {memory['consolidation_s']:.1f} s, "
             f"{memory['consolidation_tokens']:,} tokens") if memory["facts"] else "no consolidation (--no-facts)"
    print(f"memory: {memory['messages_loaded']} messages loaded in {memory['load_s']:.1f} s; {facts}")
    if not results or not report["questions"]:
        return
    first = next(iter(results.values()))
    grid("LoCoMo F1, mean [95% bootstrap]", {n: r["f1"] for n, r in results.items()}, f1_cell, first["f1"])
    judged = {n: r["judge"] for n, r in results.items() if r["judge"]}
    if judged:
        grid("judge accuracy [95% Wilson]", judged, accuracy_cell, first["f1"])
    if report["differences"]:
        grid("F1 difference over none, same questions [95% paired bootstrap]", report["differences"],
             difference_cell, first["f1"], CELL + 3)
    print("\nper question:")
    for name, figures in results.items():
        seconds, tokens = figures["seconds_per_question"], figures["tokens_per_question"]
        judge = f" + {tokens['judge']:,.0f} judge" if figures["judge"] else ""
        given = (f"; evidence in the prompt {figures['evidence_given']:.0%}"
                 if figures.get("evidence_given") is not None else "")
        print(f"  {name:<7}time p50 {seconds['p50']:.2f} s, mean {seconds['mean']:.2f} s, p95 {seconds['p95']:.2f} s; "
              f"tokens {tokens['answer']:,.0f} ({tokens['answer_input']:,.0f} in, {tokens['answer_output']:,.0f} out)"
              f"{judge}; failed {figures['failed_answers']}"
              + (f" (e.g. {figures['failures'][0][:80]})" if figures["failures"] else "")
              + (f", ungraded {figures['ungraded']} ({'; '.join(figures['ungraded_reasons'])})"
                 if figures["ungraded"] else "") + given)
