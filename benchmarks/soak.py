"""Soak: one agent driven by the instant scripted model for many turns; time per turn and process RSS per block of
turns, which must stay flat after warm-up (a long-lived server runs exactly this).

The window is small, so the pager compacts throughout and 50-150 messages stay in context, as in a long chat. Per
block: the median and p95 of a turn's wall time, the process's CPU per turn (background compaction included: the
figure to compare on a busy machine), RSS and its anonymous part (the heap, Python's and LanceDB's: what grows if
anything does; the rest is mostly shared libraries), and the most versions any table keeps. The server's own soak
(50 agents over HTTP) is `benchmarks/serve_load.py --soak`.

    python benchmarks/soak.py [--turns 6000] [--every 500] [--window 4096] [--profile] [--before PATH]
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LANCEDB_LOG", "error")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from before_tree import measure_before_first  # noqa: E402

from agentos import Agent  # noqa: E402
from agentos.agent.state import AgentSettings  # noqa: E402
from agentos.providers import ModelRequest, ScriptedProvider, Step  # noqa: E402


def rss_mib(field: str = "VmRSS") -> float:
    """The process's resident memory (VmRSS), or a part of it: RssAnon is its heap (Python's, LanceDB's, Arrow's),
    the part that must stay flat; RssFile is mostly the shared libraries, constant."""
    with open("/proc/self/status", encoding="utf-8") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


def most_versions(db_uri: str) -> int:
    """The most versions any table of the database keeps on disk now."""
    counts = [len(os.listdir(entry.path + "/_versions")) for entry in os.scandir(db_uri)
              if entry.name.endswith(".lance") and os.path.isdir(entry.path + "/_versions")]
    return max(counts, default=0)


def reply(request: ModelRequest) -> Step:
    return Step("Noted, thanks: " + request.messages[-1].content[:40])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=6000)
    parser.add_argument("--every", type=int, default=500)
    parser.add_argument("--window", type=int, default=4096)
    parser.add_argument("--profile", action="store_true", help="print the top allocation sites growing between blocks")
    parser.add_argument("--before", help="run the same on the agentos source tree at this path first")
    args = parser.parse_args(argv)
    measure_before_first(args.before)
    os.environ["AGENTOS_HOME"] = tempfile.mkdtemp(prefix="agentos-soak-")
    provider = ScriptedProvider(reply)
    agent = Agent.create("soak", provider=provider, settings=AgentSettings(context_window=args.window))
    if args.profile:
        import tracemalloc

        tracemalloc.start(12)
        before = tracemalloc.take_snapshot()
    print(f"{'turns':>7} {'median ms':>10} {'p95 ms':>8} {'CPU ms/turn':>12} {'RSS MiB':>8} {'anon MiB':>9} "
          f"{'versions':>9} {'in context':>11} {'compactions':>12}", flush=True)
    times: list[float] = []
    cpu = time.process_time()
    for i in range(1, args.turns + 1):
        start = time.perf_counter()
        events = list(agent.turn(f"message {i}: the weather today is fine and my cat sleeps a lot"))
        times.append((time.perf_counter() - start) * 1000)
        assert events[-1].type == "turn_finished", events[-1]
        if i % args.every == 0:
            gc.collect()
            times.sort()
            used, cpu = time.process_time() - cpu, time.process_time()
            print(f"{i:>7} {statistics.median(times):>10.1f} {times[int(len(times) * 0.95) - 1]:>8.1f} "
                  f"{1000 * used / len(times):>12.1f} {rss_mib():>8.0f} {rss_mib('RssAnon'):>9.0f} "
                  f"{most_versions(agent.store.uri):>9} "
                  f"{len(agent.context):>11} {agent.state.compactions:>12}", flush=True)
            times = []
            provider.requests.clear()  # the scripted model keeps every request for tests to read: not the runtime's
            if args.profile:
                now = tracemalloc.take_snapshot()
                for stat in now.compare_to(before, "traceback")[:3]:
                    print(f"    +{stat.size_diff / 1024:.0f} KiB in {stat.count_diff} blocks")
                    for line in stat.traceback.format()[-8:]:
                        print("      " + line)
                before = now
    agent.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
