"""What an embedder costs: a new process to its first vector, embedding a step (a turn and its reply), a query's
vector, and embedding a long history in batches, on real conversation turns.

    python benchmarks/embedder_cost.py --embedder bge/bge-small-en-v1.5 --path ../shared/data/locomo10.json
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from agentos.embedders.resolve import resolve_embedder
from agentos.eval.conversations import read_samples, turn_messages
from agentos.eval.locomo_qa.stats import percentile


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--embedder", default="bge/bge-small-en-v1.5")
    parser.add_argument("--path", type=Path, default=Path("../shared/data/locomo10.json"))
    parser.add_argument("--turns", type=int, default=1000, help="turns embedded in batches (the history figure)")
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    first = [sys.executable, "-c", "import sys; from agentos.embedders.resolve import resolve_embedder; "
             "resolve_embedder(sys.argv[1]).embed_query(['hello'])", args.embedder]
    cold = []
    for _ in range(3):
        t = time.perf_counter()
        subprocess.run(first, check=True)
        cold.append(time.perf_counter() - t)
    print(f"{args.embedder}: a new process to its first vector {min(cold):.2f}-{max(cold):.2f} s (3 runs)", flush=True)
    texts = [m.content for sample in read_samples(args.path) for m in turn_messages(sample)]
    texts = texts[: max(args.turns, 2 * args.steps)]
    embedder = resolve_embedder(args.embedder)
    embedder.embed_documents(texts[:16])
    t = time.perf_counter()
    embedder.embed_documents(texts[: args.turns])
    bulk = time.perf_counter() - t
    chars = statistics.mean(len(x) for x in texts[: args.turns])
    print(f"a history of {args.turns:,} turns ({chars:.0f} characters a turn on average) in batches: {bulk:.1f} s, "
          f"{args.turns / bulk:,.0f} turns/s", flush=True)
    steps, queries = [], []
    for i in range(args.steps):
        t = time.perf_counter()
        embedder.embed_documents(texts[2 * i : 2 * i + 2])
        steps.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        embedder.embed_query([" ".join(texts[i].split()[:8])])
        queries.append((time.perf_counter() - t) * 1000)
    print(f"a step (a turn and its reply): p50 {statistics.median(steps):.1f} ms, p95 {percentile(steps, 95):.1f} ms; a "
          f"query (8 words): p50 {statistics.median(queries):.1f} ms, p95 {percentile(queries, 95):.1f} ms", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
