"""The store: every agent's rows in one LanceDB database, and the one way a step is written.

A step is written in one order: its messages, then the rows made from them (a tier's, such as
recall vectors), then the agent's state by compare-and-set, then the memory edit log. The state is
the commit point. Messages written after the last saved state (a crash, or a writer that learned
only at its compare-and-set that it had lost the agent) are discarded when the agent is next opened
for writing; the state carries the step's memory edits until they are logged, so an edit is logged
exactly when the block that shows it is saved. Blocks, the edit log, the context and recall agree.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from agentos.blocks import MemoryEdit
from agentos.errors import AgentDeletedError, AgentExistsError, DamagedStoreError, LeaseLostError, StorageError
from agentos.messages import Message
from agentos.storage.agent_rows import AgentRow, AgentRows
from agentos.storage.audit import AUDIT_TABLE, AuditEntry, AuditLog
from agentos.storage.db import Database
from agentos.storage.failures import storage_errors
from agentos.storage.filters import quote
from agentos.storage.forget_rows import pending_table_name
from agentos.storage.lease import Lease
from agentos.storage.lease_keeper import LeaseKeeper
from agentos.storage.maintenance import Maintenance
from agentos.storage.records import edit_row, message_row, row_edit, row_message
from agentos.storage.rewrites import SWAP_SUFFIX
from agentos.storage.salvage import describe_damage, open_newest_readable, orphan_rows, read_fragments, table_path
from agentos.storage.schemas import TABLES, restore_points_table_name, state_table_name
from agentos.storage.shared_blocks import SharedBlocks
from agentos.storage.table_checks import check_table
from agentos.storage.versions import lost_versions

Rows = Any  # a list of row dicts, or a pyarrow Table


@dataclass
class StepWrite:
    """Rows a step (or several, after a failed write) still has to commit before the state they lead to.

    Chunks are appended per table as steps finish; `written` counts the chunks of each table
    already committed, so a write retried after a failure writes no row twice.
    """

    base_rev: int
    rev: int
    chunks: dict[str, list[Rows]] = field(default_factory=dict)
    written: dict[str, int] = field(default_factory=dict)
    id: str = field(default_factory=lambda: uuid.uuid4().hex)  # stored with the state it leads to

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
        self.audit = AuditLog(self.db, self.maintenance.committed)  # who read or changed each agent's memory
        self.shared = SharedBlocks(self.db, self.maintenance.committed)  # blocks several agents of this database use
        self.damage: dict[str, str] = {}  # table -> what could not be read in it, as found by reads in this process

    @property
    def uri(self) -> str:
        return self.db.uri

    # -- agents --------------------------------------------------------------------------------

    def agent_rows(self) -> dict[str, AgentRow]:
        """Every agent's row, by name."""
        return self.agents.all()

    def agent_row(self, name: str) -> AgentRow | None:
        return self.agents.get(name)

    def create_agent(self, name: str, agent_id: str, state_json: str, lease: Lease, *, rev: int = 0) -> None:
        """Add a new agent, held by `lease` from the start (refused while the directory lost committed versions:
        claiming a name commits over them)."""
        lost = self.lost_versions("agents")
        if lost:
            raise DamagedStoreError(
                f"no agent can be created now: the newest {lost} version(s) of the agent directory are missing, "
                f"though their data is still on disk. Run `agentos doctor --repair` to restore them first.")
        self.agents.insert(name, agent_id, state_json, lease, rev=rev)
        self.leases.keep(lease)
        self.maintenance.committed(["agents"])

    def open_agent(self, name: str, lease: Lease, *, agent_id: str | None = None, action: str = "it cannot be opened",
                   hint: str = "Finish that session first.") -> AgentRow:
        """Take the agent for writing (see `AgentRows.acquire`) and keep the lease renewed. Refused while a table
        it writes lost committed versions: the first write would leave them beyond recovery."""
        def refuse_if_versions_lost(row: AgentRow) -> None:
            for table in ("messages", state_table_name(row.agent_id)):
                lost = self.lost_versions(table)
                if lost:
                    what = "its state" if table != "messages" else "the messages of every agent"
                    raise DamagedStoreError(
                        f'agent "{name}": the newest {lost} version(s) of table {table!r} ({what}) are missing, '
                        f"though their data is still on disk, so {action}: a write now would leave them beyond "
                        f"recovery. Run `agentos doctor --repair` to restore them (read-only commands such as "
                        f"`agentos show {name}` keep working).")

        row = self.agents.acquire(name, lease, agent_id=agent_id, action=action, hint=hint,
                                  check=refuse_if_versions_lost)
        self.leases.keep(lease)
        self.maintenance.committed([state_table_name(row.agent_id)])
        return row

    def rename_agents(self, moves: dict[str, tuple[str, str]]) -> None:
        """Rename agents, {agent id: (old name, new name)}, all in one compare-and-set (a swap of two names too)."""
        def move(names: dict[str, str]) -> dict[str, str] | None:
            if any(names.get(old) != agent_id for agent_id, (old, _) in moves.items()):
                return None
            freed = {old for old, _ in moves.values()}
            if any(new in names and new not in freed for _, new in moves.values()):
                return None
            renamed = {old: new for old, new in moves.values()}
            return {renamed.get(name, name): i for name, i in names.items()}

        if not self.agents.directory.change(move):
            names = self.agents.directory.names()
            for agent_id, (old, _) in moves.items():
                if names.get(old) != agent_id:
                    raise AgentDeletedError(f'agent "{old}" was deleted or renamed by another process.')
            taken = next(new for _, new in moves.values() if new in names)
            raise AgentExistsError(f'an agent named "{taken}" already exists. Pick another name.')
        self.maintenance.committed(["agents"])

    def release(self, lease: Lease) -> None:
        self.agents.release(lease)

    def delete_agent(self, agent_id: str, name: str, lease: Lease | None) -> None:
        """Remove an agent: its name first (from then on it does not exist), then its state, messages and edits.
        Refused before anything changes while one of those tables lost committed versions."""
        for table in ("agents", "messages", "memory_edits", AUDIT_TABLE):
            self.db.check_writable(table)
        self.agents.delete(agent_id, lease)
        self.leases.lose(agent_id, AgentDeletedError(f'agent "{name}" was deleted; nothing more is saved.'))
        self.purge(agent_id)

    def purge(self, agent_id: str) -> None:
        """Remove the rows and state table an agent left in storage's own tables (its tiers remove theirs)."""
        with storage_errors("delete the agent's memory"):
            for name in ("messages", "memory_edits", AUDIT_TABLE):
                table = self.db.existing(name)  # one that does not exist holds nothing to remove: it is not made
                if table is None:
                    continue
                self.db.check_writable(name)
                table.checkout_latest()  # rows other processes added since this handle last looked
                table.delete(f"agent_id = {quote(agent_id)}")
            self.db.drop(state_table_name(agent_id))
            self.db.drop(state_table_name(agent_id) + SWAP_SUFFIX)
            self.db.drop(restore_points_table_name(agent_id))
            self.db.drop(pending_table_name(agent_id))

    # -- the step ------------------------------------------------------------------------------

    def write_step(self, agent_id: str, lease: Lease, step: StepWrite, state_json: str,
                   log: list[MemoryEdit] = (),  # type: ignore[assignment]
                   audit: Sequence[AuditEntry] = ()) -> tuple[int, bool]:
        """Commit the step's rows, then move the agent's state from `step.base_rev`; return its new revision,
        and whether `log` (edits of states already saved) reached the edit log, which is written meanwhile, as are
        the step's `audit` entries (once, whatever becomes of the step; a failure there fails nothing).

        Raises a StorageError when a write fails (what was written is counted in `step.written`,
        so the next call goes on from there), and LeaseLostError when the agent is no longer this
        session's to write (taken over, deleted, or changed under it)."""
        if lease.lost:
            raise lease.lost
        if lease.agent_id != agent_id:
            raise LeaseLostError(f"this session holds agent {lease.agent_id!r}, not {agent_id!r}; refusing to write.")
        logged: list[bool] = []

        def beside() -> None:
            if log:
                logged.append(self._log_quietly(agent_id, list(log)))
            self.audit.record(agent_id, audit)

        logger = threading.Thread(target=beside, daemon=True)
        if log or audit:
            logger.start()  # beside the messages: one commit less to wait for in a step after a memory edit
        try:
            tables = step.tables()
            for table in tables:
                rows = step.unwritten(table)
                self.db.add(table, rows)
                step.written[table] = len(step.chunks[table])
            rev = self.agents.write_state(lease, step.base_rev, step.rev, state_json, step.id)
        finally:
            if log or audit:
                logger.join()
        self.maintenance.committed([*tables, state_table_name(agent_id)])
        return rev, bool(logged and logged[0])

    def _log_quietly(self, agent_id: str, edits: list[MemoryEdit]) -> bool:
        try:
            self.log_edits(agent_id, edits)
        except StorageError:
            return False  # they stay in the saved state; the next write or open logs them
        return True

    def log_edits(self, agent_id: str, edits: list[MemoryEdit], *, some_logged: bool = False) -> None:
        """Append saved memory edits to the log. With `some_logged` (opening after a crash between the two
        writes), those already there are left out."""
        if not edits:
            return
        missing = edits
        if some_logged:
            revs = ", ".join(str(int(e.rev or 0)) for e in edits)
            logged = {(e.rev, e.label, e.at) for e in self.memory_edits(agent_id, f"rev IN ({revs})")}
            missing = [e for e in edits if (e.rev, e.label, e.at) not in logged]
        self.db.add("memory_edits", [edit_row(agent_id, e) for e in missing])
        if missing:
            self.maintenance.committed(["memory_edits"])

    def uncommitted(self, agent_id: str, message_count: int) -> list[str]:
        """Ids of messages a cut-short step wrote after the agent's last state (`seq` from `message_count` on)."""
        where = f"agent_id = {quote(agent_id)} AND seq >= {int(message_count)}"
        rows = self._read("messages", where, ["id"])
        return [r["id"] for r in rows]

    def lost_state(self, agent_id: str, rev: int) -> int | None:
        """The revision of a state of this agent newer than `rev` that only an unreferenced data file of its state
        table holds (its manifest was lost), or None. Local databases only; elsewhere None."""
        if "://" in self.db.uri:
            return None
        path = table_path(self.db.uri, state_table_name(agent_id))
        if not lost_versions(path):
            return None  # orphan rows, if any, are a cut-short write's: never committed
        try:
            rows, _ = orphan_rows(open_newest_readable(path)[0], path)
        except Exception:  # noqa: BLE001 - the state table opened a moment ago; nothing more to learn here
            return None
        newer = [int(r) for r in (rows.column("rev").to_pylist() if rows is not None else []) if int(r) > rev]
        return max(newer, default=None)

    def lost_versions(self, table: str) -> int:
        """How many newest versions of a local table lost their manifest (see `salvage.lost_versions`)."""
        return 0 if "://" in self.db.uri else lost_versions(table_path(self.db.uri, table))

    def discard_messages(self, agent_id: str, ids: list[str]) -> None:
        """Delete these messages of the agent (a cut-short step's, or a write that found it had lost the agent)."""
        for start in range(0, len(ids), 500):
            chunk = ", ".join(quote(i) for i in ids[start : start + 500])
            with storage_errors("repair the agent's last step"):
                table = self.db.table("messages")
                self.db.check_writable("messages")
                table.checkout_latest()
                table.delete(f"agent_id = {quote(agent_id)} AND id IN ({chunk})")

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

    def messages_between(self, agent_id: str, first_seq: int, end_seq: int) -> list[tuple[int, Message]]:
        """The agent's messages with `first_seq <= seq < end_seq`, as (seq, message), in order."""
        if end_seq <= first_seq:
            return []
        where = f"agent_id = {quote(agent_id)} AND seq >= {int(first_seq)} AND seq < {int(end_seq)}"
        rows = self._read("messages", where, None)
        return sorted(((int(r["seq"]), row_message(r)) for r in rows), key=lambda pair: pair[0])

    def existing_message_ids(self, agent_id: str, ids: list[str]) -> list[str]:
        """Those of `ids` that are messages of the agent in the table."""
        return [m.id for m in self.get_messages(agent_id, ids)]

    def count_messages(self, agent_id: str, below: int | None = None) -> int:
        """How many of the agent's messages (with `seq < below`, if given) can be read. The rows themselves are read,
        not counted from an index: an index still counts the rows of a data file that is lost or cut short."""
        where = f"agent_id = {quote(agent_id)}" + (f" AND seq < {int(below)}" if below is not None else "")
        try:
            with storage_errors("count messages"):
                handle = self.db.table("messages")
                handle.checkout_latest()
                return int(handle.search().where(where).select(["seq"]).limit(None).to_arrow().num_rows)
        except StorageError as exc:
            return len(self._salvage("messages", where, ["seq"], exc))

    def memory_edits(self, agent_id: str, where: str | None = None) -> list[MemoryEdit]:
        """The agent's memory edit log, oldest first (only saved edits are ever logged)."""
        clause = f"agent_id = {quote(agent_id)}" + (f" AND {where}" if where else "")
        return sorted((row_edit(row) for row in self._read("memory_edits", clause, None)), key=lambda e: e.at)

    def add_messages(self, agent_id: str, messages: list[tuple[int, Message]]) -> None:
        """Bulk-append messages (imports, benchmarks) in one commit; the agent's state must then count them."""
        self.db.add("messages", [message_row(agent_id, seq, m) for seq, m in messages])
        self.maintenance.committed(["messages"])

    def _read(self, table: str, where: str | None, columns: list[str] | None) -> list[dict[str, Any]]:
        try:
            with storage_errors(f"read {table!r}"):
                handle = self.db.table(table)
                handle.checkout_latest()  # see what other processes wrote
                query = handle.search()
                if where:
                    query = query.where(where)
                if columns:
                    query = query.select(columns)
                return query.limit(None).to_arrow().to_pylist()
        except StorageError as exc:
            return self._salvage(table, where, columns, exc)

    def _salvage(self, table: str, where: str | None, columns: list[str] | None,
                 error: StorageError) -> list[dict[str, Any]]:
        """The rows a failed read wanted that the table's readable fragments hold, the damage noted in `damage`;
        the original error when the table has no damage a fragment-wise read gets around."""
        try:
            dataset, skipped = open_newest_readable(table_path(self.db.uri, table), self.db.storage_options)
            rows, bad = read_fragments(dataset, where, columns)
        except Exception:  # noqa: BLE001 - no way around it: the read's own error says what happened
            raise error from None
        if not bad and not skipped:
            raise error
        self.damage[table] = describe_damage(table, bad, skipped)
        return rows.to_pylist()

    def check_tables(self, tables: dict[str, str]) -> list[str]:
        """Look for damage in these tables, {name: what it holds}, without reading their rows (see `table_checks`);
        each damaged one that no read has noted yet is noted in `damage`. What was found, described."""
        found = []
        for name, what in tables.items():
            if name in self.damage:
                continue
            damaged = check_table(self.db.uri, name, self.db.storage_options)
            if damaged is not None:
                self.damage[name] = damaged.describe(what)
                found.append(self.damage[name])
        return found

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
        """Give back every lease this process holds, let background maintenance finish, and compact the tables
        this process wrote that are worn (see `Maintenance.finish`)."""
        self.leases.release_all()
        self.maintenance.finish()

