"""Appends to one table from many threads of a process, committed together.

A process commits a table's appends one at a time. A thread that finds a commit of the table in flight waits; the next
commit carries every append that waited meanwhile, in one LanceDB commit, and each thread returns once the commit
holding its rows has landed (so a step is still durable before it is acknowledged). A failed commit fails every append
it carried, and wrote none of them.

Why: 50 agents of a server appending their steps to the shared `messages` table made 50 commits at once, each
conflicting with the others: LanceDB rebased each on the others' new versions, retried with back-off for seconds (p99
of a turn 17 s), and at last gave up ("Too many concurrent writers", after 30 s). Grouped, they are a few commits that
never conflict within the process, and the table gets fewer versions to keep and clean up.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pyarrow as pa


class _Append:
    __slots__ = ("rows", "ready", "done", "error")

    def __init__(self, rows: pa.Table) -> None:
        self.rows = rows
        self.ready = threading.Event()  # set when a commit carried it, or when it is handed the lead
        self.done = False
        self.error: BaseException | None = None


class GroupCommit:
    """One table's appends: `add` blocks until a commit holding its rows has landed (or raises why it failed)."""

    def __init__(self, commit: Callable[[pa.Table], None]) -> None:
        self._commit = commit
        self._lock = threading.Lock()
        self._waiting: list[_Append] = []
        self._busy = False  # a thread leads: it commits what waits
        self.commits = 0
        self.appends = 0

    def add(self, rows: pa.Table) -> None:
        """Append `rows` (all appends of one table share its schema) in the next commit."""
        mine = _Append(rows)
        with self._lock:
            self._waiting.append(mine)
            lead = not self._busy
            self._busy = True
        if not lead:
            mine.ready.wait()
            if mine.done:
                if mine.error is not None:
                    raise mine.error
                return
        self._lead(mine)

    def _lead(self, mine: _Append) -> None:
        """Commit everything waiting (`mine` among it), tell each its outcome, and hand the lead to the first that
        came meanwhile, if any."""
        with self._lock:
            batch, self._waiting = self._waiting, []
        error: BaseException | None = None
        try:
            self._commit(batch[0].rows if len(batch) == 1 else pa.concat_tables([a.rows for a in batch]))
        except BaseException as exc:  # noqa: BLE001 - every append it carried hears it
            error = exc
        self.commits += 1
        self.appends += len(batch)
        for append in batch:
            append.done, append.error = True, error
            if append is not mine:
                append.ready.set()
        with self._lock:
            if self._waiting:
                self._waiting[0].ready.set()  # it leads the next commit; the lead never lapses while appends wait
            else:
                self._busy = False
        if error is not None:
            raise error
