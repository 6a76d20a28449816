"""The LanceDB connection: opening tables (created, upgraded or restored as needed), bounded caches, writes."""

from __future__ import annotations

import ctypes
import os
import platform
import shutil
import sys
import threading
import time
import warnings
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa

from agentos.errors import DamagedStoreError, StorageError
from agentos.storage.failures import retry_conflicts, storage_errors
from agentos.storage.group_commit import GroupCommit
from agentos.storage.indexes import INDEXES, ensure_indexes
from agentos.storage.migrations import upgrade
from agentos.storage.reads import Reads
from agentos.storage.rewrites import SWAP_SUFFIX, replace_table, restore_interrupted_swap
from agentos.storage.schemas import TABLES, schema_version
from agentos.storage.vector_index import ensure_vector_index
from agentos.storage.versions import lost_versions
from agentos.storage.wear import Wear, table_wear

os.environ.setdefault("LANCEDB_LOG", "error")

# Bounded, so a long-running process stays small. The index cache must hold the indexes a search reads: an agent of
# 100k messages with bge has ~31 MB of them on disk (recall vectors 12, exchanges' and messages' BM25 7 and 5, ids
# 2 each); at 8 MiB they were read again on every query (benchmarks/recall_search.py at 100k, 8 -> 64 MiB: search
# p50 26.5-28.7 -> 15.8-16.2 ms, p95 34.3-36.2 -> 18.4-18.5 ms; without an embedder p50 11.4-11.6 -> 8.9-9.5 ms);
# 64 leaves room above 32, where they just fit. LanceDB's index cache also keeps every table version's index list
# (~1.7 KiB each, never read again once the table moves on) until it is full, so in a long-running process the cache
# fills to its bound: up to ~56 MiB more heap than at 8 (3,000 steps on that agent: 260 -> 385 MiB, against
# 248 -> 314 MiB at 8). A 1M-passage archive's vector index needs more: AGENTOS_INDEX_CACHE_MB sets it (docs/storage.md).
METADATA_CACHE_BYTES = 32 * 1024 * 1024
INDEX_CACHE_BYTES = int(float(os.environ.get("AGENTOS_INDEX_CACHE_MB") or 64) * 1024 * 1024)
# Lance file format of new tables. 2.1 reads scattered rows (a page of search results, vectors to
# re-rank) about twice as fast as the newer default: taking 5 rows' text, tags and created_at out
# of 1M passages took 3.4 ms instead of 8.7 ms. Tables written in another format keep working.
DATA_STORAGE_VERSION = "2.1"


LEFTOVER_AGE_S = 60.0  # an empty table folder this old is no other process's create in progress

MALLOC_ARENAS = 2  # glibc malloc arenas of a process that opens a database (see `tune_malloc`)
MALLOC_MMAP_THRESHOLD = 256 * 1024  # larger allocations are mapped on their own, and given back when freed
_M_ARENA_MAX = -8  # mallopt's parameter numbers
_M_MMAP_THRESHOLD = -3


def tune_malloc() -> None:
    """Set glibc's malloc for a long-lived process before LanceDB starts its threads (each setting unless its
    environment variable says otherwise). Elsewhere than glibc, nothing is done.

    Arenas: glibc gives threads that allocate at the same moment arenas of their own, up to 8 per core, and memory
    freed in an arena stays there; LanceDB's worker threads spread a process's native allocations over all of them
    (one agent's soak grew from 267 to 533 MiB RSS over 6,000 turns; 335 MiB with two arenas). The mmap threshold:
    glibc raises it as large blocks are freed, after which LanceDB's large buffers come from the heap and their
    freed space stays held (20-35 MiB in a 5,000-turn soak; 2-10 MiB with the threshold kept at 256 KiB)."""
    global _malloc_tuned
    if _malloc_tuned:
        return
    _malloc_tuned = True
    if sys.platform != "linux" or platform.libc_ver()[0] != "glibc":
        return
    settings = [(_M_ARENA_MAX, MALLOC_ARENAS, "MALLOC_ARENA_MAX"),
                (_M_MMAP_THRESHOLD, MALLOC_MMAP_THRESHOLD, "MALLOC_MMAP_THRESHOLD_")]
    try:
        libc = ctypes.CDLL(None)
        for parameter, value, variable in settings:
            if variable not in os.environ:
                libc.mallopt(parameter, value)
    except (OSError, AttributeError):
        pass


_malloc_tuned = False


def _empty_leftover(folder: Path) -> bool:
    """Whether a table folder holds nothing a commit made: no manifest and no data file."""
    return not any(folder.glob("_versions/*.manifest")) and not any(folder.glob("data/*"))


def _age_s(folder: Path) -> float:
    try:
        return time.time() - folder.stat().st_mtime
    except OSError:
        return 0.0


class Database:
    """One LanceDB database (a local directory or any LanceDB URI) holding every agent."""

    def __init__(self, uri: str | Path, storage_options: dict[str, str] | None = None) -> None:
        self.uri = str(uri)
        self.storage_options = storage_options
        self._conn: Any = None
        self._session: Any = None
        self._tables: dict[str, Any] = {}
        self._schemas: dict[str, pa.Schema] = {}  # of the open tables: asking a handle costs a round trip
        self._lock = threading.RLock()
        self._failed_creates: set[str] = set()  # tables whose first commit failed in this process (a full disk)
        self._checked: set[str] = set()  # tables found to have all their committed versions (`check_writable`)
        self._groups: dict[str, GroupCommit] = {}  # each table's appends, committed together (see `add`)
        self.reads = Reads(self._connect_async)  # searches: the async API, on agentos's own loop

    @property
    def connection(self) -> Any:
        if self._conn is None:
            tune_malloc()
            import lancedb

            if "://" not in self.uri:
                with storage_errors(f"create the data directory {self.uri}"):
                    Path(self.uri).mkdir(parents=True, exist_ok=True)
            self._session = lancedb.Session(
                metadata_cache_size_bytes=METADATA_CACHE_BYTES, index_cache_size_bytes=INDEX_CACHE_BYTES
            )
            with storage_errors(f"open the database at {self.uri}"):
                self._conn = lancedb.connect(self.uri, session=self._session, storage_options=self._options())
        return self._conn

    def _options(self) -> dict[str, str]:
        return {"new_table_data_storage_version": DATA_STORAGE_VERSION, **(self.storage_options or {})}

    async def _connect_async(self) -> Any:
        import lancedb

        _ = self.connection  # the session the sync connection made, shared
        return await lancedb.connect_async(self.uri, session=self._session, storage_options=self._options())

    def table(self, name: str, schema: pa.Schema | None = None, indexes: dict[str, str] | None = None) -> Any:
        """Open a table, creating it on first use; refuse one written by a newer agentos, upgrade an older one.

        Tables not in TABLES (a tier's per-agent tables) pass their `schema` and `indexes`.
        """
        with self._lock:
            if name in self._tables:
                return self._tables[name]
            expected = schema if schema is not None else TABLES[name]
            with storage_errors(f"open table {name!r} in {self.uri}"):
                table = self._open_listed(name) if name in self._table_names(name) else None
                if table is not None:
                    found = schema_version(table.schema)
                    wanted = schema_version(expected)
                    if found > wanted:
                        raise StorageError(
                            f"table {name!r} in {self.uri} has schema version {found}, newer than this agentos "
                            f"understands ({wanted}). Upgrade agentos."
                        )
                    if found < wanted:
                        table = self._migrate(name, table, found, expected)
                else:
                    table = self._create_empty(name, expected)
                ensure_indexes(table, indexes if indexes is not None else INDEXES.get(name, {}))
                self._schemas[name] = table.schema
            self._tables[name] = table
            return table

    def _create_empty(self, name: str, schema: pa.Schema) -> Any:
        """Create an empty table, remembering a failed create (its folder is then this process's to remove)."""
        try:
            return self.connection.create_table(name, schema=schema, exist_ok=True)
        except Exception:
            self._failed_creates.add(name)
            raise

    def recover(self, name: str) -> None:
        """Finish a replacement of `name` that a crash cut short (see `replace_table`); a writer does this."""
        with self._lock, storage_errors(f"recover table {name!r}"):
            self._table_names(name)

    def existing(self, name: str) -> Any | None:
        """A table that exists, opened as it is: nothing is created, indexed, upgraded or restored (read-only use);
        None when there is none."""
        with self._lock:
            if name in self._tables:
                return self._tables[name]
            with storage_errors(f"open table {name!r} in {self.uri}"):
                if name not in self.connection.list_tables().tables:
                    return None
                table = self._open_listed(name, remove_leftover=False)
            if table is None:
                return None
            self._tables[name], self._schemas[name] = table, table.schema
            return table

    def _open_listed(self, name: str, *, remove_leftover: bool = True) -> Any | None:
        """Open a table the database lists; None when it is only the empty folder a create cut short left (a full
        disk at its first commit: no manifest, no data file). With `remove_leftover` (a writer about to create the
        table) the folder is removed first, if this process's own create failed or it is old enough that no
        other process can still be creating it."""
        try:
            return self.connection.open_table(name)
        except Exception as exc:
            folder = Path(self.uri) / f"{name}.lance"
            if "://" in self.uri or "not found" not in str(exc).lower() or not _empty_leftover(folder):
                raise
            if remove_leftover and (name in self._failed_creates or _age_s(folder) > LEFTOVER_AGE_S):
                shutil.rmtree(folder, ignore_errors=True)
                self._failed_creates.discard(name)
            return None

    def _handle(self, name: str) -> Any | None:
        """This process's handle of a listed table, or one opened as it is (None for an empty leftover folder)."""
        handle = self._tables.get(name)
        return handle if handle is not None else self._open_listed(name, remove_leftover=False)

    def _table_names(self, name: str) -> list[str]:
        """The database's tables, after finishing a swap of `name` that a crash cut short."""
        names = self.connection.list_tables().tables
        if name + SWAP_SUFFIX in names:
            restore_interrupted_swap(self.connection, name, names)
            names = self.connection.list_tables().tables
        return names

    def _migrate(self, name: str, table: Any, found: int, schema: pa.Schema) -> Any:
        """Upgrade a table written by an older agentos to `schema`, crash-safe (see `replace_table`)."""
        try:
            upgraded = upgrade(self.create, name, table.to_arrow(), found, schema_version(schema))
        except (KeyError, ValueError, TypeError, pa.ArrowException) as exc:  # rows that are not what that version wrote
            raise StorageError(
                f"table {name!r} in {self.uri} has schema version {found}, but its rows do not match that version, "
                f"so it cannot be upgraded ({type(exc).__name__}: {exc}). Run `agentos doctor` to see what it holds."
            ) from exc
        if upgraded is None:
            raise StorageError(
                f"table {name!r} in {self.uri} has schema version {found}, which this agentos cannot upgrade "
                f"to version {schema_version(schema)}."
            )
        replace_table(self, name, schema, upgraded.select(schema.names).cast(schema))
        return self.connection.open_table(name)

    def create(self, name: str, schema: pa.Schema, rows: list[dict[str, Any]]) -> bool:
        """Create table `name` holding `rows`, in one commit; False (and nothing written) if it exists."""
        with self._lock:
            with storage_errors(f"create table {name!r}"):
                if name in self._table_names(name) and self._open_listed(name) is not None:
                    return False
                try:
                    self._tables[name] = self.connection.create_table(name, pa.Table.from_pylist(rows, schema=schema))
                except Exception:
                    self._failed_creates.add(name)
                    raise
                self._schemas[name] = schema
        return True

    def exists(self, name: str) -> bool:
        """Whether the table exists now (asked of the database, not of this process's open handles)."""
        with storage_errors(f"list tables in {self.uri}"):
            return name in self.connection.list_tables().tables

    def drop(self, name: str) -> None:
        """Drop a table if it exists."""
        with self._lock:
            self._checked.discard(name)
            self._tables.pop(name, None)
            self._schemas.pop(name, None)
            self._groups.pop(name, None)
            self.reads.forget(name)
            with storage_errors(f"drop table {name!r}"):
                if name in self.connection.list_tables().tables:
                    self.connection.drop_table(name)

    def count_rows(self, name: str) -> int | None:
        """Rows in a table at its latest version, or None when it does not exist (no checks, no repairs)."""
        with storage_errors(f"count rows of {name!r}"):
            if name not in self.connection.list_tables().tables:
                self.forget(name)  # dropped, perhaps by another process
                return None
            stale = self.cached(name)  # a handle of this process may be behind other processes' commits
            handle = self._handle(name)
            if handle is None:
                return None
            if stale:
                handle.checkout_latest()
            return int(handle.count_rows())

    def optimize(self, name: str, cleanup_older_than: timedelta = timedelta(minutes=2), *,
                 fold_indexes: bool = True) -> bool:
        """Compact a table, remove its versions older than `cleanup_older_than` and (`fold_indexes`) fold new rows
        into its indexes (a large vector table gets its vector index); False when the table does not exist.

        Folding rows into a full-text index rewrites the index, so it costs in proportion to the table; without it,
        new rows stay unindexed, and searches read them as they are (see `Maintenance`)."""
        with storage_errors(f"compact {name!r}"):
            handle = self._handle(name) if self.cached(name) or name in self._table_names(name) else None
        if handle is None:
            return False
        # two compactions at once (`agentos compact` beside an agent's background maintenance): the later one retries
        if fold_indexes:
            retry_conflicts(f"compact {name!r}", lambda: handle.optimize(cleanup_older_than=cleanup_older_than),
                            handle.checkout_latest)
            with storage_errors(f"compact {name!r}"):
                ensure_vector_index(handle)
            return True
        retry_conflicts(f"compact {name!r}", handle.compact_files, handle.checkout_latest)
        with warnings.catch_warnings(), storage_errors(f"clean up {name!r}"):
            warnings.simplefilter("ignore", DeprecationWarning)  # what optimize() does, less the indexes
            handle.cleanup_old_versions(cleanup_older_than)
        return True

    def wear(self, name: str) -> Wear | None:
        """How worn table `name` is now (see `Wear`); None when it does not exist."""
        with storage_errors(f"inspect {name!r}"):
            if name not in self.connection.list_tables().tables:
                return None
            handle = self._handle(name)
            if handle is None:
                return None
            local = "://" not in self.uri  # local: the manifests are files; listing them is cheap
            return table_wear(handle, Path(self.uri) / f"{name}.lance" / "_versions" if local else None)

    def check_writable(self, name: str) -> None:
        """Refuse to write table `name` while its newest committed versions are missing (their manifests lost):
        a write would take their version numbers and leave their rows beyond recovery. Checked once per table
        and process (a listing of a local table's manifests); object stores are not checked."""
        if name in self._checked or "://" in self.uri:
            return
        lost = lost_versions(str(Path(self.uri) / f"{name}.lance"))
        if lost:
            raise DamagedStoreError(
                f"cannot write to table {name!r}: its newest {lost} version(s) are missing, though their data is "
                f"still on disk, and a write now would leave them beyond recovery. Run `agentos doctor --repair` "
                f"to restore them (reading keeps working).")
        self._checked.add(name)

    def cached(self, name: str) -> bool:
        return name in self._tables

    def forget(self, name: str) -> None:
        """Drop a cached handle (after another handle replaced the table)."""
        with self._lock:
            self._tables.pop(name, None)
            self._schemas.pop(name, None)
            self.reads.forget(name)

    def add_stream(self, name: str, reader: pa.RecordBatchReader) -> None:
        """Append a stream of batches to an existing table (one of TABLES) in one commit, without holding them all."""
        table = self.table(name)
        self.check_writable(name)
        schema = table.schema
        cast = (batch.select(schema.names).cast(schema) for batch in reader)  # the table's own column order and types
        with storage_errors(f"write to {name!r}"):
            table.add(pa.RecordBatchReader.from_batches(schema, cast))

    def create_stream(self, name: str, reader: pa.RecordBatchReader) -> None:
        """Create table `name` from a stream of batches (its schema, metadata included) in one commit. Its handle is
        not kept: whoever opens it next (a tier) opens it with its indexes."""
        with self._lock, storage_errors(f"create table {name!r}"):
            if name in self._table_names(name) and self._open_listed(name) is not None:
                raise StorageError(f"table {name!r} already exists in {self.uri}.")
            try:
                self.connection.create_table(name, reader, schema=reader.schema)
            except Exception:
                self._failed_creates.add(name)
                raise

    def add(self, name: str, rows: list[dict[str, Any]] | pa.Table) -> None:
        """Append rows to a table in one commit, with the appends other threads make to it meanwhile (see
        `GroupCommit`); returns once that commit has landed."""
        if isinstance(rows, list) and not rows:
            return
        table = self.table(name, rows.schema if isinstance(rows, pa.Table) else None)
        self.check_writable(name)
        schema = self._schemas.get(name)
        schema = schema if schema is not None else table.schema
        if not isinstance(rows, pa.Table):
            data = pa.Table.from_pylist(rows, schema=schema)
        elif rows.schema.equals(schema):
            data = rows
        else:
            try:
                data = rows.select(schema.names).cast(schema)  # grouped appends share the table's column order
            except (KeyError, pa.ArrowException):
                self._append(name, rows)  # rows of another shape: alone, so that LanceDB says what is wrong with them
                return
        with self._lock:
            group = self._groups.get(name)
            if group is None:
                group = self._groups[name] = GroupCommit(lambda rows: self._append(name, rows))
        group.add(data)

    def _append(self, name: str, data: pa.Table) -> None:
        """One commit of appends to table `name` (made by `GroupCommit`)."""
        with storage_errors(f"write to {name!r}"):
            self.table(name, data.schema).add(data)
