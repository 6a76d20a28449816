"""The stages that reorder recall's fused list (neighbours, the cross-encoder, a model's rerank), and the message rows
that they and the page read, each once per search."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from agentos.retrieval.cross_encoder import CROSS_POOL, CROSS_WEIGHT, cross_order, cross_scores
from agentos.retrieval.model_stages import RERANK_POOL, SearchModel
from agentos.retrieval.page import Hit
from agentos.retrieval.pipeline import Scored
from agentos.retrieval.search import rrf
from agentos.retrieval.turn_context import TurnOrder, around
from agentos.storage.filters import quote

log = logging.getLogger(__name__)

SHOWN = ["role", "content", "name", "created_at", "seq"]  # the columns a search reads of a message
COPIES = 4  # rows read per id wanted: a copied or imported agent keeps its messages' ids
Ask = Callable[[str, Callable[[SearchModel], Any]], tuple[Any, str | None]]  # (what, question) -> (answer, note)
Filters = tuple[datetime | None, datetime | None, Sequence[str] | None]  # start, end, roles


def shown_text(row: dict[str, Any]) -> str:
    """A message as search shows it: its speaker's name, when it has one, before its text."""
    return f"{row['name']}: {row['content']}" if row.get("name") else row["content"] or ""


class MessageRows:
    """The rows of one agent's messages met in a search: those its paths read, and the others (vector, neighbour
    hits) read by id through the async API when first asked for."""

    def __init__(self, reads: Any, messages: Any, agent_id: str, known: dict[str, dict[str, Any]]) -> None:
        self.reads, self.messages, self.agent_id = reads, messages, agent_id
        self.known = known

    def of(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The rows of these messages (those not found are left out)."""
        missing = [key for key in keys if key not in self.known]
        if missing:  # by id alone first: half the time of a read that also filters by agent, at 100k messages
            ids = ", ".join(quote(i) for i in missing)
            query = self.messages.query().where(f"id IN ({ids})").select(["id", "agent_id", *SHOWN])
            rows = self.reads.gather(query.limit(len(missing) * COPIES).to_arrow())[0].to_pylist()
            self.known.update((r["id"], r) for r in rows if r["agent_id"] == self.agent_id)
            rest = [key for key in missing if key not in self.known]
            if rest and len(rows) >= len(missing) * COPIES:  # copies of this agent (same ids) filled the read
                ids = ", ".join(quote(i) for i in rest)
                query = (self.messages.query().where(f"agent_id = {quote(self.agent_id)} AND id IN ({ids})")
                         .select(["id", *SHOWN]).limit(len(rest)))
                self.known.update((r["id"], r) for r in self.reads.gather(query.to_arrow())[0].to_pylist())
        return {key: self.known[key] for key in keys if key in self.known}

    def hits(self, chosen: Scored) -> list[Hit]:
        rows = self.of([key for key, _ in chosen])
        return [Hit(id=key, text=shown_text(rows[key]), created_at=rows[key]["created_at"], role=rows[key]["role"],
                    score=score) for key, score in chosen if key in rows]


def with_neighbours(ranked: Scored, order: TurnOrder, rows: MessageRows, filters: Filters) -> tuple[Scored, None]:
    """The neighbours stage: every hit's fused score spreads to the turns around it that pass the filters."""
    return around(ranked, order, lambda key: key in rows.known or order.allows(key, *filters)), None


def reranked(query: str, ranked: Scored, rows: MessageRows, ask: Ask) -> tuple[Scored, str | None]:
    """The fused list with its best RERANK_POOL reordered by the search model (unchanged when it fails, and the note
    says why)."""
    found = rows.of([key for key, _ in ranked[:RERANK_POOL]])
    pool = [key for key, _ in ranked[:RERANK_POOL] if key in found]
    if len(pool) < 2:
        return ranked, None
    order, note = ask("reranking", lambda m: m.rerank(
        query, pool, [(shown_text(found[key]), found[key]["created_at"]) for key in pool]))
    if order is None:
        return ranked, note
    score, placed = dict(ranked), set(order)
    return [(key, score[key]) for key in order] + [kv for kv in ranked if kv[0] not in placed], note


def cross_ranked(query: str, ranked: Scored, rows: MessageRows, turns: Callable[[], TurnOrder]) -> tuple[Scored, str | None]:
    """The fused list with its best CROSS_POOL reordered by their fused order and the cross-encoder's, fused by
    reciprocal rank, each read with the turn before it (unchanged, and the note says why, when the model cannot be
    loaded)."""
    keys = [key for key, _ in ranked[:CROSS_POOL]]
    order = turns()
    before = {key: order.id_at(at - 1) for key in keys if (at := order.position(key)) is not None and at > 0}
    found = rows.of([*keys, *(k for k in before.values() if k is not None)])
    pool = [key for key in keys if key in found]
    if len(pool) < 2:
        return ranked, None
    passages = ["\n".join(shown_text(found[k]) for k in (before.get(key), key) if k is not None and k in found)
                for key in pool]
    try:
        scores = cross_scores(query, passages)
    except Exception as exc:  # noqa: BLE001 - a failing stage is left out; search still answers
        log.warning("cross-encoder left out of a search: %s", exc)
        return ranked, f"The cross-encoder is unavailable ({exc}), so its reranking was left out."
    score, placed = dict(ranked), set(pool)
    blended = rrf([pool, cross_order(pool, scores)], [1.0, CROSS_WEIGHT])
    return [(key, score[key]) for key, _ in blended] + [kv for kv in ranked if kv[0] not in placed], None
