"""Embedders: the deterministic one, specs, fail-fast errors, wrong-embedder refusal, reindex."""

from __future__ import annotations

import numpy as np
import pytest

from agentos.agent.agent import Agent
from agentos.agent.memory_access import AgentMemory
from agentos.errors import EmbedderError, EmbedderMismatchError
from agentos.memory.archival import ArchivalTier
from agentos.memory.embedders import HashEmbedder, NoEmbedder, OpenAIEmbedder, resolve_embedder
from agentos.memory.tiers import Tiers
from agentos.messages import ToolCall
from agentos.tools.context import ToolContext
from tests.memory_helpers import archival, call, make_agent, recall, say


def test_hash_embedder_is_deterministic_unit_and_batched() -> None:
    e = HashEmbedder(64)
    texts = [f"text number {i}" for i in range(150)]  # more than one batch
    a, b = e.embed(texts), HashEmbedder(64).embed(texts)
    assert a.shape == (150, 64) and np.array_equal(a, b)
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0)
    same, other = e.embed(["apple pie red", "quantum physics lecture"])
    assert float(same @ e.embed(["red apple pie"])[0]) > float(other @ same)


def test_specs() -> None:
    assert isinstance(resolve_embedder("none"), NoEmbedder)
    assert resolve_embedder("hash").name == "hash-384"
    assert resolve_embedder("hash:32").dim == 32
    assert resolve_embedder("openai/text-embedding-3-small").dim == 1536
    assert resolve_embedder("ollama/nomic-embed-text").name == "ollama/nomic-embed-text"
    for bad in ["bogus", "hash:abc", "nope/model", "hash:1"]:
        with pytest.raises(EmbedderError):
            resolve_embedder(bad)


def test_unreachable_service_fails_fast_with_a_clear_message() -> None:
    e = OpenAIEmbedder("nomic-embed-text", base_url="http://127.0.0.1:9/v1", api_key="x", label="ollama")
    with pytest.raises(EmbedderError, match="cannot reach the embedding service at http://127.0.0.1:9/v1"):
        e.embed(["hello"])


def test_missing_api_key_is_clear(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(EmbedderError, match="OPENAI_API_KEY"):
        OpenAIEmbedder("text-embedding-3-small").embed(["x"])


def test_wrong_embedder_is_a_clear_error() -> None:
    agent = make_agent(embedder="hash:64")
    call(agent, "archival_insert", content="kept with hash-64")
    say(agent, "user", "a message with a vector")
    for other in ["hash:32", "none"]:
        tiers = Tiers(agent.store.db, agent.id, other)
        with pytest.raises(EmbedderMismatchError, match="agentos reindex"):
            tiers.get(ArchivalTier).search("kept")
    text, err = call(Agent.load("sam", provider=agent.provider), "archival_search", query="kept")
    assert not err and "kept" in text
    wrong = Tiers(agent.store.db, agent.id, "hash:32")  # as an agent whose settings name another embedder
    context = ToolContext(memory=AgentMemory(agent.state, wrong, "c1"))
    outcome = agent.tools.execute(ToolCall(id="c1", name="archival_search", arguments='{"query": "kept"}'), context)
    assert outcome.is_error and "was built with embedder 'hash-64'" in outcome.text


def test_embedder_down_does_not_break_a_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    agent = make_agent(embedder="hash:64")

    def boom(texts: object) -> object:
        raise EmbedderError("cannot reach the embedding service")

    monkeypatch.setattr(agent.tiers.embedder(), "embed", boom)
    say(agent, "user", "still saved and found by keywords")
    monkeypatch.undo()
    assert "still saved" in recall(agent).search("keywords").hits[0].text
    say(agent, "user", "next step catches up")
    agent.save()
    assert recall(agent).vectors.count_rows() == 2


def test_search_falls_back_to_keywords_when_the_embedder_is_down(monkeypatch: pytest.MonkeyPatch) -> None:
    agent = make_agent(embedder="hash:64")
    call(agent, "archival_insert", content="the spare key is under the blue flowerpot")
    say(agent, "user", "my sister lives in Lisbon")
    agent.save()

    def boom(texts: object) -> object:
        raise EmbedderError("cannot reach the embedding service at http://127.0.0.1:9/v1")

    with monkeypatch.context() as patched:
        patched.setattr(agent.tiers.embedder(), "embed", boom)
        text, err = call(agent, "archival_search", query="blue flowerpot")
        assert not err and "flowerpot" in text and "keyword matches only" in text and "127.0.0.1:9" in text
        text, err = call(agent, "conversation_search", query="Lisbon")
        assert not err and "Lisbon" in text and "keyword matches only" in text
    text, err = call(agent, "archival_search", query="blue flowerpot")
    assert not err and "keyword matches only" not in text


def reindex(name: str, spec: str, **kwargs: object) -> dict[str, int]:
    agent = Agent.load(name, with_model=False)
    try:
        return agent.reindex(spec, **kwargs)  # type: ignore[arg-type]
    finally:
        agent.close()


def test_reindex_switches_embedder_and_keeps_everything() -> None:
    agent = make_agent(embedder="none")
    call(agent, "archival_insert", content="passage about lighthouses", tags=["sea"])
    say(agent, "user", "I visited a lighthouse")
    agent.close()
    progress: list[tuple[str, int, int]] = []
    reindex("sam", "hash:48", progress=lambda what, done, total: progress.append((what, done, total)))
    again = Agent.load("sam", provider=agent.provider)
    assert again.state.settings.embedder == "hash:48"
    assert archival(again).table.schema.field("vector").type.list_size == 48
    assert recall(again).vectors.count_rows() == 1
    text, err = call(again, "archival_search", query="lighthouses", tags=["sea"])
    assert not err and "lighthouses" in text
    assert progress and progress[-1][1] == progress[-1][2]
    reindex("sam", "none")
    back = Agent.load("sam", provider=agent.provider)
    assert "lighthouses" in call(back, "archival_search", query="lighthouses")[0]


def test_a_reindex_cut_short_by_a_crash_loses_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentos.storage.db import Database

    agent = make_agent(embedder="hash:32")
    for i in range(3):
        call(agent, "archival_insert", content=f"passage {i} about lighthouses")
    agent.close()
    real_drop = Database.drop

    def crash_right_after_the_old_table_is_dropped(self: Database, name: str) -> None:
        real_drop(self, name)
        if name.startswith("archival_") and not name.endswith("__swap"):
            raise KeyboardInterrupt("power cut")

    with monkeypatch.context() as patched, pytest.raises(KeyboardInterrupt):
        patched.setattr(Database, "drop", crash_right_after_the_old_table_is_dropped)
        reindex("sam", "hash:48")

    again = Agent.load("sam", provider=agent.provider)  # the passages come back from the copy
    assert again.store.db.count_rows(archival(again).table_name) == 3
    reindex("sam", "hash:48")  # and the reindex can simply be run again
    done = Agent.load("sam", provider=agent.provider)
    assert archival(done).count() == 3
    text, err = call(done, "archival_search", query="lighthouses")
    assert not err and "of 3" in text
    assert not any(t.endswith("__swap") for t in done.store.db.connection.list_tables().tables)
