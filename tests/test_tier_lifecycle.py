"""A tier with background work and settings of its own plugs in by one registration: it is opened, hears each
turn's end, hands its news to the agent's one event stream, is stopped on close, and keeps its settings with the
agent's, without any change to Agent, the CLI, the REPL or the TUI."""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator

import pytest
from pydantic import BaseModel, Field

from agentos import Agent
from agentos.chat import Repl
from agentos.errors import ConfigError, ReadOnlyAgentError
from agentos.events import Event, Notice
from agentos.memory import tiers as tier_registry
from agentos.memory.tier import MemoryStats, Tier, TierContext
from agentos.providers import ScriptedProvider


class DigestSettings(BaseModel):
    """How often the digest runs, and what it calls what it finds."""

    every_turns: int = Field(1, ge=1)
    label: str = "digest"


class DigestTier(Tier):
    """After every `every_turns` turns, reads the saved messages on a thread of its own and tells how many words
    they hold; at each turn's end it says how many turns it has seen."""

    name = "digest"
    settings_model = DigestSettings

    def __init__(self, ctx: TierContext) -> None:
        super().__init__(ctx)
        self.turns = 0
        self.opened_with: int | None = None
        self.threads: list[threading.Thread] = []
        self.closed = 0
        self._stop = threading.Event()

    @classmethod
    def table_names(cls, agent_id: str) -> list[str]:
        return []

    def metadata(self, stats: MemoryStats) -> list[str]:
        return [f"Digest runs every {self.settings.every_turns} turn(s)."]

    def opened(self, committed: int) -> None:
        self.opened_with = committed

    def turn_ended(self, committed: int) -> list[Event]:
        self.turns += 1
        if self.turns % self.settings.every_turns == 0:
            thread = threading.Thread(target=self._digest, args=(committed,), daemon=True)
            self.threads.append(thread)
            thread.start()
        return [Notice(text=f"digest saw turn {self.turns}")]

    def _digest(self, committed: int) -> None:
        assert self.ctx.read_messages is not None
        words = sum(len(m.content.split()) for _, m in self.ctx.read_messages(0, committed))
        if not self._stop.is_set():
            self.ctx.tell(Notice(text=f"{self.settings.label}: {words} words in {committed} messages"))

    def close(self) -> None:
        self.closed += 1
        self._stop.set()
        for thread in self.threads:
            thread.join(5)


@pytest.fixture
def digest(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(tier_registry, "TIER_KINDS", list(tier_registry.TIER_KINDS))
    tier_registry.register_tier(DigestTier)  # the one registration
    yield


def texts(events: list[Event]) -> list[str]:
    return [e.text for e in events if isinstance(e, Notice)]


def test_background_news_reaches_the_event_stream_between_turns(digest: None) -> None:
    agent = Agent.create("sam", provider=ScriptedProvider(["Noted.", "Sure."]))
    events = list(agent.turn("one two three"))
    assert events[-1] == Notice(text="digest saw turn 1")  # the tier's end-of-turn event ends the turn's stream
    assert events[-2].type == "turn_finished"
    assert texts(list(agent.idle(wait=10))) == ["digest: 4 words in 2 messages"]  # from its own thread
    assert list(agent.idle()) == []  # taken once
    list(agent.turn("four"))
    assert texts(list(agent.idle(wait=10))) == ["digest: 6 words in 4 messages"]
    agent.close()
    assert agent.tier(DigestTier).closed == 1


def test_a_tier_keeps_its_settings_with_the_agent(digest: None) -> None:
    agent = Agent.create("sam", provider=ScriptedProvider(["Noted."] * 3))
    assert agent.tier_settings(DigestTier) == DigestSettings()
    assert "Digest runs every 1 turn(s)." in agent.system_prompt()
    agent.update_tier_settings(DigestTier, every_turns=2, label="weekly")
    with pytest.raises(ValueError):
        agent.update_tier_settings(DigestTier, every_turns=0)  # validated by the tier's model, nothing changed
    list(agent.turn("hello"))
    assert list(agent.idle()) == []  # every second turn now
    agent.close()
    again = Agent.load("sam", provider=ScriptedProvider(["Yes.", "Fine."]))
    assert again.tier(DigestTier).opened_with == 2  # opened to talk, with what was saved
    assert again.tier_settings(DigestTier) == DigestSettings(every_turns=2, label="weekly")
    assert "Digest runs every 2 turn(s)." in again.system_prompt()
    list(again.turn("again"))
    list(again.turn("and again"))
    assert texts(list(again.idle(wait=10))) == ["weekly: 7 words in 6 messages"]
    again.close()


def test_a_read_only_agent_opens_no_background_work_and_takes_no_settings(digest: None) -> None:
    Agent.create("sam", provider=ScriptedProvider(["Noted."])).close()
    reader = Agent.load("sam", read_only=True)
    assert reader.tier(DigestTier).opened_with is None
    assert list(reader.idle()) == []
    with pytest.raises(ReadOnlyAgentError):
        reader.update_tier_settings(DigestTier, every_turns=3)
    with pytest.raises(ConfigError, match="has no settings"):
        reader.tier_settings(tier_registry.TIER_KINDS[0])  # recall has none


def test_the_repl_shows_background_news_before_the_next_prompt(digest: None) -> None:
    agent = Agent.create("sam", provider=ScriptedProvider(["Noted.", "Sure."]))
    turn = agent.turn

    def turn_then_digest(text: str) -> Iterator[Event]:
        yield from turn(text)
        for thread in agent.tier(DigestTier).threads:
            thread.join(10)

    agent.turn = turn_then_digest  # type: ignore[method-assign]
    lines = iter(["one two three", "four"])
    out = io.StringIO()

    def read(prompt: str) -> str:
        out.write(prompt)
        try:
            return next(lines)
        except StopIteration:
            raise EOFError from None

    assert Repl(agent, read=read, out=out).run() == 0
    shown = out.getvalue()
    assert "digest saw turn 1" in shown and "digest: 4 words in 2 messages" in shown
    assert shown.index("digest: 4 words in 2 messages") < shown.index("you> sam> Sure.")
