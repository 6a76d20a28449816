"""Group commit: step writes are queued and written by one background thread, merged when they pile up.

A LanceDB commit costs a few milliseconds whatever its size, so the turn loop hands each step
to this writer and goes on; steps that queue up while a commit runs go out together in the
next one. Nothing is dropped on failure: the batch stays queued and the error is raised to
the next caller of `submit` or `flush`, which also retries it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from typing import Any, Callable

from agentos.errors import StorageError


Rows = Any  # a list of row dicts, or a pyarrow Table


@dataclass
class StepBatch:
    """The rows one step writes: the agent's new state row, and rows for other tables by name."""

    state_row: dict[str, Any] | None
    rows: dict[str, Rows] = field(default_factory=dict)


def _concat(parts: list[Rows]) -> Rows:
    if all(isinstance(p, list) for p in parts):
        return [row for part in parts for row in part]
    import pyarrow as pa

    schema = next(p.schema for p in parts if isinstance(p, pa.Table))
    tables = [p if isinstance(p, pa.Table) else pa.Table.from_pylist(p, schema=schema) for p in parts]
    return pa.concat_tables(tables, promote_options="default")


def merge(batches: list[StepBatch]) -> dict[str, Rows]:
    """Rows per table for a group of steps; only the newest state row of each agent is kept."""
    latest: dict[str, dict[str, Any]] = {}
    parts: dict[str, list[Rows]] = {}
    for batch in batches:
        if batch.state_row is not None:
            latest[batch.state_row["agent_id"]] = batch.state_row
        for table, rows in batch.rows.items():
            if rows is not None and len(rows):
                parts.setdefault(table, []).append(rows)
    merged: dict[str, Rows] = {"agents": list(latest.values())} if latest else {}
    merged.update({table: _concat(p) for table, p in parts.items()})
    return merged


class GroupCommitWriter:
    """One writer thread per store; `write(table, rows)` commits rows to one table."""

    def __init__(self, write: Callable[[str, Rows], None],
                 on_commit: Callable[[list[str], list[StepBatch]], None], first: tuple[str, ...] = ()) -> None:
        self._write = write
        self._on_commit = on_commit
        self._first = first  # tables (or name prefixes) written before the others, e.g. what searches read
        self._queue: list[StepBatch] = []
        self._in_flight: list[StepBatch] = []
        self._error: BaseException | None = None
        self._retry = False
        self._attempts = 0
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="agentos-writer", daemon=True)
        self._closed = False
        self._unwritten: set[str] = set()  # tables of the group in flight not yet written
        self.commits = 0
        self._thread.start()

    def submit(self, batch: StepBatch) -> None:
        """Queue a step. If earlier writes are failing, ask for a retry and raise their error.

        The step is queued either way: nothing is dropped.
        """
        with self._cond:
            self._queue.append(batch)
            error = self._error
            if error is not None:
                self._retry = True
            self._cond.notify_all()
        if error is not None:
            raise _as_storage_error(error)

    def flush(self) -> None:
        """Wait until every queued step is written; after a failure, retry once and raise if it fails again."""
        with self._cond:
            if self._error is not None:
                self._retry = True
                self._cond.notify_all()
                attempt = self._attempts
                while self._attempts == attempt:
                    self._cond.wait()
            while (self._queue or self._in_flight) and self._error is None:
                self._cond.wait()
            error = self._error
        if error is not None:
            raise _as_storage_error(error)

    def unwritten(self, table: str) -> list[Rows]:
        """The rows for `table` submitted but not yet committed (in flight and not yet written, or queued), oldest first."""
        with self._cond:
            batches = (self._in_flight if table in self._unwritten else []) + self._queue
            return [b.rows[table] for b in batches if b.rows.get(table) is not None and len(b.rows[table])]

    @property
    def pending(self) -> int:
        with self._cond:
            return len(self._queue) + len(self._in_flight)

    def close(self) -> None:
        try:
            self.flush()
        finally:
            with self._cond:
                self._closed = True
                self._cond.notify_all()
            self._thread.join(timeout=5)

    def _write_tables(self, tables: list[str], rows: dict[str, Rows]) -> dict[str, BaseException]:
        """Write each table's rows; return the failures by table."""
        failed: dict[str, BaseException] = {}

        def write(table: str) -> None:
            try:
                self._write(table, rows[table])
            except BaseException as exc:  # noqa: BLE001 - reported to the caller of flush/submit
                failed[table] = exc
                return
            with self._cond:  # from now on the table itself holds these rows (see `unwritten`)
                self._unwritten.discard(table)

        # Two waves: the `first` tables, then the rest; the tables of a wave in parallel. Concurrent
        # LanceDB commits slow each other down, so the tables searches wait for go out alone.
        first = [t for t in tables if t.startswith(self._first)] if self._first else []
        for wave in (first, [t for t in tables if t not in first]):
            # Plain threads, not an executor: this must keep working while the interpreter exits.
            helpers = [threading.Thread(target=write, args=(t,), daemon=True) for t in wave[1:]]
            for helper in helpers:
                helper.start()
            if wave:
                write(wave[0])
            for helper in helpers:
                helper.join()
        return failed

    def _run(self) -> None:
        while True:
            with self._cond:
                while (not self._queue or (self._error is not None and not self._retry)) and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                self._retry = False
                self._in_flight, self._queue = self._queue, []
                self._unwritten = {t for b in self._in_flight for t in _tables_of(b)}
            batches = self._in_flight
            try:
                rows = merge(batches)
                failed = self._write_tables(list(rows), rows)
            except BaseException as exc:  # noqa: BLE001 - a bug here must not kill the writer
                rows, failed = {}, {"*": exc}
            if not failed:
                try:
                    self._on_commit(list(rows), batches)  # before waking flush(), so close() sees it
                except Exception:  # noqa: BLE001 - maintenance scheduling must not stop the writer
                    pass
            with self._cond:
                self._in_flight = []
                self._unwritten = set()
                self._attempts += 1
                if "*" in failed:
                    self._queue = batches + self._queue
                    self._error = failed["*"]
                elif failed:
                    # Retry only the tables that failed, so no row is written twice.
                    states = [StepBatch(state_row=r) for r in rows["agents"]] if "agents" in failed else []
                    residual = StepBatch(state_row=None, rows={t: r for t, r in rows.items()
                                                               if t in failed and t != "agents"})
                    self._queue = states + [residual] + self._queue
                    self._error = next(iter(failed.values()))
                else:
                    self._error = None
                    self.commits += 1
                self._cond.notify_all()


def _tables_of(batch: StepBatch) -> set[str]:
    """The tables a step writes ("agents" for its state row)."""
    tables = {t for t, rows in batch.rows.items() if rows is not None and len(rows)}
    return tables | {"agents"} if batch.state_row is not None else tables


def _as_storage_error(error: BaseException) -> StorageError:
    if isinstance(error, StorageError):
        return error
    return StorageError(f"could not save: {error}")


