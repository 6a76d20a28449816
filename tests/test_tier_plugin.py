"""A third memory tier plugs in through the tier interface alone: its tool, its metadata line, its rows
written with each step, its reindex and its delete, with no change to the agent, delete, reindex,
maintenance or the prompt templates."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
import pytest

from agentos import Agent, tool
from agentos.embedders.base import Embedder
from agentos.memory import tiers as tier_registry
from agentos.memory.tier import MemoryStats, Progress, Tier
from agentos.messages import Message
from agentos.providers import ScriptedProvider, Step
from agentos.tools import ToolContext

WORDS = pa.schema([pa.field("id", pa.string()), pa.field("words", pa.int64())])


class WordCountTier(Tier):
    """Counts the words of every saved message in its own table."""

    name = "words"
    reindexed: list[str] = []

    @classmethod
    def table_names(cls, agent_id: str) -> list[str]:
        return [f"words_{agent_id}"]

    def tools(self) -> list[Any]:
        return [count_words]

    def metadata(self, stats: MemoryStats) -> list[str]:
        return [f"Words remembered: {self.total()}"]

    def after_step(self, messages: Sequence[Message]) -> dict[str, Any]:
        self.ctx.db.table(f"words_{self.ctx.agent_id}", WORDS, {})  # opened (created) before the step's write
        rows = [{"id": m.id, "words": len(m.content.split())} for m in messages if m.content]
        return {f"words_{self.ctx.agent_id}": pa.Table.from_pylist(rows, schema=WORDS)} if rows else {}

    def reindex(self, embedder: Embedder, progress: Progress) -> int:
        self.reindexed.append(embedder.name)
        return self.total()

    def total(self) -> int:
        name = f"words_{self.ctx.agent_id}"
        if self.ctx.db.count_rows(name) is None:
            return 0
        return int(sum(self.ctx.db.table(name, WORDS, {}).to_arrow().column("words").to_pylist()))


@tool
def count_words(ctx: ToolContext) -> str:
    """Say how many words were said so far."""
    return f"{ctx.memory.tier(WordCountTier).total()} words"


@pytest.fixture
def word_tier(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(tier_registry, "TIER_KINDS", list(tier_registry.TIER_KINDS))
    tier_registry.register_tier(WordCountTier)
    yield


def test_a_new_tier_is_used_reindexed_and_deleted_through_the_interface(word_tier: None) -> None:
    provider = ScriptedProvider(["Noted.", Step(tool_calls=[("count_words", {})]), "Counted."])
    agent = Agent.create("sam", provider=provider)
    assert "count_words" in [t.name for t in agent.tools]
    list(agent.turn("one two three"))  # its rows land with the step: 3 + 1 words
    events = list(agent.turn("how many?"))
    assert [e.result for e in events if e.type == "tool_call_finished"] == ["4 words"]  # type: ignore[attr-defined]
    assert "Words remembered: 8\n" in provider.requests[-1].system_dynamic  # the tool step saved: + 2 + 2
    assert agent.reindex("hash:16") == {"recall": 4, "archival": 0, "words": 9}
    assert WordCountTier.reindexed == ["hash-16"]
    table = f"words_{agent.id}"
    agent.close()
    Agent.delete("sam")
    assert agent.store.db.count_rows(table) is None
