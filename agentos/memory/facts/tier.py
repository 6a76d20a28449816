"""Fact memory: short facts consolidated from the conversation, every version kept, each change logged.

The tier owns two tables: `facts_<agent>` (every version of every fact, with its validity interval,
its supersedes links and the messages it came from) and `fact_changes_<agent>` (the log of every
change, and how far consolidation got). A group of changes is written in one order: its log rows
first (the commit point), then the fact rows in one merge. A crash between the two is finished when
the agent is next opened for writing, from the log rows, which carry the facts they made.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from agentos.embedders.base import Embedder
from agentos.errors import ConfigError, StorageError
from agentos.events import Event
from agentos.memory.facts.consolidator import Consolidator
from agentos.memory.facts.extraction import FactModel
from agentos.memory.facts.reports import ConsolidationReport
from agentos.memory.facts.retention import by_retention
from agentos.memory.facts.rows import Fact, fact_changes_table_name, facts_table_name
from agentos.memory.facts.search import FactSearch
from agentos.memory.facts.settings import FactSettings
from agentos.memory.facts.tables import COLUMNS, CURRENT
from agentos.memory.facts.writes import FactWrites
from agentos.memory.tables import reembed_table
from agentos.memory.tier import MemoryStats, Progress, Tier, TierContext
from agentos.messages import utc_now
from agentos.retrieval.search import check_page, shorten
from agentos.storage.failures import storage_errors
from agentos.storage.schemas import facts_schema
from agentos.times import as_utc, parse_date
from agentos.tokens import EstimateCounter
from agentos.tools.context import ToolContext
from agentos.tools.decorator import Tool, tool

PROMPT_LINES_SECONDS = 600.0  # the facts offered in the prompt are chosen again after a write, or this often


class FactTier(FactWrites, FactSearch, Tier):
    """One agent's facts and their change log, and the consolidation that keeps them."""

    name = "facts"
    label = "fact memory"
    settings_model = FactSettings

    def __init__(self, ctx: TierContext) -> None:
        super().__init__(ctx)
        self._consolidator: Consolidator | None = None

    # -- consolidation -------------------------------------------------------------------------

    @property
    def consolidator(self) -> Consolidator:
        """What turns this agent's saved conversation into facts, in the background or (`consolidate`) now."""
        if self._consolidator is None:
            ctx = self.ctx
            self._consolidator = Consolidator(self, ctx.read_messages or (lambda first, end: []), self._fact_model,
                                              lambda: self.settings or FactSettings(), ctx.tell)
        return self._consolidator

    @property
    def consolidating(self) -> bool:
        """Whether consolidation has been set up for this session (it is only when fact memory is used)."""
        return self._consolidator is not None

    def _fact_model(self) -> FactModel:
        if self.ctx.models is None:
            raise ConfigError("this agent was opened without a model, so it cannot consolidate facts.")
        settings = self.settings or FactSettings()
        return FactModel(self.ctx.models("facts"), self.ctx.prompts, settings.max_repairs)

    def _runs_in_background(self) -> bool:
        settings = self.settings
        return settings is not None and settings.mode != "off" and self.ctx.writable

    def opened(self, committed: int) -> None:
        if self._runs_in_background():
            self.consolidator.opened(committed)

    def turn_ended(self, committed: int) -> list[Event]:
        if self._runs_in_background():
            self.consolidator.turn_ended(committed)
        return []

    def close(self) -> None:
        if self._consolidator is not None:
            self._consolidator.stop()

    def consolidate(self, progress: Callable[[int, int], None] | None = None,
                    retry_skipped: bool = False) -> ConsolidationReport:
        """Consolidate every saved message not yet consolidated, now (the background thread stops first), after
        reading again the batches skipped by another model than the one asked now (every skipped batch, with
        `retry_skipped`)."""
        self.ctx.check_writable("consolidate facts")
        self.close()
        return self.consolidator.run(self.ctx.committed() if self.ctx.committed else 0, progress,
                                     retry_skipped=retry_skipped)

    # -- the tier interface --------------------------------------------------------------------

    @classmethod
    def table_names(cls, agent_id: str) -> list[str]:
        return [facts_table_name(agent_id), fact_changes_table_name(agent_id)]

    @property
    def in_use(self) -> bool:
        """Whether this agent consolidates facts, or has any."""
        settings = self.settings
        if settings is not None and settings.mode != "off":
            return True
        if self._exists is None or not self.ctx.writable:  # only this writer creates the table while it holds the agent
            self._exists = self.ctx.db.exists(self.table_name)
        return self._exists

    def tools(self) -> list[Tool]:
        return [fact_search] if self.in_use else []

    def metadata(self, stats: MemoryStats) -> list[str]:
        if not self.in_use:
            return []
        lines = [f"Fact memory: {self.count_current():,} current facts, consolidated in the background from the "
                 f"conversation; find them with fact_search."]
        budget = getattr(self.settings, "prompt_tokens", 0) or 0
        if budget > 0:
            lines += self.prompt_lines(budget)
        return lines

    def prompt_lines(self, budget: int) -> list[str]:
        """The most retained current facts about the user, as many as fit in `budget` tokens; chosen again after a
        write, or every PROMPT_LINES_SECONDS (a writer keeps them: it is the only one who changes them)."""
        cached = self._prompt
        if (self.ctx.writable and cached is not None and cached[0] == budget
                and time.monotonic() - cached[1] < PROMPT_LINES_SECONDS):
            return cached[2]
        writes = self._writes
        lines = self._choose_prompt_lines(budget)
        if writes == self._writes:  # none landed while they were chosen
            self._prompt = (budget, time.monotonic(), lines)
        return lines

    def _choose_prompt_lines(self, budget: int) -> list[str]:
        table = self._reading()
        if table is None:
            return []
        with storage_errors("read fact memory"):
            rows = table.search().where(f"{CURRENT} AND subject = 'user'").select(COLUMNS).limit(None).to_arrow()
        facts = {f.id: f for f in (Fact.of_row(r) for r in rows.to_pylist())}
        head = "Facts about the user (from fact memory; newest first where they conflict):"
        counter = EstimateCounter()
        lines, used = [], counter.count(head)
        for fact_id in by_retention(list(facts.values()), utc_now()):
            line = f"- {facts[fact_id].text} (since {facts[fact_id].valid_from:%Y-%m-%d})"
            cost = counter.count(line)
            if used + cost > budget:
                break
            lines.append(line)
            used += cost
        return [head, *lines] if lines else []

    def reindex(self, embedder: Embedder, progress: Progress) -> int:
        """Re-embed every version of every fact with `embedder`, in a new table that replaces the old one."""
        self._table = None
        keep = [f.name for f in facts_schema("none", 0) if f.name != "embedder"]
        return reembed_table(self.ctx.db, self.table_name, facts_schema, keep, embedder, "facts", progress)

    def recover(self) -> None:
        self.repair()

def describe(fact: Fact, sources: dict[str, dict[str, Any]] | None = None) -> str:
    """One line about a fact for the model: its text, dates, status and where it came from."""
    since = f"since {fact.valid_from:%Y-%m-%d}"
    until = f", until {fact.valid_to:%Y-%m-%d} ({fact.status})" if fact.valid_to else ""
    origin = ""
    first = next((sources[i] for i in fact.source_ids if sources and i in sources), None)
    if first is not None:
        who = first.get("name") or first["role"]
        origin = f"; from {who} on {first['created_at']:%Y-%m-%d}: \"{shorten(first['content'] or '', 160)}\""
    elif fact.source_ids:
        origin = f"; from {len(fact.source_ids)} message(s)"
    return f"- [{fact.id}] {fact.text} ({fact.subject}, {fact.category}; {since}{until}{origin})"


def _as_of(value: str | None) -> datetime | None:
    moment = parse_date(value, "as_of", end=True)
    return as_utc(moment) if moment else None


@tool
def fact_search(query: str, ctx: ToolContext, as_of: str | None = None, page: int = 0) -> str:
    """Search the facts consolidated from your conversations: current facts, with their dates and sources.

    Args:
        query: What to look for, e.g. "where does the user work"; leave empty to list the newest facts.
        as_of: Show what was believed on this date instead (YYYY-MM-DD), including facts that changed since.
        page: Which page of results to show, starting at 0.
    """
    facts = ctx.memory.tier(FactTier)
    moment = _as_of(as_of)
    result = facts.search(query, as_of=moment, page=check_page(page))
    what = f"facts believed on {moment:%Y-%m-%d}" if moment else "current facts"
    note = f"\n{result.note}" if result.note else ""
    if not result.total:
        return f"No {what} found" + (f" for {query!r}." if query else ".") + note
    if not result.hits:
        return f"Page {page} is past the end: {result.total} {what}." + note
    first = page * result.page_size
    head = f"Showing {what} {first + 1}-{first + len(result.hits)} of {result.total}." + note
    try:
        sources = facts.sources(result.hits)
    except StorageError:
        sources = {}
    return "\n".join([head, *(describe(f, sources) for f in result.hits)])
