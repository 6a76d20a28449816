"""conversation_search latency with 100k messages, and append-a-turn-until-searchable latency.

    python benchmarks/recall_search.py --messages 100000 --embedder none
    python benchmarks/recall_search.py --messages 100000 --embedder hash:384
    python benchmarks/recall_search.py --messages 100000 --paths keyword,time,neighbours   # also these paths,
                                                                        # query by query beside the default
    python benchmarks/recall_search.py --paths keyword,speakers,neighbours,time,rewrite,rerank --instant-model
        # the model stages, asking the OpenAI provider over HTTP to a local server that answers at once: what a
        # stage costs besides the model's own time
    python benchmarks/recall_search.py --embedder bge/bge-small-en-v1.5 --keep DIR --turns 3000
        # search again after 3,000 steps, and the heap: each commit's table versions fill LanceDB's index cache
        # (AGENTOS_INDEX_CACHE_MB, agentos/storage/db.py)
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from agentos.agent.agent import Agent
from agentos.agent.state import AgentSettings
from agentos.memory.recall import RecallTier
from agentos.messages import Message
from agentos.providers.scripted import ScriptedProvider
from agentos.server.recycle import heap_mib
from agentos.storage import Store

SPEAKERS = ("Marguerite", "Bartholomew")  # two people talking, named as LoCoMo's and imported turns are (longer
# than any of the random words, so a name is never one of them)


def each_ms(queries: list[str], search: Callable[[str], object]) -> list[float]:
    """The milliseconds `search` took for each query, in order."""
    took = []
    for query in queries:
        t = time.perf_counter()
        search(query)
        took.append((time.perf_counter() - t) * 1000)
    return took


def p50_p95(ms: list[float]) -> str:
    """A timing's median and 95th percentile, as the figures print them."""
    return f"p50 {statistics.median(ms):.1f} ms, p95 {pct(ms, .95):.1f} ms"


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--embedder", default="none")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--turns", type=int, default=200, help="turns appended for the freshness figure")
    parser.add_argument("--paths", help="also measure these search paths (comma-separated), interleaved with the "
                                        "default ones")
    parser.add_argument("--keep", type=Path, help="keep the loaded agent in this folder and reuse it on the next run "
                        "with the same --messages and --embedder (loading 100k messages with an embedder takes minutes)")
    parser.add_argument("--instant-model", action="store_true",
                        help="search's model (rewrite, rerank) is a local server that answers at once, over HTTP")
    args = parser.parse_args()
    # "-named": agents kept before the benchmark's speakers had names are not reused
    kept = args.keep / f"{args.messages}-{args.embedder.replace('/', '_')}-named" if args.keep else None
    loaded = kept is not None and (kept / "loaded").is_file()
    root = Path(tempfile.mkdtemp(prefix="agentos-recall-bench-"))
    if loaded:  # each run measures a copy: the freshness figure appends turns
        shutil.copytree(kept, root, dirs_exist_ok=True)
    os.environ["AGENTOS_HOME"] = str(root)
    rng = random.Random(11)
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = sorted({"".join(rng.choice(letters) for _ in range(rng.randint(3, 9))) for _ in range(40_000)})[:20_000]
    cum = list(itertools.accumulate(1.0 / (i + 1) ** 1.05 for i in range(len(words))))
    store = Store(root / "db")
    try:
        start = datetime(2024, 1, 1, tzinfo=UTC)
        texts = [" ".join(rng.choices(words, cum_weights=cum, k=rng.randint(6, 30))) for _ in range(args.messages)]
        if loaded:
            agent = Agent.load("bench", provider=ScriptedProvider([]), store=store)
            print(f"reusing the {args.messages:,} messages loaded in {kept}", flush=True)
        else:
            agent = Agent.create("bench", provider=ScriptedProvider([]), settings=AgentSettings(embedder=args.embedder),
                                 store=store)
            t0 = time.perf_counter()
            for base in range(0, args.messages, 5000):
                agent.add_history([Message(role="user" if i % 2 == 0 else "assistant", content=texts[i],
                                           name=SPEAKERS[i % 2], created_at=start + timedelta(minutes=i))
                                   for i in range(base, min(base + 5000, args.messages))])
            store.compact()
            load_s = time.perf_counter() - t0
            print(f"loaded {args.messages:,} messages in {load_s:.1f} s ({args.messages / load_s:,.0f}/s, embedder "
                  f"{args.embedder!r}, commits of 5,000, then compacted)", flush=True)
            if kept is not None:  # kept once its indexes are built
                store.wait_for_maintenance()
                agent.close()
                shutil.rmtree(kept, ignore_errors=True)
                shutil.copytree(root, kept)
                (kept / "loaded").write_text("")
                agent = Agent.load("bench", provider=ScriptedProvider([]), store=store)
        recall = agent.tier(RecallTier)
        if args.instant_model:
            from provider_overhead import spec, start_server

            from agentos.providers.registry import resolve_model

            server, port = start_server()
            agent.roles.use("search", resolve_model(spec("openai", port)))
        queries = [" ".join(rng.sample(t.split(), min(4, len(t.split())))) for t in rng.sample(texts, args.queries)]
        t = time.perf_counter()
        recall.search(queries[0])  # reads the turn order whole (the speakers and neighbours paths)
        print(f"first conversation_search @ {args.messages:,}: {(time.perf_counter() - t) * 1000:.0f} ms", flush=True)
        for q in queries[1:5]:
            recall.search(q)
        lat, other = [], []
        paths = args.paths.split(",") if args.paths else None
        for q in queries:
            t = time.perf_counter()
            recall.search(q)
            lat.append((time.perf_counter() - t) * 1000)
            if paths:
                t = time.perf_counter()
                recall.search(q, paths=paths)
                other.append((time.perf_counter() - t) * 1000)
        if paths:
            print(f"conversation_search @ {args.messages:,} with paths {'+'.join(paths)}: "
                  f"{p50_p95(other)} (interleaved with the default's)", flush=True)
        dated = each_ms(queries[:50], lambda q: recall.search(q, start=start + timedelta(days=10),
                                                              end=start + timedelta(days=40), roles=["user"]))
        print(f"conversation_search @ {args.messages:,}: {p50_p95(lat)};"
              f" with date+role filters {p50_p95(dated)}", flush=True)
        # a question naming a speaker: the speakers path, and their turns first after fusion
        named = each_ms([f"what did {SPEAKERS[i % 2]} say about {q}" for i, q in enumerate(queries[:50])], recall.search)
        print(f"conversation_search @ {args.messages:,} naming a speaker ('what did {SPEAKERS[0]} say about ...'): "
              f"{p50_p95(named)}", flush=True)
        # the time path reads the range and the month either side of it, and parses what those turns tell
        timed = each_ms([f"{q} in {start:%B %Y}" for q in queries[:50]], recall.search)
        print(f"conversation_search @ {args.messages:,} with a time in the question ('in {start:%B %Y}'): "
              f"{p50_p95(timed)}", flush=True)
        searchable_ms, search_ms, found = [], [], 0
        heap_before = heap_mib(os.getpid()) or 0
        for i in range(args.turns):
            token = f"freshtoken{i}x"
            step = [Message.user(f"new fact {token} about {rng.choice(words)}"), Message.assistant("noted")]
            t = time.perf_counter()
            agent.add_history(step)  # one step, committed: messages, then the agent's state
            searchable_ms.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            found += any(token in h.text for h in recall.search(token).hits)
            search_ms.append((time.perf_counter() - t) * 1000)
        store.wait_for_maintenance()
        print(f"save a step (user + assistant, committed) until searchable: median {statistics.median(searchable_ms):.2f} "
              f"ms, p95 {pct(searchable_ms, .95):.2f} ms; found by a search right after: {found}/{args.turns}, that "
              f"search p50 {statistics.median(search_ms):.1f} ms", flush=True)
        after = each_ms(queries, recall.search)  # every commit adds table versions, whose index lists fill the cache
        print(f"conversation_search after those {args.turns} steps: {p50_p95(after)}; "
              f"heap {heap_mib(os.getpid()) or 0:.0f} MiB ({heap_before:.0f} before them)",
              flush=True)
    finally:
        store.close()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
