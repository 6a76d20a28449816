"""The entity graph: which messages name which entities, and a ranked list of messages for a query.

The tier owns two tables. `entity_links_<agent>` holds one row per (entity, message), written with
each step beside the messages (and discarded with them), so it is always exactly as current as the
messages: it is the graph. `entities_<agent>` is a summary of it, one row per entity (names,
aliases, counts, first and last seen), rewritten from the links when the agent is closed, after a
reindex, and when it is opened after a crash left it out of date; nothing reads it to rank. Ranking
reads the links into memory once (retrieval.entity_rank.Graph); a writer adds each step's to it.

The graph is on for an agent whose search paths include "graph", and for one that already has it.
It adds no tool and no line to the prompt: recall search fuses `ranked_messages` as one more list.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from agentos.embedders.base import Embedder
from agentos.errors import StorageError
from agentos.memory.tier import Progress, Rows, Tier, TierContext
from agentos.messages import Message
from agentos.retrieval.entities import extract
from agentos.retrieval.entity_rank import Graph
from agentos.storage.failures import storage_errors
from agentos.storage.filters import quote
from agentos.storage.records import search_text
from agentos.storage.rewrites import replace_table
from agentos.storage.schemas import ENTITIES_SCHEMA, ENTITY_LINKS_SCHEMA

log = logging.getLogger(__name__)

PATH = "graph"  # the search path (and the tier's name) that turns it on
_LINK_INDEXES = {"message_id": "btree"}  # for discard; ranking reads the whole table into memory once
_CHUNK = 500  # ids per IN (...) filter
MAX_ALIASES = 8
MAX_UNREAD = 10_000  # link rows kept for a graph not read yet (steps written since are read with it)


def links_table_name(agent_id: str) -> str:
    return f"entity_links_{agent_id}"


def entities_table_name(agent_id: str) -> str:
    return f"entities_{agent_id}"


def link_rows(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """One row per entity each searchable message names (tool traffic and empty messages name none)."""
    rows = []
    for m in messages:
        if search_text(m) is None:
            continue
        try:
            mentions = extract(m.content, m.name, m.role)
        except Exception as exc:  # noqa: BLE001 - a message the rules trip on is left unlinked, never a failed step
            log.warning("no entities taken from message %s: %s", m.id, exc)
            continue
        for mention in mentions:
            rows.append({"entity_key": mention.key, "message_id": m.id, "created_at": m.created_at, "role": m.role,
                         "name": mention.name[:200], "kind": mention.kind, "certain": mention.certain})
    return rows


class EntityGraphTier(Tier):
    """One agent's entity graph."""

    name = PATH
    label = "the entity graph"

    def __init__(self, ctx: TierContext) -> None:
        super().__init__(ctx)
        self.links_name = links_table_name(ctx.agent_id)
        self.entities_name = entities_table_name(ctx.agent_id)
        self._graph: Graph | None = None  # the links in memory, read on first use
        self._graph_version: int | None = None  # the links table's version it was read at (readers reload on change)
        self._unread: list[dict[str, Any]] = []  # rows of steps since, while the graph is not read yet
        self._exists: bool | None = None  # whether the links table exists (cached for a writer)
        self._dirty = False  # links changed since the entities summary was written
        self._lock = threading.RLock()
        self.last_error: str | None = None  # why the last ranked_messages found nothing (a storage error)

    @classmethod
    def table_names(cls, agent_id: str) -> list[str]:
        return [links_table_name(agent_id), entities_table_name(agent_id)]

    # -- on or off -------------------------------------------------------------------------------

    @property
    def enabled(self) -> bool:
        """Whether the agent's search settings fuse the graph."""
        settings = self.ctx.settings() if self.ctx.settings else None
        paths = getattr(getattr(settings, "search", None), "paths", None) or []
        return PATH in paths

    def _has_links(self) -> bool:
        if self._exists is None or not self.ctx.writable:  # only this writer creates the table while it holds the agent
            self._exists = self.ctx.db.exists(self.links_name)
        return bool(self._exists)

    @property
    def in_use(self) -> bool:
        """On in the settings, or built already (kept current then, so it is never stale)."""
        return self.enabled or self._has_links()

    # -- the tier interface ----------------------------------------------------------------------

    def after_step(self, messages: Sequence[Message]) -> dict[str, Rows]:
        """Link rows of the step's searchable messages (written with the step, like recall's vectors)."""
        if not self.in_use:
            return {}
        rows = link_rows(messages)
        if not rows:
            return {}
        self.ctx.db.table(self.links_name, ENTITY_LINKS_SCHEMA, _LINK_INDEXES)  # created, with its indexes, first
        self._exists = True
        with self._lock:
            if self._graph is not None:
                _fold(self._graph, rows)
            else:  # a step not yet written when the graph is first read: added then
                self._unread = (self._unread + rows)[-MAX_UNREAD:]
            self._dirty = True
        return {self.links_name: pa.Table.from_pylist(rows, schema=ENTITY_LINKS_SCHEMA)}

    def discard(self, message_ids: Sequence[str]) -> None:
        """Remove the links of messages taken back (a rewind, or a step that never landed)."""
        if not message_ids or not self._has_links():
            return
        table = self.ctx.db.existing(self.links_name)
        if table is None:
            return
        with storage_errors("repair the entity graph"):
            self.ctx.db.check_writable(self.links_name)
            table.checkout_latest()
            for start in range(0, len(message_ids), _CHUNK):
                table.delete(f"message_id IN ({_quoted(message_ids[start : start + _CHUNK])})")
        with self._lock:
            self._graph, self._unread, self._dirty = None, [], True

    def recover(self) -> None:
        """Rewrite the entities summary if a crash left it behind its links (a failure waits for the next close)."""
        try:
            if self.ctx.writable and self._has_links() and self._stale():
                self.write_entities()
        except StorageError as exc:
            self._dirty = True
            log.warning("entities summary not rewritten: %s", exc)

    def flush(self) -> None:
        """Rewrite the entities summary when the links changed (before the agent is closed); a failure is logged:
        the summary is rebuilt from the links the next time the agent is opened."""
        if self._dirty and self.ctx.writable and self._has_links():
            try:
                self.write_entities()
            except StorageError as exc:
                log.warning("entities summary not rewritten: %s", exc)

    def reindex(self, embedder: Embedder, progress: Progress) -> int:
        """Rebuild the graph from every message of the agent (an agent older than the graph gets one); how many
        messages were read. The embedder plays no part."""
        db = self.ctx.db
        where = f"agent_id = {quote(self.ctx.agent_id)} AND search_text IS NOT NULL"
        with storage_errors("read recall memory"):
            found = db.table("messages").search().where(where).select(
                ["id", "seq", "role", "name", "content", "created_at"]).limit(None).to_arrow().to_pylist()
        found.sort(key=lambda r: r["seq"])
        rows: list[dict[str, Any]] = []
        total = len(found)
        for start in range(0, total, _CHUNK):
            batch = [Message(id=r["id"], role=r["role"], content=r["content"] or "", name=r["name"],
                             created_at=r["created_at"]) for r in found[start : start + _CHUNK]]
            rows += link_rows(batch)
            progress("entity graph", min(start + _CHUNK, total), total)
        if not total:
            progress("entity graph", 0, 0)
        replace_table(db, self.links_name, ENTITY_LINKS_SCHEMA, pa.Table.from_pylist(rows, schema=ENTITY_LINKS_SCHEMA))
        db.table(self.links_name, ENTITY_LINKS_SCHEMA, _LINK_INDEXES)  # its indexes, on the new table
        self._exists = True
        with self._lock:
            self._graph, self._unread = None, []
        self.write_entities()
        return total

    # -- the entities summary --------------------------------------------------------------------

    def _links(self) -> Any:
        """The links table to read, or None while there is none (reading never creates it)."""
        table = self.ctx.db.existing(self.links_name)
        if table is not None and not self.ctx.writable:
            table.checkout_latest()  # a reader: the writer is another process
        return table

    def _stale(self) -> bool:
        """Whether the summary's mentions differ from the links (a crash between a step and the next close)."""
        links = self._links()
        if links is None:
            return False
        with storage_errors("read the entity graph"):
            linked = int(links.count_rows())
            summary = self.ctx.db.existing(self.entities_name)
            if summary is None:
                return True
            summary.checkout_latest()
            counted = pc.sum(summary.to_arrow().column("mentions")).as_py() or 0
        return int(counted) != linked

    def entity_rows(self) -> pa.Table:
        """The entities summary as it follows from the links now: one row per entity."""
        links = self._links()
        if links is None:
            return ENTITIES_SCHEMA.empty_table()
        with storage_errors("read the entity graph"):
            data = links.to_arrow().select(["entity_key", "name", "kind", "role", "created_at"])
        grouped = data.group_by("entity_key", use_threads=False).aggregate(
            [("name", "first"), ("kind", "first"), ("name", "distinct"), ("created_at", "count"),
             ("created_at", "min"), ("created_at", "max")])
        speakers = data.filter(pc.equal(data.column("kind"), "speaker")).group_by(["entity_key", "role"]).aggregate([])
        roles: dict[str, list[str]] = {}
        for key, role in zip(speakers.column("entity_key").to_pylist(), speakers.column("role").to_pylist()):
            roles.setdefault(key, []).append("user" if role == "user" else "agent")
        keys = grouped.column("entity_key").to_pylist()
        names = grouped.column("name_first").to_pylist()
        aliases = [sorted({*(n for n in seen if n != name), *roles.get(k, [])} - {k})[:MAX_ALIASES]
                   for k, name, seen in zip(keys, names, grouped.column("name_distinct").to_pylist())]
        return pa.Table.from_pydict({
            "key": keys, "name": names, "kind": grouped.column("kind_first").to_pylist(), "aliases": aliases,
            "mentions": grouped.column("created_at_count").to_pylist(),
            "first_seen": grouped.column("created_at_min").to_pylist(),
            "last_seen": grouped.column("created_at_max").to_pylist(),
        }, schema=ENTITIES_SCHEMA)

    def write_entities(self) -> int:
        """Rewrite the entities summary from the links (crash-safe: a swap); how many entities."""
        self.ctx.check_writable("write the entity graph")
        data = self.entity_rows()
        replace_table(self.ctx.db, self.entities_name, ENTITIES_SCHEMA, data)
        self.ctx.wrote(self.entities_name)
        self._dirty = False
        return data.num_rows

    def entities(self) -> list[dict[str, Any]]:
        """Every entity with its names, aliases and counts, most mentioned first (from the links, never stale)."""
        rows = self.entity_rows().to_pylist()
        return sorted(rows, key=lambda r: (-r["mentions"], r["key"]))

    # -- ranking ---------------------------------------------------------------------------------

    def graph(self) -> Graph:
        """The agent's graph in memory, read from the links once (a writer keeps it current with each step; a reader
        reads it again when the links changed)."""
        with self._lock:
            links = self._links()
            version = links.version if links is not None and not self.ctx.writable else None
            if self._graph is not None and (self.ctx.writable or version == self._graph_version):
                return self._graph
            graph = Graph()
            if links is not None:
                with storage_errors("read the entity graph"):
                    data = links.to_arrow().select(["entity_key", "message_id", "created_at", "role", "name", "kind",
                                                    "certain"])
                graph = Graph.from_links(data)
            stored = set(graph.ids)
            _fold(graph, [r for r in self._unread if r["message_id"] not in stored])
            self._graph, self._graph_version, self._unread = graph, version, []
            return graph

    def ranked_messages(self, query: str, limit: int = 50, *, speaker: str | None = None,
                        hops: int = 2) -> list[str]:
        """Ids of the messages that name the query's entities, best first: more of them, rarer, newer; then those
        one and two hops away through entities named with them. Never raises: a storage error gives [] and is
        kept in `last_error`."""
        try:
            if limit <= 0 or not (query or "").strip() or not self._has_links():
                found: list[str] = []
            else:
                with self._lock:  # a step's links may be added meanwhile
                    found = self.graph().ranked(query, limit, speaker=speaker, hops=hops)
        except Exception as exc:  # noqa: BLE001 - a failing graph leaves the search to its other paths
            self.last_error = str(exc) or type(exc).__name__
            log.warning("entity graph left out of search: %s", exc)
            return []
        self.last_error = None
        return found


def _quoted(values: Sequence[str]) -> str:
    return ", ".join(quote(v) for v in values)


def _fold(graph: Graph, rows: Sequence[dict[str, Any]]) -> None:
    """Add link rows to the graph, message by message (a message's rows are together, in the order written)."""
    by_message: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_message.setdefault(r["message_id"], []).append(r)
    for message_id, found in by_message.items():
        graph.add_message(message_id, found[0]["created_at"].timestamp(), found)
