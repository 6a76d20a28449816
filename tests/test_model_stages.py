"""Search stages that ask a model: rewriting a question into keyword queries, reranking the best candidates, and a
search that still answers when the model is missing, failing or unreadable."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from mock_api import MockAPI, oa_error, oa_text_reply, sse_response

from agentos.agent.agent import Agent
from agentos.agent.state import AgentSettings, SearchSettings
from agentos.embedders.base import NoEmbedder
from agentos.errors import ServerError
from agentos.events import ToolCallFinished
from agentos.memory.recall import RecallTier
from agentos.memory.tier import TierContext
from agentos.messages import Message
from agentos.providers.base import ModelRequest
from agentos.providers.openai_provider import OpenAIProvider
from agentos.providers.retry import RetryPolicy
from agentos.providers.scripted import ScriptedProvider, Step
from agentos.retrieval.model_stages import RERANK_POOL, REWRITES, picked_numbers, rewrite_lines

START = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)
FILLER = [f"unrelated chat number {i} about the weather and the garden" for i in range(40)]


def agent_with(texts: list[str], paths: list[str] | None = None, model: str | None = None) -> tuple[Agent, list[Message]]:
    search = SearchSettings(model=model, **({"paths": paths} if paths else {}))
    settings = AgentSettings(search=search)
    agent = Agent.create("ada", provider=ScriptedProvider([]), settings=settings)
    messages = [Message(role="user" if i % 2 == 0 else "assistant", content=text,
                        created_at=START + timedelta(minutes=i)) for i, text in enumerate(texts)]
    agent.add_history(messages)
    return agent, messages


def test_rewrite_answers_are_read_a_query_per_line() -> None:
    answer = '1. violin lessons\n- "music teacher"\n\n* violin lessons\nQuery 3: orchestra rehearsal\n' + "x" * 300
    assert rewrite_lines(answer, "What instrument does she play?") == [
        "violin lessons", "music teacher", "orchestra rehearsal"]
    assert rewrite_lines("What instrument does she play?\nstrings", "What instrument does she play?") == ["strings"]
    assert len(rewrite_lines("\n".join(f"query {i}" for i in range(10)), "q")) == REWRITES


def test_rerank_answers_are_read_as_passage_numbers() -> None:
    assert picked_numbers("3, 1, 3 and then [2]", 3) == [3, 1, 2]
    assert picked_numbers("0", 5) == []  # none helps
    assert picked_numbers("passages 7 and 2", 5) == [2]  # out of range: left out
    assert picked_numbers("I cannot tell.", 5) == []
    assert picked_numbers("[4] (2024-03-01) the ferry", 5) == [4]  # an echoed header's date names nothing


def test_a_rewritten_query_finds_an_answer_that_shares_no_word_with_the_question(agentos_home: Path) -> None:
    agent, messages = agent_with([*FILLER, "I started violin lessons with a teacher from Vienna."])
    asked: list[ModelRequest] = []

    def model(request: ModelRequest) -> str:
        asked.append(request)
        return "violin lessons\nmusic teacher"

    agent.roles.use("search", ScriptedProvider(model))
    recall = agent.tier(RecallTier)
    question = "Which instrument did I take up?"
    assert messages[-1].id not in [h.id for h in recall.search(question, paths=["keyword"]).hits]
    page = recall.search(question, paths=["keyword", "rewrite"])
    assert page.hits[0].id == messages[-1].id and page.note is None
    assert question in asked[0].messages[0].content and "search queries" in asked[0].system
    recall.search(question, page=1, paths=["keyword", "rewrite"])
    assert len(asked) == 1  # the next page asks nothing again


def test_the_reranker_reorders_the_best_candidates_and_pages_keep_its_order(agentos_home: Path) -> None:
    texts = [f"the harbour trip number {i} was fine" for i in range(8)]
    texts[5] = "the harbour trip ended when the ferry broke down at noon"
    agent, messages = agent_with(texts)
    asked: list[ModelRequest] = []

    def model(request: ModelRequest) -> str:
        asked.append(request)
        passages = request.messages[0].content.split("Passages:\n")[1].splitlines()
        return ", ".join(line[1:line.index("]")] for line in passages if "ferry" in line)

    agent.roles.use("search", ScriptedProvider(model))
    recall = agent.tier(RecallTier)
    paths = ["keyword", "rerank"]
    first = recall.search("how did the harbour trip end", page_size=3, paths=paths)
    assert first.hits[0].id == messages[5].id
    shown = asked[0].messages[0].content
    assert re.search(r"\[1\] \(2024-03-01\) ", shown)  # numbered, dated passages
    second = recall.search("how did the harbour trip end", page=1, page_size=3, paths=paths)
    assert len(asked) == 1 and not {h.id for h in first.hits} & {h.id for h in second.hits}
    assert len({h.id for h in first.hits + second.hits}) == 6
    assert first.total == recall.search("how did the harbour trip end", paths=["keyword"]).total


def test_only_the_best_candidates_go_to_the_reranker(agentos_home: Path) -> None:
    agent, _ = agent_with([f"a note about apples, number {i}" for i in range(RERANK_POOL + 10)])
    asked: list[ModelRequest] = []
    agent.roles.use("search", ScriptedProvider(lambda request: asked.append(request) or "1"))
    page = agent.tier(RecallTier).search("apples", paths=["keyword", "rerank"])
    assert page.total == RERANK_POOL + 10
    assert f"[{RERANK_POOL}]" in asked[0].messages[0].content
    assert f"[{RERANK_POOL + 1}]" not in asked[0].messages[0].content


@pytest.mark.parametrize("answer", ["I am not sure which.", "0"])
def test_an_answer_that_names_no_passage_changes_nothing(agentos_home: Path, answer: str) -> None:
    agent, _ = agent_with([f"the garden party number {i}" for i in range(6)])
    recall = agent.tier(RecallTier)
    plain = [h.id for h in recall.search("garden party", paths=["keyword"]).hits]
    agent.roles.use("search", ScriptedProvider(lambda request: answer))
    assert [h.id for h in recall.search("garden party", paths=["keyword", "rerank"]).hits] == plain


@pytest.mark.parametrize("error", [ServerError("the server is overloaded"), ValueError("overloaded plugin")])
def test_a_failing_search_model_leaves_its_stages_out_and_says_so(agentos_home: Path, error: Exception) -> None:
    agent, messages = agent_with([*FILLER, "the ferry broke down", "the ferry broke down again, in the rain"])
    agent.roles.use("search", ScriptedProvider([error] * 2))
    page = agent.tier(RecallTier).search("ferry broke down", paths=["keyword", "rewrite", "rerank"])
    assert [h.id for h in page.hits] == [m.id for m in messages[-2:]]
    assert "rewriting the question was left out" in (page.note or "")
    assert "reranking was left out" in (page.note or "") and "overloaded" in (page.note or "")


def test_pages_agree_when_the_model_fails_for_the_first(agentos_home: Path) -> None:
    agent, _ = agent_with([f"the harbour trip number {i} was fine" for i in range(8)])
    agent.roles.use("search", ScriptedProvider([ServerError("overloaded"), "8, 7, 6, 5, 4, 3, 2, 1"]))
    recall = agent.tier(RecallTier)
    first = recall.search("harbour trip", page_size=4, paths=["keyword", "rerank"])
    second = recall.search("harbour trip", page=1, page_size=4, paths=["keyword", "rerank"])
    assert "reranking was left out" in (second.note or "")  # the failure holds for the rest of this search
    assert len({h.id for h in first.hits + second.hits}) == 8


def test_a_new_search_model_is_asked_from_the_next_search(agentos_home: Path) -> None:
    agent, _ = agent_with([*FILLER, "I started violin lessons."])
    old, new = ScriptedProvider(lambda request: "violin"), ScriptedProvider(lambda request: "violin")
    recall = agent.tier(RecallTier)
    agent.roles.use("search", old)
    recall.search("Which instrument?", paths=["keyword", "rewrite"])
    agent.roles.use("search", new)
    recall.search("Which instrument now?", paths=["keyword", "rewrite"])
    assert (len(old.requests), len(new.requests)) == (1, 1)


def test_without_a_model_for_search_the_stages_are_left_out(agentos_home: Path) -> None:
    agent, messages = agent_with(["the ferry broke down", "the ferry was late"])
    bare = RecallTier(TierContext(db=agent.store.db, agent_id=agent.id, embedder=NoEmbedder, writable=False))
    page = bare.search("ferry broke down", paths=["keyword", "rerank"])
    assert [h.id for h in page.hits] == [m.id for m in messages]
    assert page.note == "No model is set for search, so reranking was left out."


@pytest.mark.usefixtures("allow_real_providers")
def test_the_model_reranks_a_conversation_search_over_the_openai_api(agentos_home: Path) -> None:
    texts = [f"the harbour trip number {i} was fine" for i in range(4)] + ["the harbour trip ended with a storm"]
    agent, _ = agent_with(texts, paths=["keyword", "rerank"])
    api = MockAPI(oa_error(503, "busy", "server_error"), sse_response(oa_text_reply("2")))
    agent.roles.use("search", OpenAIProvider("gpt-4.1-mini", api_key="sk-test", base_url="http://mock/v1",
                                           http_client=api.client(),
                                           retry=RetryPolicy(max_retries=1, base_delay=0.0, jitter=0.0)))
    agent.roles.use("main", ScriptedProvider([Step(tool_calls=[("conversation_search", {"query": "harbour trip storm"})]),
                                       Step(text="It ended with a storm.")]))
    events = list(agent.turn("how did the harbour trip end?"))
    result = next(e for e in events if isinstance(e, ToolCallFinished)).result
    lines = [line for line in result.splitlines() if line.startswith("- [")]
    body = api.body()
    assert len(api.requests) == 2 and body["model"] == "gpt-4.1-mini"  # the 503 was retried
    named = re.search(r"^\[2\] \(2024-03-01\) (.+)$", body["messages"][-1]["content"], re.MULTILINE)
    assert named and "storm" not in named.group(1)  # keyword search ranked the storm first, the model did not
    assert named.group(1) in lines[0]


@pytest.mark.usefixtures("allow_real_providers")
def test_the_search_model_spec_is_resolved_from_the_settings(agentos_home: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    agent, _ = agent_with(["the ferry broke down"], model="openai/gpt-4.1-nano")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    page = agent.tier(RecallTier).search("ferry", paths=["keyword", "rewrite"])
    assert len(page.hits) == 1 and "rewriting the question was left out" in (page.note or "")
    assert "OPENAI_API_KEY" in (page.note or "")
    agent.update_settings(search=SearchSettings(model="scripted/demo"))  # offline: it resolves, and answers
    assert agent.tier(RecallTier).search("ferry", paths=["keyword", "rewrite"]).note is None
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    agent.update_settings(search=SearchSettings(model="anthropic/claude-haiku-4-5"))
    page = agent.tier(RecallTier).search("ferry again", paths=["keyword", "rewrite"])
    assert "ANTHROPIC_API_KEY" in (page.note or "")  # the new setting's model, resolved again


def test_the_ablation_runs_rerank_alone_over_keywords() -> None:
    from agentos.eval.locomo import ablation_configs

    alone = [c.paths for c in ablation_configs(["keyword", "neighbours", "time", "rerank"])]
    assert ("keyword", "rerank") in alone and ("rerank",) not in alone
