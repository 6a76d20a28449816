"""Opening per-agent embedded tables and refusing a mismatched embedder."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from agentos.errors import EmbedderMismatchError
from agentos.memory.embedders import Embedder
from agentos.storage.db import Database
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
