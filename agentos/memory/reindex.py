"""Re-embed an agent's archival passages and recall messages with another embedder."""

from __future__ import annotations

from typing import Any, Callable

import pyarrow as pa

from agentos.memory.archival import archival_table_name
from agentos.memory.embedders import Embedder, resolve_embedder, vector_array
from agentos.memory.recall import vectors_table_name
from agentos.storage.db import Database, quote, replace_table, storage_errors
from agentos.storage.schemas import archival_schema, recall_vectors_schema

Progress = Callable[[str, int, int], None]
CHUNK = 256
_KEEP = ["id", "text", "tags", "created_at", "source", "content_hash"]


class _ReadOnly:
    """A stand-in model for loading an agent without calling one."""

    name = model = "none"
    context_window = 0

    def stream(self, request: Any) -> Any:  # pragma: no cover - never called
        raise RuntimeError("reindex does not call the model")


def reindex(name: str, spec: str, progress: Progress | None = None, home: Any = None) -> dict[str, int]:
    """Rebuild the agent's vectors with embedder `spec` and make it the agent's embedder."""
    from agentos.agent.agent import Agent

    embedder = resolve_embedder(spec)
    _ = embedder.dim  # an unreachable service fails here, before anything changes
    agent = Agent.load(name, provider=_ReadOnly(), home=home)  # type: ignore[arg-type]
    db = agent.store.db
    agent.store.wait_for_maintenance()
    report = progress or (lambda what, done, total: None)
    counts = {"archival": _archival(db, agent.id, embedder, report), "recall": _recall(db, agent.id, embedder, report)}
    agent.state.settings.embedder = spec
    agent.tiers = type(agent.tiers)(agent)
    agent.save()
    return counts


def _embed_column(embedder: Embedder, texts: list[str], what: str, report: Progress) -> list[pa.Array]:
    parts: list[pa.Array] = []
    report(what, 0, len(texts))
    for start in range(0, len(texts), CHUNK):
        parts.append(vector_array(embedder.embed(texts[start : start + CHUNK])))
        report(what, min(start + CHUNK, len(texts)), len(texts))
    return parts


def _archival(db: Database, agent_id: str, embedder: Embedder, report: Progress) -> int:
    name = archival_table_name(agent_id)
    if db.count_rows(name) is None:
        return 0
    with storage_errors("read archival memory"):
        old = db.connection.open_table(name).to_arrow().select(_KEEP)
    schema = archival_schema(embedder.name, embedder.dim)
    data = old.append_column("embedder", pa.array([embedder.name] * old.num_rows, pa.string()))
    if embedder.enabled:
        parts = _embed_column(embedder, old.column("text").to_pylist(), "archival passages", report)
        data = data.append_column("vector", pa.chunked_array(parts, type=schema.field("vector").type))
    else:
        report("archival passages", old.num_rows, old.num_rows)
    replace_table(db, name, schema, data.cast(schema))
    return old.num_rows


def _recall(db: Database, agent_id: str, embedder: Embedder, report: Progress) -> int:
    name = vectors_table_name(agent_id)
    if not embedder.enabled:
        db.drop(name)
        return 0
    where = f"agent_id = {quote(agent_id)} AND search_text IS NOT NULL"
    with storage_errors("read recall memory"):
        rows = db.table("messages").search().where(where).select(["id", "role", "created_at", "name", "content"])
        rows = rows.limit(None).to_arrow()
    schema = recall_vectors_schema(embedder.name, embedder.dim)
    texts = [f"{n}: {c}" if n else c for n, c in zip(rows.column("name").to_pylist(), rows.column("content").to_pylist())]
    parts = _embed_column(embedder, texts, "recall messages", report)
    data = rows.select(["id", "role", "created_at"]).append_column(
        "vector", pa.chunked_array(parts, type=schema.field("vector").type)
    )
    replace_table(db, name, schema, data.cast(schema))
    return rows.num_rows
