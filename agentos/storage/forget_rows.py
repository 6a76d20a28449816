"""The rows of one agent that a forget request reaches, table by table, and their removal leaving no older copy.

Which rows go is decided generically, by schema, so a new tier's tables need nothing of their own: a row goes when
one of its content columns holds what is forgotten (any string or list of strings, less ids, kinds and hashes), when
its time falls in a forgotten period, or when it refers to a row that went (a message's vector, a fact made from a
forgotten message, the change that made a forgotten fact). Removing them: rows of a table shared by agents are
deleted by key; an agent's own table is written anew without them (one overwrite commit). Then the
table's older versions go (a cleanup that keeps none), deleted rows are compacted out of their data files, and each
full-text index is built again, so that no file under the data home still holds what was forgotten.
"""

from __future__ import annotations

import shutil
import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa

from agentos.errors import StorageError
from agentos.storage.db import Database
from agentos.storage.failures import retry_conflicts, storage_errors
from agentos.storage.filters import quote
from agentos.storage.rewrites import remove_unopenable

SHARED_TABLES = ("messages", "memory_edits", "audit_log")  # rows of every agent, told apart by `agent_id`
# Columns that never hold what was said: ids, kinds, hashes, names of things agentos made.
NOT_CONTENT = frozenset({
    "id", "agent_id", "role", "tool_call_id", "embedder", "content_hash", "status", "category", "kind", "by",
    "label_kind", "change_id", "ended_by", "last_change", "supersedes", "superseded_by", "group_id", "target_change",
    "entity_key", "step_id", "fact_id", "old_fact_id", "source_ids", "message_ids", "message_id", "label",
    "actor_kind", "actor", "action", "what", "target",  # the audit log's: who and what part, never what it says
})
# Columns whose values name rows elsewhere: a row naming a row that went goes too.
REFERENCES = ("id", "message_id", "source_ids", "message_ids", "fact_id", "old_fact_id")
TIME_COLUMNS = ("created_at", "recorded_at", "at")  # a row's moment, the first of these it has
DELETE_BATCH = 300
SHARED_SWEEP_MARGIN_S = 10.0  # a shared table's unused file made this long before the forget began is no commit in progress
PENDING = pa.schema([pa.field("request", pa.string(), nullable=False)])  # a forget request under way, as JSON


@dataclass
class TableCut:
    """One table's rows of the agent, and which of them go (positions in `rows`)."""

    name: str
    rows: pa.Table
    doomed: list[int] = field(default_factory=list)

    @property
    def shared(self) -> bool:
        return self.name in SHARED_TABLES

    def doomed_rows(self) -> list[dict[str, Any]]:
        return self.rows.take(self.doomed).to_pylist() if self.doomed else []

    def kept(self) -> pa.Table:
        gone = set(self.doomed)
        return self.rows.filter(pa.array([i not in gone for i in range(self.rows.num_rows)], pa.bool_()))


def content_columns(schema: pa.Schema) -> list[str]:
    """The columns of a schema that may hold what was said: strings, and lists of strings."""
    def text(kind: pa.DataType) -> bool:
        return pa.types.is_string(kind) or pa.types.is_large_string(kind)
    return [f.name for f in schema if f.name not in NOT_CONTENT and (
        text(f.type) or (pa.types.is_list(f.type) and text(f.type.value_type)))]


def time_column(schema: pa.Schema) -> str | None:
    return next((c for c in TIME_COLUMNS if c in schema.names), None)


def read_agent_rows(db: Database, name: str, agent_id: str) -> pa.Table | None:
    """Every row of the agent in table `name` (all rows of an agent's own table); None when it does not exist."""
    table = db.existing(name)
    if table is None:
        return None
    with storage_errors(f"read {name!r} to forget"):
        table.checkout_latest()
        query = table.search()
        if name in SHARED_TABLES:
            query = query.where(f"agent_id = {quote(agent_id)}")
        return query.limit(None).to_arrow()


def _named(row: dict[str, Any], gone_ids: set[str]) -> bool:
    for column in REFERENCES:
        value = row.get(column)
        if isinstance(value, str) and value in gone_ids:
            return True
        if isinstance(value, list) and any(v in gone_ids for v in value if isinstance(v, str)):
            return True
    return False


def select(cut: TableCut, matches: Callable[[Any], bool], within: Callable[[datetime | None], bool],
           gone_ids: set[str], everything: bool = False) -> set[str]:
    """Mark the rows of `cut` that go (content that matches, a moment within, a reference to a row that went, or
    all of them); return the ids of the rows newly marked, for the tables that refer to them."""
    columns = content_columns(cut.rows.schema)
    moment = time_column(cut.rows.schema)
    marked = set(cut.doomed)
    new_ids: set[str] = set()
    for position, row in enumerate(cut.rows.to_pylist()):
        if position in marked:
            continue
        if everything or _named(row, gone_ids) or any(matches(row.get(c)) for c in columns) or (
                moment is not None and within(row.get(moment))):
            cut.doomed.append(position)
            if isinstance(row.get("id"), str):
                new_ids.add(row["id"])
    return new_ids


def _literal(value: Any) -> str:
    if isinstance(value, datetime):
        return f"timestamp '{value.strftime('%Y-%m-%dT%H:%M:%S.%f')}'"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return quote(str(value))


def _row_filter(row: dict[str, Any], schema: pa.Schema) -> str:
    """A filter naming one row of a shared table: its id, or else its label and moment (the edit log)."""
    if "id" in schema.names:
        return f"id = {quote(row['id'])}"
    keys = [c for c in ("label", time_column(schema)) if c and c in schema.names and row.get(c) is not None]
    if not keys:
        raise ValueError(f"no key to delete a row of a shared table by (columns: {schema.names})")
    return "(" + " AND ".join(f"{c} = {_literal(row[c])}" for c in keys) + ")"


def remove(db: Database, cut: TableCut, agent_id: str) -> None:
    """Take the doomed rows out: deleted by key from a shared table, or the agent's table written anew."""
    if not cut.doomed:
        return
    if cut.shared:
        table = db.existing(cut.name)
        if table is None:
            return
        filters = [_row_filter(row, cut.rows.schema) for row in cut.doomed_rows()]
        with storage_errors(f"forget rows of {cut.name!r}"):
            db.check_writable(cut.name)
            for start in range(0, len(filters), DELETE_BATCH):
                where = f"agent_id = {quote(agent_id)} AND ({' OR '.join(filters[start:start + DELETE_BATCH])})"
                retry_conflicts(f"forget rows of {cut.name!r}", partial(table.delete, where), table.checkout_latest)
        return
    rewrite(db, cut.name, cut.kept())


def rewrite(db: Database, name: str, rows: pa.Table) -> None:
    """Write an agent's own table anew with `rows`, in one commit (a crash leaves it as it was, or as it is to be;
    the older version goes with `leave_no_copy`). Its indexes are made again when its tier next opens it."""
    with storage_errors(f"write {name!r} anew"):
        db.check_writable(name)
        db.connection.create_table(name, data=rows, schema=rows.schema, mode="overwrite")
    db.forget(name)


def leave_no_copy(db: Database, own: Iterable[str], shared: Iterable[str] = (), began: float | None = None) -> list[str]:
    """For each table: compact deleted rows out of their files, build its full-text indexes again and remove every
    older version (none is kept), so no file holds a forgotten row; the names of the tables done. An agent's own
    table also loses files no version refers to (a write a crash cut short, the leftovers of a drop it cut short):
    only this agent's writer writes there. A shared table keeps them, since another process's commit may be
    writing its files right now."""
    from lancedb.index import FTS

    done = []
    mine = set(own)
    for name in dict.fromkeys([*own, *shared]):
        table = db.existing(name)
        if table is None:
            continue
        with storage_errors(f"remove older copies of {name!r}"):
            table.checkout_latest()
            if table.count_rows():
                retry_conflicts(f"compact {name!r}", partial(table.compact_files, materialize_deletions=True,
                                                             materialize_deletions_threshold=0.0), table.checkout_latest)
            for index in table.list_indices():
                if str(getattr(index, "index_type", "")).upper() in ("FTS", "INVERTED"):
                    for column in index.columns:
                        table.create_index(column, config=FTS(), replace=True)
            with warnings.catch_warnings():  # LanceDB warns that readers of older versions fail: that is the point
                warnings.simplefilter("ignore", UserWarning)
                retry_conflicts(f"clean up {name!r}", partial(table.optimize, cleanup_older_than=timedelta(0),
                                                              delete_unverified=name in mine),
                                table.checkout_latest)
            if "://" not in db.uri:
                table.checkout_latest()
                made_before = None if name in mine else (time.time() if began is None else began) - SHARED_SWEEP_MARGIN_S
                sweep_unreferenced(Path(db.uri) / f"{name}.lance", table, made_before)
        done.append(name)
    return done


def sweep_unreferenced(folder: Path, table: Any, made_before: float | None) -> int:
    """Remove the data files and index folders of a local table that its newest version does not use (and, with
    `made_before`, were made before that moment: an older file is no other process's commit in progress): those a
    cleanup cut short by a crash left behind once their versions' manifests were gone (LanceDB's cleanup then finds
    no version to clean up, and leaves them). How many went."""
    used = {f.path.rsplit("/", 1)[-1] for fragment in table.to_lance().get_fragments() for f in fragment.data_files()}
    indexes = {str(i.index_uuid) for i in table.list_indices()}
    removed = 0
    for path in [*(folder / "data").glob("*.lance"), *((folder / "_indices").glob("*"))]:
        if path.name in (indexes if path.parent.name == "_indices" else used):
            continue
        try:
            if made_before is not None and path.stat().st_mtime >= made_before:
                continue  # perhaps another process's commit, writing it right now
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink()
            removed += 1
        except OSError:
            continue
    return removed


def pending_table_name(agent_id: str) -> str:
    """The table that holds a forget request of the agent while it is carried out (dropped, whole, at its end)."""
    return f"forget_pending_{agent_id}"


def mark_pending(db: Database, agent_id: str, request_json: str) -> None:
    """Keep the request until it is carried out to its end, so that a crash part-way is finished by the next open.
    Its own table, so that dropping it at the end leaves no older version holding what it names."""
    clear_pending(db, agent_id)
    db.create(pending_table_name(agent_id), PENDING, [{"request": request_json}])


def pending(db: Database, agent_id: str) -> str | None:
    """The forget request a crash cut short, as saved by `mark_pending`; None when there is none."""
    try:
        table = db.existing(pending_table_name(agent_id))
    except StorageError:  # its creation was cut short: nothing was saved, and nothing forgotten yet (it comes first)
        clear_pending(db, agent_id)
        return None
    if table is None:
        return None
    with storage_errors("read the forget request under way"):
        rows = table.to_arrow().to_pylist()
    return rows[0]["request"] if rows else None


def clear_pending(db: Database, agent_id: str) -> None:
    """Drop the request's table (also one whose creation a crash cut short, which LanceDB cannot open)."""
    try:
        db.drop(pending_table_name(agent_id))
    except StorageError:
        db.forget(pending_table_name(agent_id))
        remove_unopenable(db.connection, pending_table_name(agent_id))

