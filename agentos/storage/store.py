"""The store: every agent's rows in one LanceDB database, and the one way a step is written.

A step is written in one order: its messages, then the rows that follow from them (memory
edits, a tier's rows), then the agent's state by compare-and-set. The state is the commit
point: rows written after the last state a crash left behind are discarded when the agent is
next opened for writing, so the blocks, the edit log, the context and recall always agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from agentos.blocks import MemoryEdit
from agentos.errors import AgentDeletedError
from agentos.messages import Message
from agentos.storage.agent_rows import AgentRow, AgentRows
from agentos.storage.db import SWAP_SUFFIX, Database, quote, storage_errors
from agentos.storage.lease import Lease
from agentos.storage.lease_keeper import LeaseKeeper
from agentos.storage.maintenance import Maintenance
from agentos.storage.records import message_row, row_edit, row_message
from agentos.storage.schemas import TABLES, state_table_name

Rows = Any  # a list of row dicts, or a pyarrow Table


@dataclass
class StepWrite:
    """Rows a step (or several, after a failed write) still has to commit, and the state they lead to.

    Chunks are appended per table as steps finish; `written` counts the chunks of each table
    already committed, so a write retried after a failure writes no row twice.
    """

    base_rev: int
    rev: int
    chunks: dict[str, list[Rows]] = field(default_factory=dict)
    written: dict[str, int] = field(default_factory=dict)

    def add(self, table: str, rows: Rows) -> None:
        if rows is not None and len(rows):
            self.chunks.setdefault(table, []).append(rows)

    def unwritten(self, table: str) -> Rows | None:
        parts = self.chunks.get(table, [])[self.written.get(table, 0):]
        if not parts:
            return None
        if all(isinstance(p, list) for p in parts):
            return [row for part in parts for row in part]
        return pa.concat_tables([p if isinstance(p, pa.Table) else pa.Table.from_pylist(p) for p in parts])

    def tables(self) -> list[str]:
        """Tables with rows to write: messages first (what the other rows refer to), then the rest."""
        names = [t for t in self.chunks if self.unwritten(t) is not None]
        return sorted(names, key=lambda t: (t != "messages", t))


class Store:
    """Reads and writes agents, their messages and their memory edits in one LanceDB database."""

    def __init__(self, uri: str | Path, storage_options: dict[str, str] | None = None) -> None:
        self.db = Database(uri, storage_options)
        self.agents = AgentRows(self.db)
        self.maintenance = Maintenance(self.db)
        self.leases = LeaseKeeper(self.agents)

    @property
    def uri(self) -> str:
        return self.db.uri

    # -- agents --------------------------------------------------------------------------------

    def agent_rows(self) -> dict[str, AgentRow]:
        """Every agent's row, by name."""
        return self.agents.all()

    def agent_row(self, name: str) -> AgentRow | None:
        return self.agents.get(name)

    def create_agent(self, name: str, agent_id: str, state_json: str, lease: Lease, created_at: datetime) -> None:
        """Add a new agent, held by `lease` from the start."""
        self.agents.insert(name, agent_id, state_json, lease, created_at)
        self.leases.keep(lease)
        self.maintenance.committed(["agents"])

    def open_agent(self, name: str, lease: Lease, *, force: bool = False, action: str = "it cannot be opened",
                   hint: str = "Finish that session first.") -> AgentRow:
        """Take the agent for writing (see `AgentRows.acquire`) and keep the lease renewed."""
        row = self.agents.acquire(name, lease, force=force, action=action, hint=hint)
        self.leases.keep(lease)
        self.maintenance.committed([state_table_name(row.agent_id)])
        return row

    def release(self, lease: Lease) -> None:
        self.agents.release(lease)

    def delete_agent(self, agent_id: str, name: str, lease: Lease | None, tier_tables: list[str]) -> None:
        """Remove an agent: its row first (from then on it does not exist), then its messages, edits and tables."""
        self.agents.delete(agent_id, lease)
        self.leases.lose(agent_id, AgentDeletedError(f'agent "{name}" was deleted; nothing more is saved.'))
        self.purge(agent_id, tier_tables)

    def purge(self, agent_id: str, tier_tables: list[str]) -> None:
        """Remove every row and table an agent left, whether or not it still exists."""
        with storage_errors("delete the agent's memory"):
            for name in ("messages", "memory_edits"):
                self.db.table(name).delete(f"agent_id = {quote(agent_id)}")
            for table in [state_table_name(agent_id), *tier_tables]:
                self.db.drop(table)
                self.db.drop(table + SWAP_SUFFIX)

    # -- the step ------------------------------------------------------------------------------

    def write_step(self, agent_id: str, lease: Lease, step: StepWrite, state_json: str) -> None:
        """Commit the step's rows, then move the agent's state from `step.base_rev` to `step.rev`.

        Raises a StorageError when a write fails (what was written is counted in `step.written`,
        so the next call goes on from there), and LeaseLostError when the agent is no longer this
        session's to write (taken over, deleted, or changed under it)."""
        if lease.lost:
            raise lease.lost
        tables = step.tables()
        for table in tables:
            rows = step.unwritten(table)
            self.db.add(table, rows)
            step.written[table] = len(step.chunks[table])
        self.agents.write_state(lease, step.base_rev, step.rev, state_json)
        self.maintenance.committed([*tables, state_table_name(agent_id)])

    def discard_uncommitted(self, agent_id: str, message_count: int, rev: int) -> list[str]:
        """Delete the rows a cut-short step left after the agent's last state; return the discarded message ids."""
        where = f"agent_id = {quote(agent_id)} AND seq >= {int(message_count)}"
        edits = f"agent_id = {quote(agent_id)} AND rev > {int(rev)}"
        with storage_errors("repair the agent's last step"):
            messages, log = self.db.table("messages"), self.db.table("memory_edits")
            ids = [r["id"] for r in messages.search().where(where).select(["id"]).limit(None).to_arrow().to_pylist()]
            if ids:
                messages.delete(where)
            if log.count_rows(edits):
                log.delete(edits)
        return ids

    # -- reads ---------------------------------------------------------------------------------

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
        with storage_errors("count messages"):
            handle = self.db.table("messages")
            handle.checkout_latest()
            return int(handle.count_rows(f"agent_id = {quote(agent_id)}"))

    def memory_edits(self, agent_id: str, *, up_to_rev: int | None = None) -> list[MemoryEdit]:
        """The agent's memory edit log, oldest first; `up_to_rev` leaves out edits of later (unsaved) steps."""
        where = f"agent_id = {quote(agent_id)}"
        if up_to_rev is not None:
            where += f" AND (rev IS NULL OR rev <= {int(up_to_rev)})"
        return sorted((row_edit(row) for row in self._read("memory_edits", where, None)), key=lambda e: e.at)

    def add_messages(self, agent_id: str, messages: list[tuple[int, Message]]) -> None:
        """Bulk-append messages (imports, benchmarks) in one commit; the agent's state must then count them."""
        self.db.add("messages", [message_row(agent_id, seq, m) for seq, m in messages])
        self.maintenance.committed(["messages"])

    def _read(self, table: str, where: str | None, columns: list[str] | None) -> list[dict[str, Any]]:
        with storage_errors(f"read {table!r}"):
            handle = self.db.table(table)
            handle.checkout_latest()  # see what other processes wrote
            query = handle.search()
            if where:
                query = query.where(where)
            if columns:
                query = query.select(columns)
            return query.limit(None).to_arrow().to_pylist()

    # -- upkeep --------------------------------------------------------------------------------

    def touched(self, table: str) -> None:
        """A write outside a step (archival inserts and deletes): counted towards compaction."""
        self.maintenance.committed([table])

    def wait_for_maintenance(self) -> None:
        """Block until background compaction (if any) has finished."""
        self.maintenance.wait()

    def compact(self) -> None:
        """Compact every table written in this process, and the shared ones, now."""
        self.maintenance.run_now(sorted(set(self.maintenance.commits) | set(TABLES)))

    def close(self) -> None:
        """Give back every lease this process holds and let background maintenance finish."""
        self.leases.release_all()
        self.maintenance.wait()

