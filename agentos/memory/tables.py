"""Opening per-agent embedded tables and refusing a mismatched embedder."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

from agentos.embedders.base import Embedder, embed_in_chunks
from agentos.errors import EmbedderMismatchError
from agentos.storage.db import Database
from agentos.storage.failures import storage_errors
from agentos.storage.rewrites import replace_table
from agentos.storage.schemas import table_embedder


def open_embedded(db: Database, name: str, schema: pa.Schema, embedder: Embedder, what: str,
                  indexes: dict[str, str], *, create: bool = True) -> Any:
    """Open (or, with `create`, create) `name` with its `indexes`; None when it does not exist and is not to be
    created. Raise if it was built with another embedder or dimension."""
    table = db.table(name, schema, indexes) if create else db.existing(name)
    if table is None:
        return None
    found, dim = table_embedder(table.schema)
    if (found, dim) != (embedder.name, embedder.dim):
        raise EmbedderMismatchError(
            f"the {what} was built with embedder {found!r} (dimension {dim}), but embedder "
            f"{embedder.name!r} (dimension {embedder.dim}) was asked for. Use the same embedder, or "
            f"re-embed everything with: agentos reindex AGENT --embedder SPEC"
        )
    return table


def reembed_table(db: Database, name: str, schema: Callable[[str, int], pa.Schema], keep: Sequence[str],
                  embedder: Embedder, what: str, progress: Callable[[str, int, int], None]) -> int:
    """Rebuild table `name` with `embedder`: its `keep` columns, each row's `text` embedded again, in a new table that
    replaces the old one crash-safely (`schema(embedder name, dim)` is the new table's schema); how many rows."""
    if db.count_rows(name) is None:
        return 0
    with storage_errors(f"read {what}"):
        old = db.connection.open_table(name).to_arrow().select(list(keep))
    target = schema(embedder.name, embedder.dim)
    data = old.append_column("embedder", pa.array([embedder.name] * old.num_rows, pa.string()))
    if embedder.enabled:
        parts = embed_in_chunks(embedder, old.column("text").to_pylist(), what, progress)
        data = data.append_column("vector", pa.chunked_array(parts, type=target.field("vector").type))
    else:
        progress(what, old.num_rows, old.num_rows)
    replace_table(db, name, target, data.select(target.names).cast(target))
    return old.num_rows
