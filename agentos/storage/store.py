"""The store: the three tables behind every agent, written once per step in parallel commits."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from agentos.errors import StorageError
from agentos.memory.blocks import MemoryEdit
from agentos.messages import Message
from agentos.storage.db import SWAP_SUFFIX, Database, quote, storage_errors
from agentos.storage.records import edit_row, message_row, row_message
from agentos.storage.schemas import TABLES
from agentos.storage.vector_index import ensure_vector_index
from agentos.storage.writer import GroupCommitWriter, StepBatch

COMPACT_EVERY_COMMITS = 100
COMPACT_EVERY_SECONDS = 600.0  # also compact a table touched since, at most this often
CLEANUP_OLDER_THAN = timedelta(minutes=2)
KEEP_STATE_REVISIONS = 3


class Store:
    """Reads and writes agents, their messages and their memory edits in one LanceDB database."""

    def __init__(self, uri: str | Path, storage_options: dict[str, str] | None = None) -> None:
        self.db = Database(uri, storage_options)
        self._maintenance = Maintenance(self)
        # messages and recall vectors first: conversation_search waits for them, not for the state
        self._writer = GroupCommitWriter(self._write_rows, self._committed, first=("messages", "recall_vectors_"))

    @property
    def uri(self) -> str:
        return self.db.uri

    # -- agent state -------------------------------------------------------------------------

    def latest_states(self) -> dict[str, dict[str, Any]]:
        """The newest state row of every agent, by name."""
        rows = self._read("agents", None, ["name", "agent_id", "rev", "updated_at", "state"])
        latest: dict[str, dict[str, Any]] = {}
        for row in rows:
            if row["name"] not in latest or row["rev"] > latest[row["name"]]["rev"]:
                latest[row["name"]] = row
        return latest

    def load_state(self, name: str) -> dict[str, Any] | None:
        rows = self._read("agents", f"name = {quote(name)}", ["name", "agent_id", "rev", "updated_at", "state"])
        return max(rows, key=lambda r: r["rev"]) if rows else None

    def delete_agent(self, name: str, agent_id: str) -> None:
        """Remove an agent: its state, messages and memory edits."""
        self.flush()
        with storage_errors(f"delete agent {name!r}"):
            self.db.table("agents").delete(f"name = {quote(name)}")
            self.db.table("messages").delete(f"agent_id = {quote(agent_id)}")
            self.db.table("memory_edits").delete(f"agent_id = {quote(agent_id)}")
            for table in (f"archival_{agent_id}", f"recall_vectors_{agent_id}"):
                self.db.drop(table)
                self.db.drop(table + SWAP_SUFFIX)

    # -- messages ----------------------------------------------------------------------------

    def get_messages(self, agent_id: str, ids: list[str]) -> list[Message]:
        """The messages with these ids, in the order of `ids` (missing ids are skipped)."""
        if not ids:
            return []
        found: dict[str, Message] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            where = f"agent_id = {quote(agent_id)} AND id IN ({', '.join(quote(i) for i in chunk)})"
            for row in self._read("messages", where, None):
                found[row["id"]] = row_message(row)
        return [found[i] for i in ids if i in found]

    def count_messages(self, agent_id: str) -> int:
        self.flush()
        with storage_errors("count messages"):
            handle = self.db.table("messages")
            handle.checkout_latest()
            return handle.count_rows(f"agent_id = {quote(agent_id)}")

    def memory_edits(self, agent_id: str) -> list[MemoryEdit]:
        rows = self._read("memory_edits", f"agent_id = {quote(agent_id)}", None)
        edits = [MemoryEdit(**{k: v for k, v in row.items() if k != "agent_id"}) for row in rows]
        return sorted(edits, key=lambda e: e.at)

    # -- the step commit ---------------------------------------------------------------------

    def commit_step(
        self,
        *,
        name: str,
        agent_id: str,
        rev: int,
        state_json: str,
        messages: list[tuple[int, Message]],
        edits: list[MemoryEdit],
        extra: dict[str, Any] | None = None,
    ) -> None:
        """Hand one step to the group-commit writer: its messages, memory edits and the new state.

        Returns at once; `flush()` waits until it is on disk. Raises a StorageError left by a
        failed earlier write (those rows stay queued and are retried). Each table gets one
        commit per group; a crash between tables loses only the step in flight, because
        loading drops in-context ids whose messages are missing.
        """
        state_row = {"name": name, "agent_id": agent_id, "rev": rev,
                     "updated_at": datetime.now(timezone.utc), "state": state_json}
        rows: dict[str, Any] = {
            "messages": [message_row(agent_id, seq, m) for seq, m in messages],
            "memory_edits": [edit_row(agent_id, e) for e in edits],
            **(extra or {}),
        }
        self._writer.submit(StepBatch(state_row=state_row, rows=rows))

    def flush(self) -> None:
        """Wait until every submitted step is written."""
        self._writer.flush()

    def unwritten(self, table: str) -> list[Any]:
        """Rows saved for `table` but not yet committed (what recall matches in memory meanwhile)."""
        return self._writer.unwritten(table)

    def _write_rows(self, table: str, rows: Any) -> None:
        self.db.add(table, rows)

    def _committed(self, tables: list[str], batches: list[StepBatch]) -> None:
        for batch in batches:
            if batch.state_row is not None:
                self._maintenance.note_state(batch.state_row["name"], batch.state_row["rev"])
        self._maintenance.committed(tables)

    def add_messages(self, agent_id: str, messages: list[tuple[int, Message]]) -> None:
        """Bulk-append messages (imports, benchmarks) in one commit."""
        self.flush()
        self.db.add("messages", [message_row(agent_id, seq, m) for seq, m in messages])

    def wait_for_maintenance(self) -> None:
        """Block until queued writes and background compaction (if any) have finished."""
        self.flush()
        self._maintenance.wait()

    def compact(self) -> None:
        """Compact every table and prune old versions now."""
        self.flush()
        self._maintenance.run_now()

    def close(self) -> None:
        """Write everything queued, wait for background maintenance and stop the writer."""
        self._writer.close()
        self._maintenance.wait()

    def _read(self, table: str, where: str | None, columns: list[str] | None) -> list[dict[str, Any]]:
        self.flush()  # read your own writes
        with storage_errors(f"read {table!r}"):
            handle = self.db.table(table)
            handle.checkout_latest()  # see what other processes wrote
            query = handle.search()
            if where:
                query = query.where(where)
            if columns:
                query = query.select(columns)
            return query.limit(None).to_arrow().to_pylist()


class Maintenance:
    """Compacts tables and prunes old versions in the background, every so many commits.

    LanceDB leaves one fragment and one version per commit; without this, months of use
    make search hundreds of times slower and the database a thousand times larger.
    """

    def __init__(self, store: Store, every: int = COMPACT_EVERY_COMMITS) -> None:
        self.store = store
        self.every = every
        self.commits: dict[str, int] = {}
        self._thread: threading.Thread | None = None
        self._stale_states: dict[str, int] = {}
        self.runs = 0
        self.last_error: str | None = None
        self.last_run = time.monotonic()

    def touched(self, table: str) -> None:
        """A write outside a step (archival inserts and deletes)."""
        self.commits[table] = self.commits.get(table, 0) + 1
        self._schedule()

    def note_state(self, name: str, rev: int) -> None:
        """Remember the newest state revision of an agent, so older ones can be pruned."""
        self._stale_states[name] = rev

    def committed(self, tables: list[str]) -> None:
        for table in tables:
            self.commits[table] = self.commits.get(table, 0) + 1
        self._schedule()

    def _schedule(self) -> None:
        overdue = time.monotonic() - self.last_run >= COMPACT_EVERY_SECONDS
        due = [t for t, n in self.commits.items() if n >= self.every or (overdue and n > 0)]
        if due and (self._thread is None or not self._thread.is_alive()):
            for t in due:
                self.commits[t] = 0
            stale, self._stale_states = self._stale_states, {}
            thread = threading.Thread(target=self._run, args=(due, stale), daemon=True, name="agentos-compact")
            thread.start()
            self._thread = thread

    def _run(self, tables: list[str], stale: dict[str, int]) -> None:
        try:
            if "agents" in tables:
                for name, rev in stale.items():
                    self.store.db.table("agents").delete(
                        f"name = {quote(name)} AND rev <= {int(rev) - KEEP_STATE_REVISIONS}"
                    )
            for table in tables:
                if table not in TABLES and not self.store.db.cached(table):
                    continue  # dropped since (a deleted agent, a reindex)
                # optimize() also folds new rows into the FTS and vector indexes
                self.store.db.table(table).optimize(cleanup_older_than=CLEANUP_OLDER_THAN)
                if table.startswith(("archival_", "recall_vectors_")):
                    ensure_vector_index(self.store.db.table(table))
            self.runs += 1
            self.last_run = time.monotonic()
        except Exception as exc:  # noqa: BLE001 - maintenance must never break a turn
            self.last_error = str(exc)

    def wait(self) -> None:
        if self._thread is not None:
            self._thread.join()

    def run_now(self) -> None:
        """Compact every table now, in the foreground."""
        self.wait()
        self._run(list(self.commits) or ["agents", "messages", "memory_edits"], dict(self._stale_states))
        if self.last_error:
            raise StorageError(f"compaction failed: {self.last_error}")
