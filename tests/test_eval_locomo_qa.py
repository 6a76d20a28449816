"""The LoCoMo QA evaluation end to end, with scripted models, on a tiny synthetic file in the LoCoMo format."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from agentos.agent.agent import Agent
from agentos.eval import locomo_qa
from agentos.eval.__main__ import main
from agentos.eval.scripted_models import judge, reader
from agentos.providers.scripted import ScriptedProvider, Step
from agentos.storage import Store

SAMPLE: dict[str, Any] = {
    "sample_id": "conv-qa",
    "conversation": {
        "speaker_a": "Ana", "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "Hi Ben! I adopted a puppy named Biscuit last weekend."},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Congratulations! I started learning the violin this spring.",
             "blip_caption": "a photo of a violin"},
            {"speaker": "Ana", "dia_id": "D1:3", "text": "Biscuit loves chasing tennis balls in the park."},
            {"speaker": "Ben", "dia_id": "D1:4", "text": "My violin teacher lives in Lisbon, so our lessons are online."},
            {"speaker": "Ana", "dia_id": "D1:5", "text": "I work as a nurse at the city hospital, mostly night shifts."},
        ],
        "session_2_date_time": "10:00 am on 20 June, 2023",
        "session_2": [
            {"speaker": "Ben", "dia_id": "D2:1", "text": "I played my first violin concert yesterday, it went well!"},
            {"speaker": "Ana", "dia_id": "D2:2", "text": "Amazing! Biscuit chewed my new running shoes today."},
            {"speaker": "Ben", "dia_id": "D2:3", "text": "Ha, puppies. Are you still running the marathon in October?"},
            {"speaker": "Ana", "dia_id": "D2:4", "text": "Yes, I am training hard for the Berlin marathon in October."},
            {"speaker": "Ben", "dia_id": "D2:5", "text": "Good luck with the training, and send me photos."},
        ],
    },
    "qa": [
        {"question": "What is the name of Ana's puppy?", "answer": "Biscuit", "evidence": ["D1:1"], "category": 4},
        {"question": "In which city does Ben's violin teacher live?", "answer": "Lisbon", "evidence": ["D1:4"],
         "category": 1},
        {"question": "When did Ben play his first violin concert?", "answer": "19 June 2023", "evidence": ["D2:1"],
         "category": 2},
        {"question": "Which marathon is Ana training for?", "answer": "the Berlin marathon", "evidence": ["D2:4"],
         "category": 3},
        {"question": "What did Ben's puppy chew?", "evidence": ["D2:2"], "category": 5,
         "adversarial_answer": "running shoes"},
    ],
}
TURNS = 10
SCRIPTED = ["--model", "scripted/reader", "--judge", "scripted/judge", "--fact-model", "scripted/facts"]


@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    path = tmp_path / "mini-locomo.json"
    path.write_text(json.dumps([SAMPLE]), encoding="utf-8")
    return path


def _run(args: list[str], tmp_path: Path) -> dict[str, Any]:
    out = tmp_path / "report.json"
    assert main(["locomo-qa", *args, "--json", str(out)]) == 0
    report: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return report


def _check_accuracy(figures: dict[str, Any], n: int) -> None:
    assert figures["n"] == n and figures["ungraded"] == 0 and 0 <= figures["correct"] <= n
    assert 0.0 <= figures["accuracy"] <= 1.0
    assert figures["low"] <= figures["accuracy"] <= figures["high"]
    assert 0.0 <= figures["low"] and figures["high"] <= 1.0


def test_end_to_end_report_with_scripted_models(data_file: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path / "eval-home"
    report = _run([str(data_file), *SCRIPTED, "--home", str(home)], tmp_path)
    printed = capsys.readouterr()
    assert report["conversations"] == 1 and report["questions"] == 4  # category 5 has no gold answer: not asked
    assert {r["category"] for r in report["rows"]} == {1, 2, 3, 4}
    for name in ("agent", "baseline"):
        figures = report[name]
        assert set(figures["accuracy"]) == {"1", "2", "3", "4", "overall"}
        for category in ("1", "2", "3", "4"):
            _check_accuracy(figures["accuracy"][category], 1)
        _check_accuracy(figures["accuracy"]["overall"], 4)
        assert figures["tokens_per_question"]["answer"] > 0 and figures["tokens_per_question"]["judge"] > 0
        assert 0 < figures["latency_s"]["p50"] <= figures["latency_s"]["p95"]
        assert figures["failed_answers"] == 0
    assert report["agent"]["accuracy"]["4"]["correct"] == 1  # "Biscuit" is in the best search result
    memory = report["memory"]
    assert memory["messages_loaded"] == TURNS and memory["facts_stored"] > 0 and memory["consolidation_s"] > 0
    assert memory["per_conversation"][0]["messages_after"] == TURNS  # every question's turn was taken back
    assert all(r["agent"]["text"] and r["baseline"]["text"] for r in report["rows"])
    assert "overall" in printed.out and "full-context baseline" in printed.out and "facts stored" in printed.out
    assert "consolidating" in printed.err
    agent = Agent.load("locomo-qa-conv-qa", home=home, read_only=True)
    assert agent.state.message_count == TURNS


def test_each_question_is_answered_independently(tmp_path: Path) -> None:
    answering = reader()
    models = locomo_qa.Models(answer=answering, facts=locomo_qa.resolve("scripted/facts"), judge=judge())
    store = Store(tmp_path / "db")
    try:
        done = locomo_qa.evaluate(store, SAMPLE, models, locomo_qa.Options(path="", model="scripted/reader"))
    finally:
        store.close()
    assert len(done.rows) == 4 and done.messages_loaded == done.messages_after == TURNS
    first_steps = [r for r in answering.requests if r.tools and not any(m.role == "tool" for m in r.messages)]
    assert len(first_steps) == 4
    assert all([m.role for m in r.messages] == ["user"] for r in first_steps)  # no earlier question in context
    searched = [m.content for r in answering.requests for m in r.messages if m.role == "tool"]
    assert searched and not any("Question:" in text for text in searched)  # nor in recall or facts
    assert all("fact_search" in {t.name for t in r.tools} for r in first_steps)
    baseline = [r for r in answering.requests if not r.tools]
    assert len(baseline) == 4 and all("Session 2 (10:00 am on 20 June, 2023):" in r.messages[0].content
                                      for r in baseline)


def test_no_baseline_and_limits(data_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = _run([str(data_file), *SCRIPTED, "--no-baseline", "--questions", "2", "--categories", "4,1"], tmp_path)
    assert report["baseline"] is None and report["questions"] == 2
    assert set(report["agent"]["accuracy"]) == {"4", "1", "overall"}
    assert "full-context baseline" not in capsys.readouterr().out


def test_an_unreadable_grade_is_retried_then_left_ungraded() -> None:
    answer = locomo_qa.Answer("Biscuit")
    fixed = ScriptedProvider(["no idea", Step(text='{"correct": true}')])
    grade = locomo_qa.judge_answer(fixed, "What is the puppy's name?", "Biscuit", answer)
    assert grade.correct is True and grade.tries == 2 and grade.input_tokens > 0
    broken = ScriptedProvider(['{"correct": "perhaps"}'] * locomo_qa.JUDGE_TRIES)
    grade = locomo_qa.judge_answer(broken, "What is the puppy's name?", "Biscuit", answer)
    assert grade.correct is None and grade.tries == locomo_qa.JUDGE_TRIES and "correct" in (grade.error or "")
    tool = ScriptedProvider([Step(tool_calls=[("grade", {"correct": False})])])
    assert locomo_qa.judge_answer(tool, "q", "Biscuit", answer).correct is False
    summary = locomo_qa.accuracy([grade, locomo_qa.Grade(True), locomo_qa.Grade(False)])
    assert summary["n"] == 2 and summary["ungraded"] == 1 and summary["accuracy"] == 0.5


def test_wilson_interval() -> None:
    assert locomo_qa.wilson(0, 0) == (0.0, 1.0)
    low, high = locomo_qa.wilson(5, 10)
    assert abs((low + high) / 2 - 0.5) < 1e-9 and abs(low - 0.2366) < 1e-3
    low, high = locomo_qa.wilson(10, 10)
    assert high == 1.0 and 0.69 < low < 0.73


def test_a_real_model_without_a_key_is_said_clearly(data_file: Path, allow_real_providers: None,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["locomo-qa", str(data_file), "--model", "openai/gpt-4.1-mini"]) == 2
    err = capsys.readouterr().err
    assert "openai/gpt-4.1-mini cannot be used" in err and "OPENAI_API_KEY" in err


@pytest.mark.skipif(not os.environ.get("AGENTOS_EVAL_MODEL"), reason="set AGENTOS_EVAL_MODEL to run against a model")
def test_against_a_real_model(data_file: Path, tmp_path: Path, request: pytest.FixtureRequest,
                              allow_real_providers: None) -> None:
    spec = os.environ["AGENTOS_EVAL_MODEL"]
    key = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}.get(spec.split("/", 1)[0])
    if key:
        request.getfixturevalue("live_key")(key)
    report = _run([str(data_file), "--model", spec], tmp_path)
    assert report["questions"] == 4 and report["agent"]["failed_answers"] == 0
    assert report["memory"]["per_conversation"][0]["messages_after"] == TURNS
    for name in ("agent", "baseline"):
        overall = report[name]["accuracy"]["overall"]
        assert overall["n"] + overall["ungraded"] == 4
        assert overall["n"] == 0 or overall["low"] <= overall["accuracy"] <= overall["high"]
