"""Many agents in one process: what committing each step costs, and how LanceDB's versions grow.

Drives `--agents` agents (default 50) through `--turns` interleaved turns each with the scripted
provider (every fourth turn edits core memory, so it takes two steps). Turns go round-robin on
one thread, or on `--threads` threads that each own a share of the agents. Prints the wall time,
turns per second, the turn latency (until its last event) and the time until everything is on
disk, then the versions and data fragments of each shared table.

    python benchmarks/multi_agent_commits.py [--agents 50] [--turns 20] [--threads 1] [--flush]

Every step is committed before its turn ends. `--flush` also calls `agent.flush()` after each
turn where the agent has one: a store that wrote in the background (agentos before its steps
were committed synchronously) is then measured waiting for durability, for comparison.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LANCEDB_LOG", "error")

from agentos import Agent  # noqa: E402
from agentos.providers import ModelRequest, ScriptedProvider, Step  # noqa: E402


def script(request: ModelRequest) -> Step:
    """Every fourth user message asks for a memory edit; the rest get a plain reply."""
    last = request.messages[-1]
    if last.role == "tool":
        return Step("Noted in my memory.")
    if last.content.endswith("(remember)"):
        return Step(tool_calls=[("core_memory_append", {"label": "human", "content": f"fact: {last.content[:40]}"})])
    return Step("Sure, that makes sense.")


def run_agents(agents: list[Any], turns: int, flush: bool, latencies: list[float], errors: list[str]) -> None:
    for turn in range(turns):
        for agent in agents:
            text = f"message {turn} for {agent.name}" + (" (remember)" if turn % 4 == 3 else "")
            start = time.perf_counter()
            events = list(agent.turn(text))
            if flush and hasattr(agent, "flush"):
                agent.flush()
            latencies.append((time.perf_counter() - start) * 1000)
            if events[-1].type != "turn_finished":
                errors.append(str(events[-1]))


def table_figures(home: Path) -> list[str]:
    """Versions and data fragments of each shared table, and the database's size on disk."""
    import lancedb

    db = lancedb.connect(str(home / "db"))
    lines = []
    per_agent: dict[str, list[Any]] = {}
    for name in sorted(db.list_tables().tables):
        table = db.open_table(name)
        if "_agent-" in name:  # one table per agent: summed by kind below
            per_agent.setdefault(name.split("_agent-")[0], []).append(table)
            continue
        fragments = table.stats()["fragment_stats"]["num_fragments"]
        lines.append(f"  {name:<14} version {table.version:>6,}  fragments {fragments:>5,}  rows {table.count_rows():>7,}")
    for kind, tables in sorted(per_agent.items()):
        versions = sum(t.version for t in tables)
        fragments = sum(t.stats()["fragment_stats"]["num_fragments"] for t in tables)
        lines.append(f"  {kind}_* ({len(tables)} tables): versions {versions:,} in all, fragments {fragments:,}")
    size = sum(f.stat().st_size for f in (home / "db").rglob("*") if f.is_file())
    lines.append(f"  database on disk: {size / 1e6:.1f} MB")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", type=int, default=50)
    parser.add_argument("--turns", type=int, default=20, help="turns per agent")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--flush", action="store_true", help="wait for durability after every turn")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="agentos-multi-"))
    os.environ["AGENTOS_HOME"] = str(home)

    started = time.perf_counter()
    agents = [Agent.create(f"agent-{i:03d}", provider=ScriptedProvider(script), human="Name: Ada")
              for i in range(args.agents)]
    created = time.perf_counter() - started

    latencies: list[float] = []
    errors: list[str] = []
    shares = [agents[i :: args.threads] for i in range(args.threads)]
    started = time.perf_counter()
    workers = [threading.Thread(target=run_agents, args=(share, args.turns, args.flush, latencies, errors))
               for share in shares]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    turns_done = time.perf_counter() - started
    for agent in agents:
        if hasattr(agent, "flush"):
            agent.flush()
    durable = time.perf_counter() - started
    for agent in agents:
        agent.close()

    total = args.agents * args.turns
    latencies.sort()
    print(f"{args.agents} agents x {args.turns} turns, {args.threads} thread(s), flush after each turn: {args.flush}; "
          f"{os.cpu_count()} CPUs")
    print(f"  created {args.agents} agents in {created:.2f} s")
    print(f"  {total:,} turns in {turns_done:.2f} s ({total / turns_done:,.0f} turns/s); all durable after "
          f"{durable:.2f} s ({total / durable:,.0f} turns/s)")
    print(f"  turn latency: median {statistics.median(latencies):.2f} ms, p95 {latencies[int(0.95 * total) - 1]:.2f} ms")
    if errors:
        print(f"  {len(errors)} turns failed, e.g. {errors[0]}")
    for line in table_figures(home):
        print(line)


if __name__ == "__main__":
    main()
