"""Export and import of a large agent: time, file size and peak memory, through the `agentos` commands users run.

Builds an agent with N messages (hybrid recall: each with a hash:384 vector) and N archival passages (vectors
too), then runs `agentos export` and `agentos import --name` in fresh processes and prints each one's wall time
and peak resident memory (the child's VmHWM; Linux only), beside `agentos show` as the baseline of a process that only
opens the agent. Memory that stays near the baseline as N grows is what "streamed" means here.

    python benchmarks/export_import.py [--messages 100000] [--passages 100000]
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

os.environ.setdefault("LANCEDB_LOG", "error")

from agentos import Agent  # noqa: E402
from agentos.agent.state import AgentSettings  # noqa: E402
from agentos.memory.archival import ArchivalTier  # noqa: E402
from agentos.messages import Message  # noqa: E402
from agentos.providers import ScriptedProvider  # noqa: E402
from agentos.storage.store import Store  # noqa: E402

BATCH = 5000


def build(home: Path, messages: int, passages: int) -> None:
    rng = random.Random(5)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9))) for _ in range(5000)]
    store = Store(home / "db")
    agent = Agent.create("big", model="scripted/demo", provider=ScriptedProvider([]),
                         settings=AgentSettings(embedder="hash:384"), store=store)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    for base in range(0, messages, BATCH):
        agent.add_history([Message(role="user" if i % 2 == 0 else "assistant", created_at=start + timedelta(minutes=i),
                                   content=" ".join(rng.choices(words, k=rng.randint(8, 40))))
                           for i in range(base, min(base + BATCH, messages))], in_context=0)
    archival = agent.tier(ArchivalTier)
    for base in range(0, passages, BATCH):
        archival.insert_many([" ".join(rng.choices(words, k=rng.randint(20, 60))) + f" #{i}"
                              for i in range(base, min(base + BATCH, passages))], tags=["bench"])
    agent.close()
    store.compact()
    store.close()


# VmHWM, not ru_maxrss: Linux carries ru_maxrss over fork and exec, so a child would report this process's peak
PEAK = ("import re, sys; from agentos.cli import main; code = main(sys.argv[1:]); "
        "hwm = re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1); "
        "print('PEAK', hwm, file=sys.stderr); sys.exit(code)")


def timed(home: Path, *args: str) -> tuple[float, float]:
    """Run `agentos ARGS` in a fresh process: (seconds, that process's peak resident MB)."""
    env = {**os.environ, "AGENTOS_HOME": str(home)}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", PEAK, *args], env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"agentos {' '.join(args)} failed:\n{done.stderr}")
    peak_kb = next(int(line.split()[1]) for line in done.stderr.splitlines() if line.startswith("PEAK "))
    return elapsed, peak_kb / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--passages", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="agentos-export-bench-") as scratch:
        home = Path(scratch)
        started = time.perf_counter()
        build(home, args.messages, args.passages)
        print(f"built an agent of {args.messages:,} messages and {args.passages:,} passages (hash:384 vectors) "
              f"in {time.perf_counter() - started:.0f} s")
        show_s, show_mb = timed(home, "show", "big")
        file = home / "big.agentos"
        export_s, export_mb = timed(home, "export", "big", "-o", str(file))
        import_s, import_mb = timed(home, "import", str(file), "--name", "big2")
        size = file.stat().st_size / 1e6
        print(f"  agentos show    {show_s:6.1f} s   peak {show_mb:6.0f} MB   (baseline: open the agent)")
        print(f"  agentos export  {export_s:6.1f} s   peak {export_mb:6.0f} MB   file {size:,.1f} MB")
        print(f"  agentos import  {import_s:6.1f} s   peak {import_mb:6.0f} MB")


if __name__ == "__main__":
    main()
