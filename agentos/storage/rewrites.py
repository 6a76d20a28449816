"""Rewriting a table's rows: deleting rows by id, and replacing a whole table crash-safe through a full copy."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa

from agentos.storage.failures import storage_errors
from agentos.storage.filters import quote

SWAP_SUFFIX = "__swap"  # a full copy written before a table is replaced (see `replace_table`)


class Tables(Protocol):
    """What a rewrite needs of the database (`storage.db.Database`)."""

    @property
    def connection(self) -> Any: ...

    def existing(self, name: str) -> Any | None: ...

    def check_writable(self, name: str) -> None: ...

    def drop(self, name: str) -> None: ...


def delete_ids(db: Tables, name: str, ids: Sequence[str], what: str) -> None:
    """Delete the rows of table `name` whose id is in `ids`, if the table exists (`what`: for the error)."""
    table = db.existing(name) if ids else None
    if table is None:
        return
    with storage_errors(what):
        db.check_writable(name)
        table.checkout_latest()
        for start in range(0, len(ids), 500):
            table.delete(f"id IN ({', '.join(quote(i) for i in ids[start : start + 500])})")


def replace_table(db: Tables, name: str, schema: pa.Schema, data: pa.Table) -> None:
    """Replace a table's contents, crash-safe: a full copy is committed first and removed last, and
    opening the table restores from the copy if a crash cut the swap short."""
    backup = name + SWAP_SUFFIX
    db.drop(backup)
    with storage_errors(f"replace table {name!r}"):  # raw tables: no indexes on the copy, no restore mid-swap
        db.connection.create_table(backup, schema=schema).add(data)
        db.drop(name)
        db.connection.create_table(name, schema=schema).add(data)
    db.drop(backup)


def restore_interrupted_swap(conn: Any, name: str, names: list[str]) -> None:
    """Finish what a crash in `replace_table` left: restore the table from its copy, or drop a stale copy (one whose
    creation a crash cut short holds nothing yet, and the table was not touched: its folder goes)."""
    try:
        copy = conn.open_table(name + SWAP_SUFFIX)
    except Exception:  # noqa: BLE001 - never committed: the table itself is whole
        remove_unopenable(conn, name + SWAP_SUFFIX)
        return
    wanted = copy.count_rows()
    try:  # every file read: a drop a crash cut short leaves a table whose manifest counts rows it no longer has
        current = conn.open_table(name).to_arrow().num_rows if name in names else None
    except Exception:  # noqa: BLE001 - half dropped: as good as gone
        current = None
    if wanted and (current is None or current < wanted):  # the swap was cut after the old table was dropped
        if name in names:
            conn.drop_table(name)
        restored = conn.create_table(name, schema=copy.schema)
        restored.add(copy.to_arrow())
    conn.drop_table(name + SWAP_SUFFIX)


def remove_unopenable(conn: Any, name: str) -> None:
    """Remove a table that cannot be opened (its first commit never landed): through LanceDB, or its local folder."""
    try:
        conn.drop_table(name)
        return
    except Exception:  # noqa: BLE001 - LanceDB cannot drop what it cannot open
        pass
    uri = str(getattr(conn, "uri", ""))
    if uri and "://" not in uri.replace("file://", ""):
        shutil.rmtree(Path(uri.replace("file://", "")) / f"{name}.lance", ignore_errors=True)

