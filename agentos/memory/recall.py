"""Recall memory: every message, searched by BM25 (and by meaning when an embedder is set).

The messages themselves live in the shared `messages` table, written with each step; this tier
owns their vectors (`recall_vectors_<agent>`) and the `conversation_search` tool.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence
from datetime import datetime
from functools import partial
from typing import Any, TypeVar

import pyarrow as pa

from agentos.embedders.base import Embedder, embed_in_chunks, vector_array
from agentos.errors import EmbedderError, ToolError
from agentos.memory.audited import audited
from agentos.memory.exchanges import Exchanges, exchanges_table_name
from agentos.memory.recall_stages import SHOWN, Filters, MessageRows, cross_ranked, reranked, with_neighbours
from agentos.memory.recall_turns import RecallTurns
from agentos.memory.tables import open_embedded
from agentos.memory.tier import MemoryStats, Progress, Rows, Tier, TierContext
from agentos.messages import Message, utc_now
from agentos.retrieval.model_stages import SearchModel
from agentos.retrieval.page import Hit, Page, format_page, given
from agentos.retrieval.pipeline import RankedPath, Stage, page_of, rank_paths, reordered
from agentos.retrieval.query import variants
from agentos.retrieval.recall_paths import (
    DEFAULT_PATHS,
    DEFAULT_WEIGHTS,
    EXCHANGE_PATHS,
    PATHS,
    SPEAKER_AWARE,
    STAGES,
    RankerPath,
    TimePath,
    chosen_paths,
)
from agentos.retrieval.search import (
    MAX_CANDIDATES,
    PAGE_SIZE,
    VECTOR_CANDIDATES,
    QueryVector,
    check_page,
    clean_query,
    date_clauses,
    keyword_only_note,
)
from agentos.retrieval.table_paths import KeywordPath, OnceReads, Order, QueriesPath, VectorPath, in_read_order
from agentos.retrieval.turn_context import (
    Asked,
    TurnOrder,
    keyword_ranking,
    named_speakers,
    speakers_first,
    vector_ranking,
)
from agentos.retrieval.windows import answer_ranking, window_ranking
from agentos.storage.failures import storage_errors
from agentos.storage.filters import quote
from agentos.storage.records import embed_text
from agentos.storage.rewrites import delete_ids, replace_table
from agentos.storage.schemas import recall_vectors_schema
from agentos.text import plural
from agentos.times import as_utc, date_range
from agentos.tools.context import ToolContext
from agentos.tools.decorator import Tool, tool

log = logging.getLogger(__name__)

SEARCH_ROLES = ("user", "assistant")
_INDEXES = {"id": "btree"}
_DEFERRED_LIMIT = 1000  # messages kept for embedding later while the embedder is failing
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
        self.turns = RecallTurns(ctx.db, ctx.agent_id, ctx.writable)  # for the speakers, neighbours and cross paths
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
        """The vector table, or None in BM25-only mode (or for a reader, while there is none, or while the
        embedder's model cannot load: `unavailable` says why)."""
        if self._vectors is None and self.unavailable() is None and self.embedder.enabled:
            schema = recall_vectors_schema(self.embedder.name, self.embedder.dim)
            self._vectors = open_embedded(self.ctx.db, vectors_table_name(self.agent_id), schema, self.embedder,
                                          "recall memory", _INDEXES, create=self.ctx.writable)
        return self._vectors

    def unavailable(self) -> str | None:
        """Why search cannot use the embedder now (its model does not load), or None."""
        try:
            self.embedder  # noqa: B018 - built (its model loaded) on first use
        except EmbedderError as exc:
            self.last_error = str(exc)
            return keyword_only_note(exc)
        return None

    # -- the tier interface ----------------------------------------------------------------------

    def tools(self) -> list[Tool]:
        return [conversation_search]

    def metadata(self, stats: MemoryStats) -> list[str]:
        # Only what changes at an eviction, never every turn: a count per message would change the system
        # prompt on every call and defeat the servers' prefix caches.
        if not stats.hidden_count:
            return ["Recall memory: all of this conversation is still in your context."]
        one = stats.hidden_count == 1
        return [f"Recall memory: {plural(stats.hidden_count, 'older message')} {'is' if one else 'are'} out of your "
                f"context; find {'it' if one else 'them'} with conversation_search."]

    def after_step(self, messages: Sequence[Message]) -> dict[str, Rows]:
        """The exchanges and vectors of the step's searchable messages; an embedder failure defers the vectors,
        never fails the step."""
        self.turns.step(messages)
        try:
            exchanges = self.exchanges.step_rows(messages)
        except Exception as exc:  # noqa: BLE001 - the exchanges are made whole when the agent is next opened
            self.exchanges.lost()
            log.warning("recall exchanges of a step not made: %s", exc)
            exchanges = None
        out: dict[str, Rows] = {self.exchanges.name: exchanges} if exchanges is not None else {}
        todo = self._unembedded + list(messages)
        try:
            if not self.embedder.enabled:  # (an embedder whose model cannot load raises here: deferred below)
                return out
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
        self.turns.saved(message_ids)

    def recover(self) -> None:
        """As a writer opens the agent: the exchanges table holds every stored turn (built when not)."""
        if self.ctx.writable:
            self.exchanges.make_whole()

    def discard(self, message_ids: Sequence[str]) -> None:
        self.turns.forget()  # read again: the discarded turns' seqs may be used again
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

    @audited("read", "recall")
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
    ) -> Page[Hit]:
        """Ranked messages: the `paths` (default: the agent's search settings) fused by weighted reciprocal rank
        (see retrieval.recall_paths); an empty query with dates lists by time. `now` resolves "last week" (default:
        the current time)."""
        query = clean_query(query)
        start, end = (None if m is None else as_utc(m) for m in (start, end))
        where = self._where(start, end, roles, with_agent=True)
        if not query and start is None and end is None:
            raise ToolError("give a query, or start_date and/or end_date for a date search.")
        messages = self.ctx.db.table("messages")
        filters = (start, end, roles)
        with storage_errors("search recall memory"):
            if not self.ctx.writable:
                messages.checkout_latest()  # a reader: the writer is another process
            handle = self.ctx.db.reads.handle("messages")  # the async handle, for this search's reads
            if not query:
                listing = messages.search().where(where + " AND search_text IS NOT NULL").select(["id", "seq"])
                rows = sorted(listing.limit(None).to_arrow().to_pylist(), key=lambda r: r["seq"])
                ranked, capped = [(r["id"], 0.0) for r in rows], False
                notes: list[str] = []
                shown = MessageRows(self.ctx.db.reads, handle, self.agent_id, {})
            else:
                used = chosen_paths(paths, self._setting("paths", DEFAULT_PATHS))
                speakers = "speakers" in used  # on the keyword and vector lists (whichever are chosen) and the fused one
                turns = self.turns.order(handle) if speakers or used & {"neighbours", "window"} else None
                asked = Asked(query, *named_speakers(query, turns.speakers)) if turns is not None and speakers \
                    else Asked(query, set(), query)
                vector = QueryVector(self.embedder, asked.words) if "vector" in used and self.vectors is not None \
                    else None
                paths_used, notes = self._paths(handle, asked, where, self._where(start, end, roles, with_agent=False),
                                                used, now or utc_now(), filters, vector, turns)
                ranking = rank_paths(paths_used, self.ctx.db.reads.gather)
                failed = vector.note() if vector is not None else self.unavailable() if "vector" in used else None
                notes = ([failed] if failed else []) + notes
                shown = MessageRows(self.ctx.db.reads, handle, self.agent_id, ranking.rows)
                fused = set(ranking.lists) | (used & set(STAGES))  # the lists that found something, and the stages
                stages = self._stages(handle, asked, fused, turns, shown, filters)
                ranked, stage_notes = reordered(ranking.fused(), stages)
                notes, capped = notes + stage_notes, ranking.full("keyword")
            return page_of(ranked, page, page_size, shown.hits, capped=capped, note=" ".join(notes) or None,
                           query=query, filters=given(start=start, end=end, roles=roles))

    def _setting(self, name: str, default: Any) -> Any:
        search = getattr(self.ctx.settings(), "search", None) if self.ctx.settings else None
        return getattr(search, name, default) if search is not None else default

    def _paths(self, messages: Any, asked: Asked, where: str, vwhere: str, chosen: set[str], now: datetime,
               filters: Filters, vector: QueryVector | None, turns: TurnOrder | None) -> tuple[list[RankedPath], list[str]]:
        """The chosen paths, configured for this query, in fusion order (`vector`: the query's, being embedded;
        `turns`: the turn order, when a path or stage needs it); and notes on those left out that the model should
        know of (a model stage)."""
        query, named, words = asked
        weights = {**DEFAULT_WEIGHTS, **self._setting("weights", {})}
        weight = lambda name: float(weights.get(name, 1.0))
        notes: list[str] = []
        reads = self.ctx.db.reads
        vectors = reads.handle(vectors_table_name(self.agent_id)) if vector is not None else None
        rewrites, note = self._asked("rewriting the question", lambda m: m.rewrite(query)) if "rewrite" in chosen \
            else (None, None)
        notes += [note] if note else []
        exchanges = self._exchanges_handle() if chosen & set(EXCHANGE_PATHS) else None
        unfiltered = None if vwhere == "true" else vwhere
        found: dict[str, RankedPath] = {
            "keyword": KeywordPath("keyword", weight("keyword"), messages, words or query, "search_text", where,
                                   MAX_CANDIDATES, SHOWN, order=lambda pool: keyword_ranking(pool, named)),
            "time": TimePath(weight("time"), messages, query, where, now, SHOWN),
            "variants": QueriesPath("variants", weight("variants"), messages,
                                    variants(query) if "variants" in chosen else [], "search_text", where,
                                    MAX_CANDIDATES, SHOWN),
            "rewrite": QueriesPath("rewrite", weight("rewrite"), messages, rewrites or [], "search_text", where,
                                   MAX_CANDIDATES, SHOWN),
        }
        if exchanges is not None:  # their hits are read from the messages, like vector hits; a step retried after its
            # rows were built again may hold a turn twice
            orders: dict[str, Order] = {"exchange": lambda rows: list(dict.fromkeys(r["id"] for r in rows)),
                                        "answer": answer_ranking}
            if turns is not None:
                order = turns
                orders["window"] = lambda rows: window_ranking(rows, order, lambda key: order.allows(key, *filters))
            once = OnceReads()  # the three rank one read of the exchanges
            for name in chosen & orders.keys():
                found[name] = KeywordPath(name, weight(name), exchanges, words or query, "text", unfiltered,
                                          MAX_CANDIDATES, ("text",), order=orders[name], keep_rows=False, optional=True,
                                          once=once)
        if vectors is not None and vector is not None:
            nearest: Order = in_read_order if not named or turns is None else \
                partial(vector_ranking, named=named, order=turns)
            found["vector"] = VectorPath("vector", weight("vector"), vectors, vector, unfiltered, VECTOR_CANDIDATES,
                                         order=nearest, keep_rows=False, floor=self.embedder.relevance_floor)
        for tier in self.ctx.rankers() if self.ctx.rankers else []:
            found.setdefault(tier.name, RankerPath(tier.name, weight(tier.name), tier, query))
        return [found[name] for name in PATHS if name in found and name in chosen], notes

    def _stages(self, messages: Any, asked: Asked, chosen: set[str], turns: TurnOrder | None, rows: MessageRows,
                filters: tuple[datetime | None, datetime | None, Sequence[str] | None]) -> list[Stage]:
        """The chosen stages that reorder the fused list, in order: neighbours, the named speakers' turns first (when
        a list or stage in `chosen` does not weigh who spoke), cross-encoder, rerank."""
        query = asked.query
        stages: list[Stage] = []
        if "neighbours" in chosen and turns is not None:
            stages.append(lambda ranked: with_neighbours(ranked, turns, rows, filters))
        if asked.named and turns is not None and chosen - set(SPEAKER_AWARE):  # named only with speakers chosen
            stages.append(lambda ranked: (speakers_first(ranked, asked.named, turns), None))
        if "cross" in chosen:
            stages.append(lambda ranked: cross_ranked(query, ranked, rows, lambda: self.turns.order(messages)))
        if "rerank" in chosen:
            stages.append(lambda ranked: reranked(query, ranked, rows, self._asked))
        return stages

    def _exchanges_handle(self) -> Any | None:
        """The exchanges table's async handle, or None (the path left out) while there is none or it cannot be
        opened."""
        try:
            return self.ctx.db.reads.handle(self.exchanges.name) if self.exchanges.searchable() else None
        except Exception as exc:  # noqa: BLE001 - a failing path is left out; search still answers
            log.warning("exchange search left out: %s", exc)
            return None

    def _asked(self, what: str, ask: Callable[[SearchModel], T]) -> tuple[T | None, str | None]:
        """A model stage's answer; None, with a note saying that the stage was left out, when the agent has no
        model for search or the call fails."""
        try:
            provider = self.ctx.models("search") if self.ctx.models is not None else None
            if provider is None:
                return None, f"No model is set for search, so {what} was left out."
            if self._model is None or self._model.provider is not provider:  # the agent's model for search changed
                self._model = SearchModel(provider)
            return ask(self._model), None
        except Exception as exc:  # noqa: BLE001 - a failing stage is left out; search still answers
            log.warning("%s left out of a search: %s", what, exc)
            return None, f"The search model failed, so {what} was left out ({exc})."


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
