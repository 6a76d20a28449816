"""Search stages that ask a language model, for agents that configure one for search (`search.model`, or the
agent's own model): `rewrite` turns a question into a few keyword queries for the words an answer would use, and
`rerank` reorders the best candidates by how well they answer the question.

Each is one short call whose answer is read leniently (a query per line; the numbers of the passages). Answers
are kept for the questions asked lately, so turning a page asks nothing again and shows the same order. A call
that fails is the caller's to leave out (search still answers); an answer that cannot be read changes nothing.
"""

from __future__ import annotations

import re
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from datetime import UTC, datetime
from typing import TypeVar

from agentos.messages import Message
from agentos.providers.base import ModelRequest, Provider, complete

REWRITES = 3  # queries asked for per question
RERANK_POOL = 20  # the fused candidates the model reorders (the rest follow in fused order)
PASSAGE_CHARS = 400  # of each candidate shown to the reranker
MAX_QUERY_CHARS = 200  # a longer line is not a keyword query
MAX_OUTPUT_TOKENS = 200
REMEMBERED = 64  # answers kept per stage
FAILURE_SECONDS = 300.0  # a failed call is remembered this long: the next page of that search fails alike, and
# keeps the order its first page was cut from

REWRITE_PROMPT = (
    "You write search queries for a keyword search over the messages of a past conversation. Given a question, "
    f"write up to {REWRITES} queries, one per line, and nothing else. Each query is a few words that a message "
    "answering the question would contain: its names, places and things, and other words for the question's key "
    "words. Leave out question words such as what, when, did."
)
RERANK_PROMPT = (
    "You rank passages from a past conversation by how useful they are for answering a question. Reply with the "
    "numbers of the passages that help answer it, most useful first, separated by commas, and nothing else. Leave "
    "out passages that do not help. Reply 0 if none helps."
)

T = TypeVar("T")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)]|query\s*\d*:)\s*", re.IGNORECASE)
_NUMBER = re.compile(r"\d+")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def rewrite_lines(text: str, question: str) -> list[str]:
    """Queries from a rewrite answer: one per line, bullets, numbering and quotes taken off; blank lines, overlong
    ones, repeats and the question itself left out; at most REWRITES."""
    seen = {question.strip().lower()}
    queries: list[str] = []
    for line in text.splitlines():
        query = _BULLET.sub("", line).strip().strip("\"'`“”").strip()
        if query and len(query) <= MAX_QUERY_CHARS and query.lower() not in seen:
            seen.add(query.lower())
            queries.append(query)
    return queries[:REWRITES]


def picked_numbers(text: str, count: int) -> list[int]:
    """The passage numbers (1-based) a rerank answer names, in its order, each once; numbers out of range and
    dates are left out (0, "none helps", names none)."""
    picked: dict[int, None] = {}
    for match in _NUMBER.finditer(_DATE.sub(" ", text)):  # a passage's date echoed back names no passage
        number = int(match.group())
        if 1 <= number <= count:
            picked.setdefault(number, None)
    return list(picked)


def passage_lines(passages: Sequence[tuple[str, datetime]]) -> str:
    """The numbered passages a reranker reads, each with its date and at most PASSAGE_CHARS of its text."""
    lines = []
    for number, (text, when) in enumerate(passages, start=1):
        flat = " ".join(text.split())
        flat = flat if len(flat) <= PASSAGE_CHARS else flat[:PASSAGE_CHARS].rstrip() + " …"
        lines.append(f"[{number}] ({when.astimezone(UTC):%Y-%m-%d}) {flat}")
    return "\n".join(lines)


class SearchModel:
    """The model the search stages ask, with the answers it gave for the latest questions."""

    def __init__(self, provider: Provider) -> None:
        self.provider = provider
        self._answers: OrderedDict[Hashable, object] = OrderedDict()

    def rewrite(self, question: str) -> list[str]:
        """Up to REWRITES keyword queries for the words an answer to `question` would use."""
        return self._remembered(("rewrite", question), lambda: rewrite_lines(
            self._ask(REWRITE_PROMPT, f"Question: {question}"), question))

    def rerank(self, question: str, ids: Sequence[str], passages: Sequence[tuple[str, datetime]]) -> list[str]:
        """`ids` reordered: those of the passages the model names first, in its order, then the others in theirs."""
        def ask() -> list[str]:
            text = self._ask(RERANK_PROMPT, f"Question: {question}\n\nPassages:\n{passage_lines(passages)}")
            first = [ids[n - 1] for n in picked_numbers(text, len(ids))]
            chosen = set(first)
            return first + [key for key in ids if key not in chosen]

        return self._remembered(("rerank", question, tuple(ids)), ask)

    def _ask(self, instructions: str, text: str) -> str:
        request = ModelRequest(system_static=instructions, system_dynamic="",
                               messages=[Message(role="user", content=text)], max_output_tokens=MAX_OUTPUT_TOKENS)
        return complete(self.provider, request).text

    def _remembered(self, key: Hashable, answer: Callable[[], T]) -> T:
        """The answer given for `key` lately, or a new one; a failure is remembered (and raised again) for
        FAILURE_SECONDS, so that the pages of one search agree."""
        if key in self._answers:
            value = self._answers[key]
            if not isinstance(value, _Failed):
                self._answers.move_to_end(key)
                return value  # type: ignore[return-value]
            if time.monotonic() < value.until:
                raise value.error
        try:
            fresh = answer()
        except Exception as exc:
            self._keep(key, _Failed(exc, time.monotonic() + FAILURE_SECONDS))
            raise
        self._keep(key, fresh)
        return fresh

    def _keep(self, key: Hashable, value: object) -> None:
        self._answers[key] = value
        self._answers.move_to_end(key)
        if len(self._answers) > REMEMBERED:
            self._answers.popitem(last=False)


class _Failed:
    """A call that failed, and until when that is remembered."""

    def __init__(self, error: Exception, until: float) -> None:
        self.error, self.until = error, until
