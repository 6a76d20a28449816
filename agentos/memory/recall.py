"""Recall memory: every message, searched by BM25 (and by meaning when an embedder is set).

The messages themselves live in the shared `messages` table, written with each step; this tier
owns their vectors (`recall_vectors_<agent>`) and the `conversation_search` tool.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence
from datetime import datetime
from typing import Any, TypeVar

import pyarrow as pa

from agentos.embedders.base import Embedder, embed_in_chunks, vector_array
from agentos.errors import ToolError
from agentos.memory.exchanges import Exchanges, exchanges_table_name
from agentos.memory.tables import open_embedded
from agentos.memory.tier import MemoryStats, Progress, Rows, Tier, TierContext
from agentos.messages import Message, utc_now
from agentos.retrieval.model_stages import RERANK_POOL, SearchModel
from agentos.retrieval.recall_paths import (
    DEFAULT_PATHS,
    DEFAULT_WEIGHTS,
    Lists,
    chosen_paths,
    dated_ids,
    time_ranked,
    time_read,
    variant_reads,
    vector_read,
)
from agentos.retrieval.search import (
    MAX_CANDIDATES,
    PAGE_SIZE,
    Hit,
    Page,
    as_utc,
    check_page,
    clean_query,
    date_clauses,
    date_range,
    format_page,
    fts_rows,
    query_vector,
    rrf,
)
from agentos.retrieval.turn_context import TurnOrder, around, keyword_ranking, named_speakers, turns_after
from agentos.storage.db import delete_ids, quote, replace_table, storage_errors
from agentos.storage.records import embed_text
from agentos.storage.schemas import recall_vectors_schema
from agentos.tools.context import ToolContext
from agentos.tools.decorator import Tool, tool

log = logging.getLogger(__name__)

SEARCH_ROLES = ("user", "assistant")
_SHOWN = ["role", "content", "name", "created_at", "seq"]
_INDEXES = {"id": "btree"}
_DEFERRED_LIMIT = 1000  # messages kept for embedding later while the embedder is failing
_COPIES = 4  # rows read per id wanted: a copied or imported agent keeps its messages' ids
T = TypeVar("T")


def vectors_table_name(agent_id: str) -> str:
    return f"recall_vectors_{agent_id}"


class RecallTier(Tier):
    """Searches one agent's messages; tool traffic and the agent's own search calls are left out."""

    name = "recall"

    def __init__(self, ctx: TierContext) -> None:
        super().__init__(ctx)
        self._vectors: Any = None
        self._unembedded: list[Message] = []  # messages a failing embedder could not embed yet
        self._turns: TurnOrder | None = None  # the searchable turns in order, for the speakers and neighbours paths
        self._turns_version: int | None = None  # (a reader) the messages table's version they were read at
        self._unsaved_turns: dict[str, tuple[str, str, datetime, str | None]] = {}  # in a step not committed yet
        self._model: SearchModel | None = None  # for the rewrite and rerank paths, made at their first use
        self.exchanges = Exchanges(ctx.db, ctx.agent_id, ctx.writable, ctx.check_writable, ctx.wrote)
        self.last_error: str | None = None

    @classmethod
    def table_names(cls, agent_id: str) -> list[str]:
        return [vectors_table_name(agent_id), exchanges_table_name(agent_id)]

    @property
    def agent_id(self) -> str:
        return self.ctx.agent_id

    @property
    def embedder(self) -> Embedder:
        return self.ctx.embedder()

    @property
    def vectors(self) -> Any:
        """The vector table, or None in BM25-only mode (or for a reader, while there is none)."""
        if self._vectors is None and self.embedder.enabled:
            schema = recall_vectors_schema(self.embedder.name, self.embedder.dim)
            self._vectors = open_embedded(self.ctx.db, vectors_table_name(self.agent_id), schema, self.embedder,
                                          "recall memory", _INDEXES, create=self.ctx.writable)
        return self._vectors

    # -- the tier interface ----------------------------------------------------------------------

    def tools(self) -> list[Tool]:
        return [conversation_search]

    def metadata(self, stats: MemoryStats) -> list[str]:
        # Only what changes at an eviction, never every turn: a count per message would change the system
        # prompt on every call and defeat the servers' prefix caches.
        if not stats.hidden_count:
            return ["Recall memory: all of this conversation is still in your context."]
        return [f"Recall memory: {stats.hidden_count:,} older messages are out of your context; find them with "
                f"conversation_search."]

    def after_step(self, messages: Sequence[Message]) -> dict[str, Rows]:
        """The exchanges and vectors of the step's searchable messages; an embedder failure defers the vectors,
        never fails the step."""
        self._unsaved_turns.update((m.id, (m.id, m.role, m.created_at, m.name)) for m in messages if embed_text(m))
        try:
            exchanges = self.exchanges.step_rows(messages)
        except Exception as exc:  # noqa: BLE001 - the exchanges are made whole when the agent is next opened
            self.exchanges.lost()
            log.warning("recall exchanges of a step not made: %s", exc)
            exchanges = None
        out: dict[str, Rows] = {self.exchanges.name: exchanges} if exchanges is not None else {}
        if not self.embedder.enabled:
            return out
        todo = self._unembedded + list(messages)
        try:
            rows = self.vector_rows(todo)
        except Exception as exc:  # noqa: BLE001 - recall vectors can be rebuilt with `agentos reindex`
            self._unembedded = todo[-_DEFERRED_LIMIT:]
            self.last_error = str(exc)
            log.warning("recall vectors deferred: %s", exc)
            return out
        self._unembedded = []
        return {**out, vectors_table_name(self.agent_id): rows} if rows is not None else out

    def saved(self, message_ids: Sequence[str]) -> None:
        """The step's turns join the turn order once committed (a failed commit is retried with the same ids)."""
        turns = [self._unsaved_turns.pop(key) for key in message_ids if key in self._unsaved_turns]
        if self._turns is not None:
            self._turns.extend(turns)

    def recover(self) -> None:
        """As a writer opens the agent: the exchanges table holds every stored turn (built when not)."""
        if self.ctx.writable:
            self.exchanges.make_whole()

    def discard(self, message_ids: Sequence[str]) -> None:
        self._turns, self._unsaved_turns = None, {}  # read again: the discarded turns' seqs may be used again
        self.exchanges.discard(message_ids)
        delete_ids(self.ctx.db, vectors_table_name(self.agent_id), message_ids, "repair recall vectors")

    def reindex(self, embedder: Embedder, progress: Progress) -> int:
        """Rebuild the exchanges, and the vector table from the messages with `embedder` (dropped when it is
        `none`); how many messages were embedded."""
        db, name = self.ctx.db, vectors_table_name(self.agent_id)
        self._vectors = None
        self.exchanges.rebuild(progress)
        if not embedder.enabled:
            db.drop(name)
            return 0
        where = f"agent_id = {quote(self.agent_id)} AND search_text IS NOT NULL"
        with storage_errors("read recall memory"):
            rows = db.table("messages").search().where(where).select(["id", "role", "created_at", "name", "content"])
            rows = rows.limit(None).to_arrow()
        schema = recall_vectors_schema(embedder.name, embedder.dim)
        names, contents = rows.column("name").to_pylist(), rows.column("content").to_pylist()
        texts = [f"{n}: {c}" if n else c for n, c in zip(names, contents)]
        parts = embed_in_chunks(embedder, texts, "recall messages", progress)
        data = rows.select(["id", "role", "created_at"]).append_column(
            "vector", pa.chunked_array(parts, type=schema.field("vector").type))
        replace_table(db, name, schema, data.cast(schema))
        return rows.num_rows

    # -- search ------------------------------------------------------------------------------

    def vector_rows(self, messages: Sequence[Message]) -> pa.Table | None:
        """Rows for the vector table: one per searchable message (embedded in one batch)."""
        todo = [(m, t) for m in messages if (t := embed_text(m))]
        if not self.embedder.enabled or not todo:
            return None
        columns = {
            "id": [m.id for m, _ in todo], "role": [m.role for m, _ in todo],
            "created_at": [m.created_at for m, _ in todo],
            "vector": vector_array(self.embedder.embed_documents([t for _, t in todo])),
        }
        return pa.Table.from_pydict(columns, schema=self.vectors.schema)

    def _where(self, start: Any, end: Any, roles: Sequence[str] | None, *, with_agent: bool) -> str:
        clauses = [f"agent_id = {quote(self.agent_id)}"] if with_agent else []
        if roles:
            bad = [r for r in roles if r not in SEARCH_ROLES]
            if bad:
                raise ToolError(f"roles must be among {', '.join(SEARCH_ROLES)}; got {str(bad[0])[:40]!r}.")
            clauses.append(f"role IN ({', '.join(quote(r) for r in dict.fromkeys(roles))})")
        clauses += date_clauses("created_at", start, end)
        return " AND ".join(clauses) or "true"

    def search(
        self,
        query: str,
        *,
        page: int = 0,
        page_size: int = PAGE_SIZE,
        start: Any = None,
        end: Any = None,
        roles: Sequence[str] | None = None,
        paths: Collection[str] | None = None,
        now: datetime | None = None,
    ) -> Page:
        """Ranked messages: the `paths` (default: the agent's search settings) fused by weighted reciprocal rank
        (see retrieval.recall_paths); an empty query with dates lists by time. `now` resolves "last week" (default:
        the current time)."""
        query = clean_query(query)
        start, end = (None if m is None else as_utc(m) for m in (start, end))
        where = self._where(start, end, roles, with_agent=True)
        if not query and start is None and end is None:
            raise ToolError("give a query, or start_date and/or end_date for a date search.")
        messages = self.ctx.db.table("messages")
        notes: list[str] = []
        with storage_errors("search recall memory"):
            if not self.ctx.writable:
                messages.checkout_latest()  # a reader: the writer is another process
            handle = self.ctx.db.reads.handle("messages")  # the async handle, for this search's reads
            if not query:
                listing = messages.search().where(where + " AND search_text IS NOT NULL").select(["id", "seq"])
                rows = sorted(listing.limit(None).to_arrow().to_pylist(), key=lambda r: r["seq"])
                ranked = [(r["id"], 0.0) for r in rows]
                known: dict[str, dict[str, Any]] = {}
                capped = False
            else:
                used = chosen_paths(paths, self._setting("paths", DEFAULT_PATHS))
                weights = {**DEFAULT_WEIGHTS, **self._setting("weights", {})}
                filters = (start, end, roles)
                lists = self._lists(handle, query, where, self._where(start, end, roles, with_agent=False),
                                    used, now or utc_now(), filters, notes)
                capped, known = lists.capped, lists.rows
                ranked = lists.fused(weights)
                order = lists.order
                if order is not None:  # the neighbours path: every hit's score spreads to its neighbours
                    ranked = around(ranked, order, lambda key: key in known or order.allows(key, *filters))
                if "cross" in used:
                    ranked = self._cross_ranked(handle, query, ranked, known, notes)
                if "rerank" in used:
                    ranked = self._reranked(handle, query, ranked, known, notes)
            chosen = ranked[page * page_size : (page + 1) * page_size]
            hits = self._hits(handle, chosen, known)
        return Page(hits=hits, total=len(ranked), page=page, page_size=page_size, capped=capped,
                    note=" ".join(notes) or None)

    def _setting(self, name: str, default: Any) -> Any:
        search = getattr(self.ctx.settings(), "search", None) if self.ctx.settings else None
        return getattr(search, name, default) if search is not None else default

    def _lists(self, messages: Any, query: str, where: str, vwhere: str, chosen: set[str], now: datetime,
               filters: tuple[datetime | None, datetime | None, Sequence[str] | None], notes: list[str]) -> Lists:
        """Every chosen path's ranked list; the reads run at once. A path that fails is left out, and `notes`
        says why when the model should know (meaning or a model stage left out)."""
        from agentos.retrieval.query import variants

        table = self.vectors if "vector" in chosen else None
        vector, note = query_vector(self.embedder, query) if table is not None else (None, None)
        notes.extend([note] if note else [])
        reads = self.ctx.db.reads
        vectors = reads.handle(vectors_table_name(self.agent_id)) if vector is not None else None
        rewrites = self._asked("rewriting the question", lambda m: m.rewrite(query), notes) if "rewrite" in chosen else None
        queries = {"variants": list(variants(query)) if "variants" in chosen else [], "rewrite": rewrites or []}
        exchanges = self._exchanges_handle() if "exchange" in chosen else None
        speakers = "keyword" in chosen and "speakers" in chosen
        turns = self._turns_for(messages) if speakers or "neighbours" in chosen else None
        named, words = named_speakers(query, turns.speakers) if turns is not None and speakers else (set(), query)
        found = reads.gather(
            fts_rows(messages, words or query, "search_text", where, MAX_CANDIDATES, _SHOWN)
            if "keyword" in chosen else None,
            vector_read(vectors, vector, None if vwhere == "true" else vwhere),
            time_read(messages, query, where, now, _SHOWN) if "time" in chosen else None,
            left_out_on_error("exchange", fts_rows(exchanges, words or query, "text",
                                                   None if vwhere == "true" else vwhere, MAX_CANDIDATES))
            if exchanges is not None else None,
            *variant_reads(messages, queries["variants"] + queries["rewrite"], where, _SHOWN),
        )
        lists = Lists(order=turns if "neighbours" in chosen else None)
        if found[0] is not None:
            pool = found[0]
            lists.add("keyword", pool)
            lists.capped = len(pool) >= MAX_CANDIDATES
            lists.ranked["keyword"] = keyword_ranking(pool, named)
        lists.add("vector", found[1], keep_rows=False)
        lists.add("time", time_ranked(found[2]) if found[2] is not None else None)
        if "time" in chosen and found[2] is None and found[0]:
            dated = dated_ids(query, found[0])
            if dated:
                lists.ranked["time"] = dated
        lists.add("exchange", found[3], keep_rows=False)  # its hits are read from the messages, like vector hits
        if "exchange" in lists.ranked:  # a step retried after its rows were built again may hold a turn twice
            lists.ranked["exchange"] = list(dict.fromkeys(lists.ranked["exchange"]))
        at = 4
        for path, texts in queries.items():
            results = found[at : at + len(texts)]
            at += len(texts)
            if results:
                for rows in results:
                    lists.add(path, rows)  # rows kept; the ids are fused below
                lists.ranked[path] = [key for key, _ in rrf([[r["id"] for r in rows] for rows in results])]
        for tier in self.ctx.rankers() if self.ctx.rankers else []:
            if tier.name in chosen:
                try:
                    ranked = tier.ranked_messages(query, MAX_CANDIDATES)
                except Exception as exc:  # noqa: BLE001 - a failing path is left out; search still answers
                    log.warning("%s search left out: %s", tier.name, exc)
                    ranked = None
                if ranked:
                    lists.ranked[tier.name] = list(ranked)
        return lists

    def _exchanges_handle(self) -> Any | None:
        """The exchanges table's async handle, or None (the path left out) while there is none or it cannot be
        opened."""
        try:
            return self.ctx.db.reads.handle(self.exchanges.name) if self.exchanges.searchable() else None
        except Exception as exc:  # noqa: BLE001 - a failing path is left out; search still answers
            log.warning("exchange search left out: %s", exc)
            return None

    def _asked(self, what: str, ask: Callable[[SearchModel], T], notes: list[str]) -> T | None:
        """A model stage's answer; None when the agent has no model for search or the call fails, and `notes`
        then says that the stage was left out."""
        try:
            provider = self.ctx.model() if self.ctx.model is not None else None
            if provider is None:
                notes.append(f"No model is set for search, so {what} was left out.")
                return None
            if self._model is None or self._model.provider is not provider:  # the agent's model for search changed
                self._model = SearchModel(provider)
            return ask(self._model)
        except Exception as exc:  # noqa: BLE001 - a failing stage is left out; search still answers
            log.warning("%s left out of a search: %s", what, exc)
            notes.append(f"The search model failed, so {what} was left out ({exc}).")
            return None

    def _reranked(self, messages: Any, query: str, ranked: list[tuple[str, float]], known: dict[str, dict[str, Any]],
                  notes: list[str]) -> list[tuple[str, float]]:
        """The fused list with its best RERANK_POOL reordered by the search model (unchanged when it fails);
        the pool's rows join `known`, so the page reads them once."""
        rows = self._rows(messages, [key for key, _ in ranked[:RERANK_POOL]], known)
        pool = [key for key, _ in ranked[:RERANK_POOL] if key in rows]
        if len(pool) < 2:
            return ranked
        order = self._asked("reranking", lambda m: m.rerank(
            query, pool, [(shown_text(rows[key]), rows[key]["created_at"]) for key in pool]), notes)
        if order is None:
            return ranked
        score, placed = dict(ranked), set(order)
        return [(key, score[key]) for key in order] + [kv for kv in ranked if kv[0] not in placed]

    def _cross_ranked(self, messages: Any, query: str, ranked: list[tuple[str, float]],
                      known: dict[str, dict[str, Any]], notes: list[str]) -> list[tuple[str, float]]:
        """The fused list with its best CROSS_POOL reordered by their fused order and the cross-encoder's, fused by
        reciprocal rank, each read with the turn before it (unchanged, and `notes` says why, when the model cannot be
        loaded)."""
        from agentos.retrieval.cross_encoder import CROSS_POOL, CROSS_WEIGHT, cross_order, cross_scores

        keys = [key for key, _ in ranked[:CROSS_POOL]]
        turns = self._turns_for(messages)
        before = {key: turns.id_at(at - 1) for key in keys if (at := turns.position(key)) is not None and at > 0}
        rows = self._rows(messages, [*keys, *(k for k in before.values() if k is not None)], known)
        pool = [key for key in keys if key in rows]
        if len(pool) < 2:
            return ranked
        passages = ["\n".join(shown_text(rows[k]) for k in (before.get(key), key) if k is not None and k in rows)
                    for key in pool]
        try:
            scores = cross_scores(query, passages)
        except Exception as exc:  # noqa: BLE001 - a failing stage is left out; search still answers
            log.warning("cross-encoder left out of a search: %s", exc)
            notes.append(f"The cross-encoder is unavailable ({exc}), so its reranking was left out.")
            return ranked
        score, placed = dict(ranked), set(pool)
        blended = rrf([pool, cross_order(pool, scores)], [1.0, CROSS_WEIGHT])
        return [(key, score[key]) for key, _ in blended] + [kv for kv in ranked if kv[0] not in placed]

    @property
    def _agent_clause(self) -> str:
        return f"agent_id = {quote(self.agent_id)}"

    def _turns_for(self, messages: Any) -> TurnOrder:
        """The turn order: read whole at the first search that needs it; then the writer extends it with each
        committed step (`saved`), and a reader catches up when the messages table has changed, reading it whole
        again when turns were taken back (a rewind in the writer: their seqs are used again)."""
        reads = self.ctx.db.reads
        turns = self._turns
        if turns is None:
            turns = TurnOrder(reads.gather(turns_after(messages, self._agent_clause, -1))[0])
            self._turns_version = None if self.ctx.writable else self.ctx.db.table("messages").version
        elif not self.ctx.writable:
            table = self.ctx.db.table("messages")
            version = table.version
            if version != self._turns_version:
                turns.catch_up(reads.gather(turns_after(messages, self._agent_clause, turns.last_seq))[0])
                if len(turns) != table.count_rows(f"{self._agent_clause} AND search_text IS NOT NULL"):
                    turns = TurnOrder(reads.gather(turns_after(messages, self._agent_clause, -1))[0])
                self._turns_version = version
        self._turns = turns
        return turns

    def _rows(self, messages: Any, keys: Sequence[str], known: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """The rows of these messages: those in `known`, and the others (vector or neighbour hits) in one read
        through the async API, which join `known`."""
        missing = [key for key in keys if key not in known]
        if missing:  # by id alone first: half the time of a read that also filters by agent, at 100k messages
            ids = ", ".join(quote(i) for i in missing)
            query = messages.query().where(f"id IN ({ids})").select(["id", "agent_id", *_SHOWN])
            rows = self.ctx.db.reads.gather(query.limit(len(missing) * _COPIES).to_arrow())[0].to_pylist()
            known.update((r["id"], r) for r in rows if r["agent_id"] == self.agent_id)
            rest = [key for key in missing if key not in known]
            if rest and len(rows) >= len(missing) * _COPIES:  # copies of this agent (same ids) filled the read
                ids = ", ".join(quote(i) for i in rest)
                query = (messages.query().where(f"{self._agent_clause} AND id IN ({ids})")
                         .select(["id", *_SHOWN]).limit(len(rest)))
                known.update((r["id"], r) for r in self.ctx.db.reads.gather(query.to_arrow())[0].to_pylist())
        return {key: known[key] for key in keys if key in known}

    def _hits(self, messages: Any, chosen: list[tuple[str, float]], known: dict[str, dict[str, Any]]) -> list[Hit]:
        rows = self._rows(messages, [key for key, _ in chosen], known)
        return [Hit(id=key, text=shown_text(rows[key]), created_at=rows[key]["created_at"], role=rows[key]["role"],
                    score=score) for key, score in chosen if key in rows]


async def left_out_on_error(path: str, read: Any) -> Any | None:
    """A path's read, or None when it fails (a table replaced meanwhile): the other paths still answer."""
    try:
        return await read
    except Exception as exc:  # noqa: BLE001 - a failing path is left out; search still answers
        log.warning("%s search left out: %s", path, exc)
        return None


def shown_text(row: dict[str, Any]) -> str:
    """A message as search shows it: its speaker's name, when it has one, before its text."""
    return f"{row['name']}: {row['content']}" if row.get("name") else row["content"] or ""


@tool
def conversation_search(
    query: str,
    ctx: ToolContext,
    page: int = 0,
    start_date: str | None = None,
    end_date: str | None = None,
    roles: list[str] | None = None,
) -> str:
    """Search your whole past conversation (recall memory), including messages no longer in view.

    Args:
        query: Words or a phrase to look for; leave empty to list messages between the dates.
        page: Which page of results to show, starting at 0.
        start_date: Only messages on or after this date (YYYY-MM-DD or YYYY-MM-DDTHH:MM, UTC).
        end_date: Only messages on or before this date (YYYY-MM-DD or YYYY-MM-DDTHH:MM, UTC).
        roles: Only messages from these roles: "user", "assistant".
    """
    start, end = date_range(start_date, end_date)
    result = ctx.memory.tier(RecallTier).search(query, page=check_page(page), start=start, end=end, roles=roles)
    return format_page(result, "messages", query)
