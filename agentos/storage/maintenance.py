"""Background compaction: tables are compacted and old versions pruned every so many commits.

LanceDB leaves one fragment and one version per commit; without this, months of use make
search hundreds of times slower and the database a thousand times larger. It runs on its own
thread, so it never delays a reply; a compaction that loses a race with a write is tried again.
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


class Maintenance:
    """Counts commits per table and compacts the tables that are due, one run at a time."""

    def __init__(self, db: Database, every: int = COMPACT_EVERY_COMMITS) -> None:
        self.db = db
        self.every = every
        self.commits: dict[str, int] = {}
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

    def run_now(self, tables: list[str]) -> None:
        """Compact `tables` now, in the foreground."""
        self.wait()
        self._run(tables)
        if self.last_error:
            raise StorageError(f"compaction failed: {self.last_error}")
