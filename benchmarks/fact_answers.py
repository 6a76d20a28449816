"""How often a real model's fact-consolidation answers validate: the first time, after being sent back with the
reason (a repair), or never (the batch is skipped).

A throw-away agent gets the first `--messages` turns of one LoCoMo conversation (their real dates and speakers), and
`agent.consolidate()` reads them with `--model` as the facts model, `--batch` messages per extraction call, exactly
as `agentos facts NAME consolidate` does. Every question consolidation asks (an extraction, or a decision against
similar stored facts) is counted by how many tries it took; printed per kind, with each call's median seconds:

    python benchmarks/fact_answers.py --model llamacpp/qwen2.5-coder-0.5b@http://127.0.0.1:8081/v1 \\
        --path locomo10.json --messages 48 --batch 8

`PATH` is your copy of LoCoMo's `locomo10.json` (not included: it is CC BY-NC).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections import defaultdict
from typing import Any

os.environ.setdefault("LANCEDB_LOG", "error")

from agentos import Agent  # noqa: E402
from agentos.agent.state import AgentSettings  # noqa: E402
from agentos.eval.conversations import read_samples, turn_messages  # noqa: E402
from agentos.eval.models import resolve  # noqa: E402
from agentos.memory.facts import extraction  # noqa: E402
from agentos.memory.facts.settings import FactSettings  # noqa: E402

KINDS = {"record_facts": "extraction", "decide": "decision"}


def counting(tries: dict[str, list[int | None]], seconds: dict[str, list[float]]) -> Any:
    """`FactModel._ask`, recording for each question its kind, the tries it took (None: never valid) and its time."""
    ask = extraction.FactModel._ask

    def wrapped(self: extraction.FactModel, system: str, question: str, tool: Any, check: Any) -> Any:
        kind = KINDS.get(tool.name, tool.name)
        started = time.perf_counter()
        try:
            asked = ask(self, system, question, tool, check)
        except extraction.BatchSkipped:
            tries[kind].append(None)
            raise
        finally:
            seconds[kind].append(time.perf_counter() - started)
        tries[kind].append(asked.calls)
        return asked

    return wrapped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="the facts model, e.g. llamacpp/qwen2.5-coder-1.5b@http://...")
    parser.add_argument("--path", required=True, help="LoCoMo's locomo10.json")
    parser.add_argument("--conversation", type=int, default=0, help="which conversation of the file (default 0)")
    parser.add_argument("--messages", type=int, default=48, help="how many of its turns to consolidate")
    parser.add_argument("--batch", type=int, default=8, help="messages per extraction call")
    args = parser.parse_args()
    tries: dict[str, list[int | None]] = defaultdict(list)
    seconds: dict[str, list[float]] = defaultdict(list)
    extraction.FactModel._ask = counting(tries, seconds)  # type: ignore[method-assign]
    sample = read_samples(args.path, None)[args.conversation]
    with tempfile.TemporaryDirectory() as home:
        settings = AgentSettings(facts=FactSettings(mode="batch", batch_messages=args.batch))
        agent = Agent.create("facts-probe", model="scripted/demo", settings=settings, home=home)
        try:
            agent.add_history(turn_messages(sample)[: args.messages])
            agent.roles.use("facts", resolve(args.model))
            started = time.perf_counter()
            report = agent.consolidate()
            took = time.perf_counter() - started
        finally:
            agent.close()
    print(f"{args.model}: {args.messages} messages of conversation {sample['sample_id']}, {args.batch} a batch, "
          f"in {took:.0f} s: {len(report.batches)} batches, {report.count('add')} added, "
          f"{report.count('update')} updated, {sum(1 for b in report.batches if b.skipped)} skipped")
    print("| question | asked | valid first time | after a repair | never | s / question (median) |")
    print("|---|---|---|---|---|---|")
    for kind in ("extraction", "decision"):
        done = tries.get(kind, [])
        first = sum(1 for t in done if t == 1)
        repaired = sum(1 for t in done if t is not None and t > 1)
        never = sum(1 for t in done if t is None)
        median = statistics.median(seconds[kind]) if seconds[kind] else 0.0
        print(f"| {kind} | {len(done)} | {first} | {repaired} | {never} | {median:.1f} |")


if __name__ == "__main__":
    main()
