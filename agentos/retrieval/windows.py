"""Two readings of the exchanges table (memory.exchanges: every turn joined with the one before it) that do not
lean on where a data set's labels sit:

- window: a turn is scored by the best window of two consecutive turns that holds it, whichever of the two it is.
  A story told across two turns, or a question and its reply, matches as a whole, and both of its turns are
  credited alike; no direction (the reply, the turn before) is preferred. Where the two windows holding a turn
  score the same, the turn whose other window scores more comes first.
- answer: an exchange is credited to its later turn only when the earlier one asks (holds a question mark): the
  reply completes a question. Other exchanges are left to the keyword path.

Both rank the rows BM25 read from the exchanges table (id: the later turn, text: the earlier turn's search text,
`TURN_BREAK`, then the later one's), best first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol


class Order(Protocol):
    """The turns in conversation order (retrieval.turn_context.TurnOrder)."""

    def position(self, key: str) -> int | None: ...

    def id_at(self, position: int) -> str | None: ...


def window_ranking(rows: Sequence[dict[str, Any]], order: Order, allowed: Callable[[str], bool]) -> list[str]:
    """Turn ids by the best two-turn window holding them: each row's score goes to its later turn and to the turn
    before it (when the order holds it and it passes `allowed`, the search's filters); a turn keeps its best score,
    ties go to the larger second-best, then to conversation order."""
    best: dict[str, list[float]] = {}
    place: dict[str, int] = {}
    seen: set[str] = set()
    for row in rows:  # best first; a step retried after its rows were built again may hold a turn twice
        key, score = row["id"], float(row["_score"])
        if key in seen:
            continue
        seen.add(key)
        at = order.position(key)
        credited = [(key, at)]
        if at is not None and at > 0 and (earlier := order.id_at(at - 1)) is not None and allowed(earlier):
            credited.append((earlier, at - 1))
        for turn, where in credited:
            best.setdefault(turn, []).append(score)
            if where is not None:
                place.setdefault(turn, where)
    ranked = {turn: sorted(scores, reverse=True)[:2] for turn, scores in best.items()}
    return sorted(ranked, key=lambda t: (-ranked[t][0], -(ranked[t][1] if len(ranked[t]) > 1 else 0.0),
                                         place.get(t, len(place) + len(ranked))))


QUESTION_MARKS = ("?", "\uff1f", "\u061f")  # ASCII, full-width (CJK), Arabic


def asks(text: str) -> bool:
    """Whether a turn's search text asks something (holds a question mark: ASCII, full-width or Arabic)."""
    return any(mark in text for mark in QUESTION_MARKS)


TURN_BREAK = "\x1e"  # joins an exchange's turns (ASCII record separator; taken out of the turns' own text)


def exchange_text(turns: Sequence[str]) -> str:
    """An exchange row's text: its turns' search texts, earliest first, joined by TURN_BREAK; a turn that follows none
    comes after one too, so that every row shows where its last turn begins, whatever lines the turns hold."""
    texts = [t.replace(TURN_BREAK, " ") for t in turns]
    return TURN_BREAK.join(texts if len(texts) > 1 else ["", *texts])


def earlier_text(exchange: str) -> str | None:
    """The earlier turn's text of an exchange row's text (earlier, TURN_BREAK, later); None for a turn that follows
    none. Rows written before TURN_BREAK joined their turns with a newline: the later turn is then taken as the last
    line (until `agentos reindex` writes them again)."""
    if TURN_BREAK in exchange:
        earlier = exchange.rpartition(TURN_BREAK)[0]
        return earlier or None
    earlier, newline, _ = exchange.rpartition("\n")
    return earlier if newline else None


def answer_ranking(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The later turns of the exchanges whose earlier turn asks, in BM25 order (each once)."""
    return list(dict.fromkeys(r["id"] for r in rows if (before := earlier_text(r.get("text") or "")) is not None
                              and asks(before)))
