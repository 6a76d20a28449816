"""Compaction: tables are compacted and old versions pruned every so many commits, and at the end of a session.

LanceDB leaves one fragment and one version per commit; without this, months of use make
search hundreds of times slower and the database a thousand times larger. During a session it
runs on its own thread, so it never delays a reply; a compaction that loses a race with a write
is tried again. Many short sessions never reach the commit count in one process, so a session's
end looks at what the tables carry on disk (`Database.wear`) and compacts those that are worn.

Old versions go by how long ago they stopped being the newest, not by how long ago they were made (see
`cleanup_horizon`): a version that was the newest less than `CLEANUP_OLDER_THAN` ago stays, for a reader that
started on it, and every older one goes. A window of minutes kept thousands of versions of a busy table (one agent
takes ~40 turns a second with an instant model, four commits each), and every compaction read all their manifests:
it took 1.3 s per run at 2,000 versions and 0.15 s at 250, and turns slowed from 11 to 36 ms.
"""

from __future__ import annotations

import os
import threading
import time
from datetime import timedelta

from agentos.errors import StorageError
from agentos.storage.db import Database
from agentos.storage.salvage import table_path
from agentos.storage.schemas import TABLES

COMPACT_EVERY_COMMITS = 100
COMPACT_EVERY_SECONDS = 600.0  # also compact a table touched since, at most this often
CLEANUP_OLDER_THAN = timedelta(seconds=5)  # a version the newest less than this long ago is kept (local tables)
REMOTE_CLEANUP_OLDER_THAN = timedelta(minutes=2)  # object storage: versions made less than this long ago are kept
CONFLICT_RETRIES = 5  # a compaction preempted by a concurrent write is retried this often
SMALL_FRAGMENTS_DUE = 16  # at a session's end, a table with this many small fragments is compacted
# A background compaction folds new rows into the full-text indexes only every max(1, rows / this)-th time: folding
# rewrites the index (0.1 s at 20k rows, 0.6 s at 80k), and every 100 commits it made a soak's turns ever slower
# (CPU 19 -> 32 ms/turn over 5,000 turns). Spaced so, its cost per commit stays the same as tables grow, and at most
# ~1% of a table waits unindexed (searches read those rows as they are: 4 ms with 400 of them).
INDEX_EVERY_ROWS = 10_000


class Maintenance:
    """Counts commits per table and compacts the tables that are due, one run at a time."""

    def __init__(self, db: Database, every: int = COMPACT_EVERY_COMMITS) -> None:
        self.db = db
        self.every = every
        self.commits: dict[str, int] = {}
        self.compactions: dict[str, int] = {}  # background compactions of each table since its indexes were folded
        self.touched: set[str] = set()  # every table this process committed to
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.runs = 0
        self.last_error: str | None = None
        self.last_run = time.monotonic()

    def committed(self, tables: list[str]) -> None:
        """Note one commit to each of `tables`; start a run if any is due."""
        with self._lock:
            for table in tables:
                self.commits[table] = self.commits.get(table, 0) + 1
            self.touched.update(tables)
            overdue = time.monotonic() - self.last_run >= COMPACT_EVERY_SECONDS
            due = [t for t, n in self.commits.items() if n >= self.every or (overdue and n > 0)]
            if not due or (self._thread is not None and self._thread.is_alive()):
                return
            for table in due:
                self.commits[table] = 0
            thread = threading.Thread(target=self._run, args=(due,), daemon=True, name="agentos-compact")
            thread.start()
            self._thread = thread  # started first: `wait` (which takes no lock) may join it at once

    def _run(self, tables: list[str], fold: bool | None = None) -> None:
        try:
            for table in tables:
                if table not in TABLES and not self.db.cached(table):
                    continue  # dropped since (a deleted agent, a reindex)
                self._compact(table, fold)
            self.runs += 1
            self.last_run = time.monotonic()
            self.last_error = None
        except Exception as exc:  # noqa: BLE001 - maintenance must never break a turn
            self.last_error = str(exc)

    def _compact(self, name: str, fold: bool | None = None) -> None:
        """Compact a table and clean up its versions; fold new rows into its indexes when `fold`, or (None) when due
        (see `INDEX_EVERY_ROWS`). A large vector table gets its index when they are folded."""
        if fold is None:
            done = self.compactions.get(name, 0) + 1
            fold = done >= max(1, (self.db.count_rows(name) or 0) // INDEX_EVERY_ROWS)
            self.compactions[name] = 0 if fold else done
        for attempt in range(CONFLICT_RETRIES):
            try:
                self.db.optimize(name, self.horizon(name), fold_indexes=fold)
                return
            except Exception as exc:
                if "commit conflict" not in str(exc).lower() or attempt == CONFLICT_RETRIES - 1:
                    raise

    def horizon(self, name: str) -> timedelta:
        """How old a version of table `name` must be for this compaction's cleanup to remove it."""
        if "://" in self.db.uri:  # a listing of an object store's manifests is slow: go by when versions were made
            return REMOTE_CLEANUP_OLDER_THAN
        grace = CLEANUP_OLDER_THAN.total_seconds()
        seconds = cleanup_horizon(table_path(self.db.uri, name), grace)
        return timedelta(seconds=seconds if seconds is not None else grace)

    def wait(self) -> None:
        thread = self._thread
        if thread is not None:
            thread.join()

    def worn(self, table: str) -> bool:
        """Whether `table` is due whatever this process counted: many small fragments, or `every` versions kept
        of which some are old enough for a cleanup to remove."""
        wear = self.db.wear(table)
        if wear is None:
            return False
        old_versions = wear.versions >= self.every and wear.oldest_version_age_s > CLEANUP_OLDER_THAN.total_seconds()
        return wear.small_fragments >= SMALL_FRAGMENTS_DUE or old_versions

    def finish(self) -> None:
        """At a session's end: let a run finish, then compact, in the foreground, the tables this process wrote
        that are worn. Never raises (the reason is kept in `last_error`)."""
        self.wait()
        try:
            due = [t for t in sorted(self.touched) if (t in TABLES or self.db.cached(t)) and self.worn(t)]
        except Exception as exc:  # noqa: BLE001 - maintenance must never break a close
            self.last_error = str(exc)
            return
        if due:
            self._run(due, fold=True)

    def run_now(self, tables: list[str]) -> None:
        """Compact `tables` now, in the foreground, their indexes folded."""
        self.wait()
        self._run(tables, fold=True)
        if self.last_error:
            raise StorageError(f"compaction failed: {self.last_error}")


def cleanup_horizon(path: str, grace_s: float, now: float | None = None) -> float | None:
    """How old (seconds) a version of the local table at `path` must be for a cleanup to remove it, so that every
    version that was still the newest less than `grace_s` ago stays, however long ago it was made (a reader that
    started on it may still be reading it): the age of the newest version made before that moment, plus `grace_s`
    again, since the cleanup compacts first and its own clock has run on when it removes versions. Versions are known
    by their manifests' times; None when there is none."""
    try:
        times = sorted(entry.stat().st_mtime for entry in os.scandir(os.path.join(path, "_versions"))
                       if entry.name.endswith(".manifest"))
    except OSError:
        return None
    if not times:
        return None
    now = time.time() if now is None else now
    superseded = [t for t in times if t <= now - grace_s]  # the newest of these was still the newest then
    since = superseded[-1] if superseded else times[0]
    return max(0.0, now - since) + grace_s
