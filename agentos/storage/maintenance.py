"""Compaction: tables are compacted and old versions pruned every so many commits, and at the end of a session.

LanceDB leaves one fragment and one version per commit; without this, months of use make
search hundreds of times slower and the database a thousand times larger. During a session it
runs on its own thread, so it never delays a reply; a compaction that loses a race with a write
is tried again. Many short sessions never reach the commit count in one process, so a session's
end looks at what the tables carry on disk (`Database.wear`) and compacts those that are worn.
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta

from agentos.errors import StorageError
from agentos.storage.db import Database
from agentos.storage.schemas import TABLES

COMPACT_EVERY_COMMITS = 100
COMPACT_EVERY_SECONDS = 600.0  # also compact a table touched since, at most this often
CLEANUP_OLDER_THAN = timedelta(minutes=2)
CONFLICT_RETRIES = 5  # a compaction preempted by a concurrent write is retried this often
SMALL_FRAGMENTS_DUE = 16  # at a session's end, a table with this many small fragments is compacted


class Maintenance:
    """Counts commits per table and compacts the tables that are due, one run at a time."""

    def __init__(self, db: Database, every: int = COMPACT_EVERY_COMMITS) -> None:
        self.db = db
        self.every = every
        self.commits: dict[str, int] = {}
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
            self._thread = threading.Thread(target=self._run, args=(due,), daemon=True, name="agentos-compact")
            self._thread.start()

    def _run(self, tables: list[str]) -> None:
        try:
            for table in tables:
                if table not in TABLES and not self.db.cached(table):
                    continue  # dropped since (a deleted agent, a reindex)
                self._compact(table)
            self.runs += 1
            self.last_run = time.monotonic()
            self.last_error = None
        except Exception as exc:  # noqa: BLE001 - maintenance must never break a turn
            self.last_error = str(exc)

    def _compact(self, name: str) -> None:
        """optimize() folds new rows into the FTS and vector indexes, too; a large vector table gets its index."""
        for attempt in range(CONFLICT_RETRIES):
            try:
                self.db.optimize(name, CLEANUP_OLDER_THAN)
                return
            except Exception as exc:
                if "commit conflict" not in str(exc).lower() or attempt == CONFLICT_RETRIES - 1:
                    raise

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
            self._run(due)

    def run_now(self, tables: list[str]) -> None:
        """Compact `tables` now, in the foreground."""
        self.wait()
        self._run(tables)
        if self.last_error:
            raise StorageError(f"compaction failed: {self.last_error}")
