"""One page of search results, the type every tier's search returns, and the text the model reads of it."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

from agentos.retrieval.search import shorten
from agentos.text import plural

T = TypeVar("T")


@dataclass
class Hit:
    """One message or passage found."""

    id: str
    text: str
    created_at: datetime
    role: str | None = None
    tags: list[str] = field(default_factory=list)
    score: float = 0.0


@dataclass
class Page(Generic[T]):
    """One page of ranked results (messages and passages as `Hit`s, facts as facts) with the true total, the query
    it answers and the filters it was searched with (by name, those given)."""

    hits: list[T]
    total: int
    page: int
    page_size: int
    capped: bool = False  # the keyword pool was full: there may be more than `total`
    note: str | None = None  # e.g. why meaning-based ranking was left out
    query: str = ""
    filters: dict[str, Any] = field(default_factory=dict)

    @property
    def pages(self) -> int:
        return max(1, math.ceil(self.total / self.page_size)) if self.page_size else 1

    @property
    def has_more(self) -> bool:
        return (self.page + 1) * self.page_size < self.total

    @property
    def next_page(self) -> int | None:
        """The number of the page after this one, or None at the last."""
        return self.page + 1 if self.has_more else None


def given(**filters: Any) -> dict[str, Any]:
    """The filters a search was given, by name: those left out (None, empty) are not named."""
    return {name: value for name, value in filters.items() if value is not None and value != [] and value != ()}


def page_head(page: Page[Any], what: str, query: str) -> str:
    """The head of a page of results, with true totals. Pages are numbered as they are asked for, from 0:
    "(page 1 of pages 0-2)", or "(all on page 0)"."""
    note = f"\n{page.note}" if page.note else ""
    if page.total == 0:
        return f"No {what} found" + (f" for {query!r}." if query else ".") + note
    first = page.page * page.page_size
    more = "+" if page.capped else ""
    several = page.pages > 1 or page.capped
    span = f"pages 0-{page.pages - 1}{more}"
    if not page.hits:
        found = plural(page.total, what.removesuffix("s"), what) + more
        return f"Page {page.page} is past the end: {found}, {f'on {span}' if several else 'all on page 0'}." + note
    where = f"page {page.page} of {span}" if several else "all on page 0"
    return f"Showing {what} {first + 1}-{first + len(page.hits)} of {page.total}{more} ({where})." + note


def format_page(page: Page[Hit], what: str, query: str) -> str:
    """The text the model sees: the head (`page_head`), then one line per result."""
    head = page_head(page, what, query)
    if not page.hits:
        return head
    lines = [head]
    for hit in page.hits:
        when = hit.created_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
        label = hit.role or ("id " + hit.id)
        tags = f" [tags: {', '.join(hit.tags)}]" if hit.tags else ""
        lines.append(f"- [{when}] {label}{tags}: {shorten(hit.text)}")
    return "\n".join(lines)
