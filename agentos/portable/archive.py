"""The agentos export file: one agent, everything it knows, in one portable file.

A zip of stored members: `manifest.json` (format, version, what is inside and how many rows), `state.json`
(the agent's state: settings, blocks, in-context ids, summary, counters; secrets live in the config file and are
never in it), and one Arrow IPC stream (zstd-compressed) per table: the agent's messages, its memory edit log, its restore points
and every table of every memory tier (`tiers/<tier>/<table>.arrow`, found through `Tier.table_names`, so a new tier
is exported with no change here). Arrow keeps vectors as float32 and each table's schema metadata (the embedder's
identity); the zip keeps a CRC of every member, and `archive_checks` reads every member through against the schema
of its table and the rows the manifest counts, so a damaged file is refused before anything is written.
Tables are streamed in batches both ways: memory stays bounded whatever the agent's size. The file is written as
`TARGET.partial` under a lock and renamed once whole (see `PartialFile`).
"""

from __future__ import annotations

import json
import os
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import pyarrow as pa
import pyarrow.ipc as ipc
from pydantic import ValidationError

from agentos.agent.agent import Agent
from agentos.agent.directory import is_empty
from agentos.agent.sharing import link_imported
from agentos.agent.state import AgentState, validate_name
from agentos.errors import AgentExistsError, AgentOSError
from agentos.memory import tiers as tier_registry
from agentos.messages import new_id
from agentos.portable.archive_checks import (
    AGENT_PLACEHOLDER,
    FORMAT,
    FORMAT_VERSION,
    STATE,
    ZIP_ERRORS,
    ExportFileError,
    check_members,
    read_manifest,
    reason,
)
from agentos.portable.archive_checks import member_label as _member_label
from agentos.portable.trust import check_model_server
from agentos.providers.models import parse_spec
from agentos.storage.audit import AUDIT_TABLE, change
from agentos.storage.filters import quote
from agentos.storage.lease import Lease
from agentos.storage.schemas import restore_points_table_name
from agentos.storage.store import Store
from agentos.version import __version__

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no locks; a stale partial file is still written over
    fcntl = None  # type: ignore[assignment]

SUFFIX = ".agentos"
BATCH_ROWS = 4096
__all__ = ["FORMAT", "FORMAT_VERSION", "ExportFileError", "TransferReport", "copy_agent", "export_agent",
           "import_agent", "open_export", "read_manifest"]

Progress = Callable[[str, int, int], None]  # (what, done, total)


@dataclass
class TransferReport:
    """What an export or import did: the agent, the rows of each member, and what was left out (and why)."""

    name: str
    path: Path
    rows: dict[str, int] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what else it did (a stale partial file it removed)

    def lines(self) -> list[str]:
        counts = ", ".join(f"{n:,} {member}" for member, n in self.rows.items())
        out = [f'agent "{self.name}" <-> {self.path}: {counts or "no rows"}']
        out += [f"  not imported: {why}" for why in self.skipped]
        out += [f"  {note}" for note in self.notes]
        return out


def _tier_members(agent_id: str) -> Iterator[tuple[str, str, str]]:
    """(member, table, tier name) of every table every tier may hold for the agent."""
    for kind in tier_registry.TIER_KINDS:  # looked up now: a tier registered since is included
        for template, table in zip(kind.table_names(AGENT_PLACEHOLDER), kind.table_names(agent_id), strict=True):
            yield f"tiers/{kind.name}/{template}.arrow", table, kind.name


def _write_stream(out: IO[bytes], schema: pa.Schema, batches: Iterator[pa.RecordBatch]) -> int:
    options = ipc.IpcWriteOptions(compression="zstd")
    rows = 0
    with ipc.new_stream(out, schema, options=options) as writer:
        for batch in batches:
            writer.write_batch(batch)
            rows += batch.num_rows
    return rows


def _scan(store: Store, table: str, where: str | None) -> tuple[pa.Schema, int, Iterator[pa.RecordBatch]] | None:
    """The table's schema, the number of matching rows and a stream of them; None when the table does not exist."""
    handle = store.db.existing(table)
    if handle is None:
        return None
    handle.checkout_latest()
    dataset = handle.to_lance()
    total = int(dataset.count_rows(filter=where)) if where else int(dataset.count_rows())
    schema = handle.schema
    if where is None:  # a table of its own: read by row ranges (Lance's scanner reads far ahead on big vector columns)
        ranges = (dataset.take(pa.array(range(start, min(start + BATCH_ROWS, total)), pa.int64())).to_batches()
                  for start in range(0, total, BATCH_ROWS))
        return schema, total, _rebatched((batch for batches in ranges for batch in batches), schema)
    scan = dataset.to_batches(filter=where, batch_size=BATCH_ROWS, batch_readahead=2, fragment_readahead=1)
    return schema, total, _rebatched(scan, schema)


def _rebatched(batches: Iterator[pa.RecordBatch], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """Batches of about BATCH_ROWS rows (a table written step by step has many small fragments), with `schema`."""
    pending: list[pa.RecordBatch] = []
    rows = 0
    for batch in batches:
        if batch.num_rows:
            pending.append(batch)
            rows += batch.num_rows
        if rows >= BATCH_ROWS:
            yield from pa.Table.from_batches(pending).cast(schema).combine_chunks().to_batches()
            pending, rows = [], 0
    if pending:
        yield from pa.Table.from_batches(pending).cast(schema).combine_chunks().to_batches()


def _counted(batches: Iterator[pa.RecordBatch], what: str, total: int, progress: Progress | None) -> Iterator[pa.RecordBatch]:
    done = 0
    for batch in batches:
        done += batch.num_rows
        if progress is not None:
            progress(what, done, total)
        yield batch


def export_agent(store: Store, name: str, path: Path, progress: Progress | None = None,
                 held: Agent | None = None) -> TransferReport:
    """Write agent `name` to `path`. The agent is held for the export (refused while another process has it open),
    so no step lands while its tables are read; `held` is the caller's own open Agent of that name, saved first.
    The file appears only once complete."""

    agent = held or Agent.load(name, store=store, with_model=False)
    try:
        agent.save()
        report = _export(store, agent.state.snapshot(), name, path, progress)
        agent.note_read("export", sum(report.rows.values()), detail=path.name)
        return report
    finally:
        if held is None:
            agent.close()


def _export(store: Store, state: AgentState, name: str, path: Path, progress: Progress | None) -> TransferReport:
    agent_id = state.id
    report = TransferReport(name=name, path=path)
    tables: list[tuple[str, str, str | None]] = [
        ("messages.arrow", "messages", f"agent_id = {quote(agent_id)} AND seq < {state.message_count}"),
        ("memory_edits.arrow", "memory_edits", f"agent_id = {quote(agent_id)}"),
        ("audit_log.arrow", AUDIT_TABLE, f"agent_id = {quote(agent_id)}"),
        ("restore_points.arrow", restore_points_table_name(agent_id), f"rev <= {state.rev}"),
        *((member, table, None) for member, table, _ in _tier_members(agent_id)),
    ]
    members: dict[str, dict[str, Any]] = {}
    with PartialFile(path) as partial:
        with zipfile.ZipFile(partial.file, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as archive:
            archive.writestr(STATE, state.model_dump_json())
            for member, table, where in tables:
                scanned = _scan(store, table, where)
                if scanned is None:
                    continue
                schema, total, batches = scanned
                with archive.open(member, "w", force_zip64=True) as out:
                    rows = _write_stream(out, schema, _counted(batches, _member_label(member), total, progress))
                if progress is not None and rows == 0:
                    progress(_member_label(member), 0, 0)
                members[member] = {"rows": rows}
                report.rows[_member_label(member)] = rows
            manifest = {"format": FORMAT, "format_version": FORMAT_VERSION, "exported_at": datetime.now(UTC).isoformat(),
                        "name": name, "agent_id": agent_id, "members": members}

            manifest["agentos_version"] = __version__
            archive.writestr("manifest.json", json.dumps(manifest, indent=1))
        partial.commit()
    report.notes += [partial.note] if partial.note else []
    return report


class PartialFile:
    """The file an export writes until it is whole: `TARGET.partial`, renamed to TARGET by `commit` (without a commit
    it is removed). Its process holds an exclusive `flock` on it while it writes, which the system drops however the
    process ends: one that can be locked was left by a killed export, and is written over (`note` says so); one that
    cannot is another process's export still being written, left alone, and this export is refused."""

    def __init__(self, target: Path) -> None:
        self.target, self.path = target, target.with_name(target.name + ".partial")
        self.note: str | None = None
        self.file: IO[bytes] = None  # type: ignore[assignment]  # set by __enter__
        self._committed = False

    def __enter__(self) -> PartialFile:
        for _ in range(100):  # the file at `path` was replaced between opening and locking it: open it again
            stale = _size(self.path)
            handle = os.fdopen(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666), "r+b")
            if not _lock(handle):
                handle.close()
                raise AgentOSError(f"another export is writing {self.target} now ({self.path.name} is in use); wait "
                                   f"for it to finish, or export to another file.")
            if _size(self.path) is not None and os.fstat(handle.fileno()).st_ino == os.stat(self.path).st_ino:
                break
            handle.close()
        else:  # pragma: no cover - other processes replace the file a hundred times in a row
            raise AgentOSError(f"cannot take {self.path} for the export: other processes keep replacing it.")
        if stale is not None:
            self.note = f"removed {self.path.name} ({stale:,} bytes), left by an export that was cut short"
        handle.truncate(0)
        self.file = handle
        return self

    def commit(self) -> None:
        """The file is complete: put it in place, still locked (no other export takes it meanwhile)."""
        self.file.flush()
        os.fsync(self.file.fileno())
        self.path.replace(self.target)
        self._committed = True

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        try:
            if not self._committed:
                self.path.unlink(missing_ok=True)
        finally:
            self.file.close()  # and the lock with it


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return None


def _lock(handle: IO[bytes]) -> bool:
    """Take the file's lock without waiting; False when another process holds it."""
    if fcntl is None:  # pragma: no cover
        return True
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def open_export(path: Path) -> zipfile.ZipFile:
    """The export file opened and every member's checksum verified (a damaged or cut-short file is refused)."""
    try:
        archive = zipfile.ZipFile(path)
    except FileNotFoundError:
        raise ExportFileError(f"{path} does not exist.") from None
    except OSError as exc:
        raise ExportFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    except ZIP_ERRORS:
        raise ExportFileError(f"{path} is not a complete agentos export: it is cut short or not a zip file at all. "
                              f"Export the agent again.") from None
    try:
        bad = archive.testzip()
    except (*ZIP_ERRORS, OSError) as exc:  # OSError: a header that sends a read before the file's start
        archive.close()
        raise ExportFileError(f"{path} is damaged ({reason(exc)}). Export the agent again.") from None
    if bad is not None:
        archive.close()
        raise ExportFileError(f"{path} is damaged: member {bad} fails its checksum. Export the agent again.")
    return archive


def _read_stream(archive: zipfile.ZipFile, member: str) -> ipc.RecordBatchStreamReader:
    return ipc.open_stream(archive.open(member))


def _with_agent(batches: Iterator[pa.RecordBatch], agent_id: str) -> Iterator[pa.RecordBatch]:
    """The batches with their agent_id column set to `agent_id` (an import may give the agent a new id)."""
    for batch in batches:
        index = batch.schema.get_field_index("agent_id")
        if index >= 0:
            batch = batch.set_column(index, batch.schema.field(index), pa.array([agent_id] * batch.num_rows, pa.string()))
        yield batch


def import_agent(store: Store, path: Path, name: str | None = None, progress: Progress | None = None,
                 model: str | None = None) -> TransferReport:
    """Restore the agent in export file `path` as `name` (default: its own), under a new internal id. Refused, with
    nothing written, when the name is taken, the file is damaged, or its model would send a key to a server not on this
    machine (`model` chooses one instead); a failure part-way removes what was written.

    Every check comes before the first write: the manifest's shape, the state, and every table read through
    against the schema its table must have and the rows the manifest counts (see `archive_checks`)."""

    with open_export(path) as archive:
        manifest = read_manifest(archive, path)
        try:
            state = AgentState.model_validate_json(archive.read(STATE))
        except ValidationError as exc:
            raise ExportFileError(f"{path} holds an agent state this agentos cannot read: "
                                  f"{reason(ValueError(exc.errors()[0]['msg']))}.") from None
        except (*ZIP_ERRORS, OSError) as exc:
            raise ExportFileError(f"{path} is damaged: its state cannot be read ({reason(exc)}).") from None
        target = validate_name(name or state.name)
        if not is_empty(store) and store.agent_row(target) is not None:  # a new data home is not made yet
            hint = "Import it under another name with --name NEW." if name is None else "Pick another name."
            raise AgentExistsError(f'an agent named "{target}" already exists. {hint}')
        if model is not None:
            parse_spec(model)  # a bad spec is refused before anything is written
            state.model = model
        else:
            check_model_server(state.model, path)
        check_members(archive, path, manifest, state)
        agent_id = new_id("agent")  # its own: two imports of one file, or one after a crashed import, never share rows
        report = TransferReport(name=target, path=path)
        members: dict[str, Any] = manifest["members"]
        tiers = {member: table for member, table, _ in _tier_members(agent_id)}
        tiers["restore_points.arrow"] = restore_points_table_name(agent_id)  # per agent, created whole like a tier's
        made: list[str] = []  # shared blocks this import made
        try:
            for member, info in members.items():
                total = int(info["rows"])
                label = _member_label(member)
                reader = _read_stream(archive, member)
                batches = _counted(_with_agent(iter(reader), agent_id), label, total, progress)
                if member in ("messages.arrow", "memory_edits.arrow", "audit_log.arrow"):  # shared tables
                    if total:
                        store.db.add_stream(member.removesuffix(".arrow"),
                                            pa.RecordBatchReader.from_batches(reader.schema, batches))
                elif member in tiers:
                    store.db.create_stream(tiers[member], pa.RecordBatchReader.from_batches(reader.schema, batches))
                else:
                    report.skipped.append(f"{label} ({total} rows): its memory tier is not installed here")
                    continue
                report.rows[label] = total
            state.id, state.name = agent_id, target
            state.blocks, shared_notes, made = link_imported(store, state.blocks)
            report.notes += shared_notes
            lease = Lease(agent_id=agent_id, name=target)
            store.create_agent(target, agent_id, state.model_dump_json(), lease, rev=state.rev)
        except BaseException as exc:  # not registered: what this call wrote, under its own new id, goes
            for shared_id in made:
                store.shared.remove(shared_id)
            store.purge(agent_id)
            tier_registry.delete_tiers(store.db, agent_id)
            if isinstance(exc, (pa.ArrowException, ValueError)) and not isinstance(exc, AgentOSError):
                raise ExportFileError(f"{path} is damaged: a table in it cannot be read ({reason(exc)}). Nothing "
                                      f"was imported; export the agent again.") from exc
            raise
    store.release(lease)  # registered and complete from here on
    store.audit.record(agent_id, [change("import", sum(report.rows.values()), detail=path.name)])
    Agent.load(target, store=store, read_only=True)  # it opens: the check a user would make next
    return report


def copy_agent(store: Store, name: str, new: str, progress: Progress | None = None,
               held: Agent | None = None) -> TransferReport:
    """An independent copy of agent `name` as `new` (a fork, or the copy a rewind keeps), through an export file in
    a scratch folder; `held` as for `export_agent`."""
    with tempfile.TemporaryDirectory(prefix="agentos-copy-") as scratch:
        path = Path(scratch) / f"{name}{SUFFIX}"
        export_agent(store, name, path, progress, held)
        return import_agent(store, path, new, progress)
