"""LanceDB alone, no agentos code on the path of a commit: how a process's heap grows with the commits it makes.

One table takes one-row appends, another one-row updates (an agent's step does both kinds), each compacted and
cleaned up every 100 commits as agentos's maintenance does, with agentos's malloc settings and cache sizes. Per
block: the heap (RssAnon), LanceDB's session caches (bounded by their sizes) and the CPU per commit (the process's,
LanceDB's threads included); at the end the heap's growth per commit after warm-up (the caches full). A long-running
server grows by this much per commit, which is what `agentos serve --recycle-mib` bounds.

    python benchmarks/lance_commit_heap.py [--commits 20000] [--every 2000] [--kind append|update|both]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

os.environ.setdefault("LANCEDB_LOG", "error")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agentos.server.recycle import heap_mib as heap_of  # noqa: E402
from agentos.storage.db import INDEX_CACHE_BYTES, METADATA_CACHE_BYTES, tune_malloc  # noqa: E402


def heap_mib() -> float:
    return heap_of(os.getpid()) or 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=20_000)
    parser.add_argument("--every", type=int, default=2_000)
    parser.add_argument("--kind", choices=("append", "update", "both"), default="both")
    args = parser.parse_args(argv)
    tune_malloc()
    import lancedb
    import pyarrow as pa

    session = lancedb.Session(metadata_cache_size_bytes=METADATA_CACHE_BYTES, index_cache_size_bytes=INDEX_CACHE_BYTES)
    db = lancedb.connect(tempfile.mkdtemp(prefix="lance-heap-"), session=session)
    log = db.create_table("log", pa.table({"n": [0], "text": ["x" * 200]}))
    row = db.create_table("row", pa.table({"k": [1], "text": ["x"]}))
    kinds = ("append", "update") if args.kind == "both" else (args.kind,)
    print(f"lancedb {lancedb.__version__}; {' and '.join(kinds)} commits, compacted every 100; caches "
          f"{METADATA_CACHE_BYTES >> 20} + {INDEX_CACHE_BYTES >> 20} MiB")
    print(f"{'commits':>8} {'heap MiB':>9} {'caches MiB':>11} {'CPU ms/commit':>14}", flush=True)
    marks: list[tuple[int, float, float]] = []  # (commits, heap, caches)
    started = time.process_time()
    commits = 0
    for number in range(1, args.commits // len(kinds) + 1):
        if "append" in kinds:
            log.add(pa.table({"n": [number], "text": [f"row {number} " + "y" * 200]}))
        if "update" in kinds:
            row.update(where="k = 1", values={"text": f"value {number}"})
        commits += len(kinds)
        if number % 100 == 0:
            for table in (log, row):
                table.optimize(cleanup_older_than=timedelta(seconds=5))
        if commits % args.every < len(kinds):
            elapsed, started = time.process_time() - started, time.process_time()
            marks.append((commits, heap_mib(), session.size_bytes / 2**20))
            print(f"{commits:>8} {marks[-1][1]:>9.1f} {marks[-1][2]:>11.1f} {1000 * elapsed / args.every:>14.2f}",
                  flush=True)
    full = next((m for m in marks if m[2] >= 0.9 * METADATA_CACHE_BYTES / 2**20), marks[0])
    last = marks[-1]
    if last[0] > full[0]:
        growth = (last[1] - full[1]) * 1024 / (last[0] - full[0])
        print(f"heap growth after the caches filled (commits {full[0]:,} to {last[0]:,}): {growth:.2f} KiB per commit")
    return 0


if __name__ == "__main__":
    sys.exit(main())
