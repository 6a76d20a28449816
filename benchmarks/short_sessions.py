"""Whether many short sessions wear the store down: versions, size, load and search time as sessions pile up.

Each session is what `echo hi | agentos chat NAME` does: open the agent (its own Store, so nothing is
shared with the last session but the files), one turn through the scripted provider, close. Every
`--every` sessions it prints the versions and fragments of the tables, the database's size on disk,
and the time of a fresh load and a recall search, each in a new Store (a new process's view).

    python benchmarks/short_sessions.py [--sessions 300] [--every 50] [--before PATH]

The sessions here follow each other within milliseconds, where a person's are minutes or hours apart.
So that the store looks as it would after sessions spread over days, the grace period during which a
cleanup keeps old versions for concurrent readers (2 minutes) is shortened to 1 second, for both trees.

`--before PATH` first runs the same sessions on the agentos source tree at PATH (a checkout of an
earlier commit), so both tables come from one run on one machine.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LANCEDB_LOG", "error")

from before_tree import measure_before_first  # noqa: E402


def _size_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6


def _versions(home: Path, table: str) -> tuple[int, int]:
    """(manifests kept, data files) of one table, counted on disk."""
    root = home / "db" / f"{table}.lance"
    manifests = len(list((root / "_versions").glob("*.manifest"))) if root.exists() else 0
    data = len(list((root / "data").glob("*"))) if root.exists() else 0
    return manifests, data


def run(sessions: int, every: int) -> None:
    from datetime import timedelta

    import agentos.storage.maintenance as maintenance
    from agentos import Agent
    from agentos.memory.recall import RecallTier
    from agentos.providers import ScriptedProvider
    from agentos.storage.store import Store

    maintenance.CLEANUP_OLDER_THAN = timedelta(seconds=1)
    home = Path(tempfile.mkdtemp(prefix="agentos-short-"))
    uri = home / "db"
    first = Agent.create("sam", provider=ScriptedProvider([]), store=Store(uri))
    agent_id = first.id
    first.close()
    print(f"{'sessions':>8} {'messages v/files':>17} {'state v':>8} {'agents v':>9} {'MB':>7} {'load ms':>8} "
          f"{'search ms':>10} {'session ms':>11}")
    spent = 0.0
    for n in range(1, sessions + 1):
        started = time.perf_counter()
        store = Store(uri)
        agent = Agent.load("sam", provider=ScriptedProvider([f"reply {n}"]), store=store)
        list(agent.turn(f"short message number {n} about the garden"))
        agent.close()
        store.close()
        spent += time.perf_counter() - started
        if n % every == 0 or n == sessions:
            store = Store(uri)
            t0 = time.perf_counter()
            loaded = Agent.load("sam", read_only=True, store=store, with_model=False)
            load_ms = 1000 * (time.perf_counter() - t0)
            t0 = time.perf_counter()
            loaded.tier(RecallTier).search("garden", page_size=5)
            search_ms = 1000 * (time.perf_counter() - t0)
            store.close()
            mv, mf = _versions(home, "messages")
            sv, _ = _versions(home, f"state_{agent_id}")
            av, _ = _versions(home, "agents")
            print(f"{n:>8} {mv:>9}/{mf:<7} {sv:>8} {av:>9} {_size_mb(uri):>7.1f} {load_ms:>8.1f} {search_ms:>10.1f} "
                  f"{1000 * spent / every:>11.1f}", flush=True)
            spent = 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=300)
    parser.add_argument("--every", type=int, default=50)
    parser.add_argument("--before", help="an earlier agentos source tree to measure first")
    args = parser.parse_args()
    measure_before_first(args.before)
    run(args.sessions, args.every)


if __name__ == "__main__":
    main()
