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
from agentos.eval.locomo_qa.scoring import stem
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
    assert report["conversations"] == 1 and report["questions"] == 4  # category 5 is not asked by default
    assert report["conditions"] == ["agent", "full"] and report["sample"] is None  # today's default
    assert {r["category"] for r in report["rows"]} == {1, 2, 3, 4}
    for name in ("agent", "full"):
        figures = report["results"][name]
        assert set(figures["judge"]) == set(figures["f1"]) == {"1", "2", "3", "4", "overall"}
        for category in ("1", "2", "3", "4"):
            _check_accuracy(figures["judge"][category], 1)
            assert figures["f1"][category]["n"] == 1
        _check_accuracy(figures["judge"]["overall"], 4)
        f1 = figures["f1"]["overall"]
        assert f1["n"] == 4 and f1["low"] <= f1["mean"] <= f1["high"]
        assert figures["tokens_per_question"]["answer"] > 0 and figures["tokens_per_question"]["judge"] > 0
        seconds = figures["seconds_per_question"]
        assert 0 < seconds["p50"] <= seconds["p95"] and seconds["mean"] > 0
        assert figures["failed_answers"] == 0
    assert report["results"]["agent"]["judge"]["4"]["correct"] == 1  # "Biscuit" is in the best search result
    assert report["differences"] == {}  # no `none` to compare with
    memory = report["memory"]
    assert memory["messages_loaded"] == TURNS and memory["facts_stored"] > 0 and memory["consolidation_s"] > 0
    assert memory["per_conversation"][0]["messages_after"] == TURNS  # every question's turn was taken back
    for row in report["rows"]:
        assert set(row["answers"]) == set(row["f1"]) == set(row["grades"]) == {"agent", "full"}
        assert all(a["text"] for a in row["answers"].values())
    assert "overall" in printed.out and "LoCoMo F1" in printed.out and "facts stored" in printed.out
    assert "judge accuracy" in printed.out and "consolidating" in printed.err
    assert "conv-qa 4/4" in printed.err and "s elapsed" in printed.err  # a progress line per question
    agent = Agent.load("locomo-qa-conv-qa", home=home, read_only=True)
    assert agent.state.message_count == TURNS


def _evaluate(tmp_path: Path, answering: ScriptedProvider, **given: Any) -> locomo_qa.Conversation:
    options = locomo_qa.Options(path="", model="scripted/reader", **given)
    facts = locomo_qa.resolve("scripted/facts") if options.facts else None
    models = locomo_qa.Models(answer=answering, facts=facts, judge=judge() if options.judging else None)
    store = Store(tmp_path / "db")
    try:
        return locomo_qa.evaluate(store, SAMPLE, models, options)
    finally:
        store.close()


def test_each_question_is_answered_independently(tmp_path: Path) -> None:
    answering = reader()
    done = _evaluate(tmp_path, answering)
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


def _one_call_prompts(answering: ScriptedProvider) -> dict[str, list[str]]:
    """The prompts of the one-call conditions, by condition, told apart by their source's wording."""
    marks = {"search": "A search of it for the question", "gold": "These messages of it hold",
             "none": "You are given nothing of it", "full": "The whole conversation follows"}
    found: dict[str, list[str]] = {name: [] for name in marks}
    for request in answering.requests:
        if not request.tools:
            text = request.messages[0].content
            (name,) = [n for n, mark in marks.items() if mark in text]
            found[name].append(text)
    return found


def test_each_condition_gets_what_it_should(tmp_path: Path) -> None:
    answering = reader()
    done = _evaluate(tmp_path, answering, conditions=locomo_qa.CONDITIONS, facts=False, judge="none")
    assert done.facts_stored == 0 and done.consolidation_s == 0
    prompts = _one_call_prompts(answering)
    assert all(len(texts) == 4 for texts in prompts.values())
    turns = [t["text"] for key in ("session_1", "session_2") for t in SAMPLE["conversation"][key]]
    puppy = next(r for r in done.rows if "puppy" in r.question)
    assert puppy.evidence == ["D1:1"] and puppy.answers["gold"].context == ["D1:1"]
    gold = next(p for p in prompts["gold"] if "Ana's puppy" in p)
    given = [line for line in gold.splitlines() if line.startswith("- [")]
    assert given == ["- [1:56 pm on 8 May, 2023] Ana: Hi Ben! I adopted a puppy named Biscuit last weekend."]
    assert puppy.f1["gold"] > 0 and puppy.f1["none"] == 0.0
    for text in prompts["none"]:  # the question alone
        assert not any(turn in text for turn in turns) and "- [" not in text and "Question: " in text
    search = next(p for p in prompts["search"] if "Ana's puppy" in p)
    found = [line for line in search.splitlines() if line.startswith("- [")]
    assert 0 < len(found) <= 10 and len(found) == len(puppy.answers["search"].context)
    assert "D1:1" in puppy.answers["search"].context and given[0] in found
    assert all(any(turn in line for turn in turns) for line in found)  # each a turn, with its date and speaker
    for row in done.rows:
        assert set(row.answers) == set(locomo_qa.CONDITIONS) and row.grades == {}
        assert row.answers["search"].context and not row.answers["none"].context
    agent_prompts = [r.messages[0].content for r in answering.requests if r.tools and len(r.messages) == 1]
    assert agent_prompts and all("conversation_search" in p and "fact_search" not in p for p in agent_prompts)
    wording = [p.split("\n\n")[-1] for texts in prompts.values() for p in texts] + [
        p.split("\n\n")[-1] for p in agent_prompts]
    assert len(set(wording)) == 1  # the same instructions for every condition


def test_no_baseline_and_limits(data_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = _run([str(data_file), *SCRIPTED, "--no-baseline", "--questions", "2", "--categories", "4,1"], tmp_path)
    assert report["conditions"] == ["agent"] and report["questions"] == 2
    assert set(report["results"]["agent"]["f1"]) == {"4", "1", "overall"}
    assert "full" not in capsys.readouterr().out.split("LoCoMo F1")[1]


def test_sample_no_judge_no_facts_window_and_differences(data_file: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path / "eval-home"
    args = [str(data_file), "--model", "scripted/reader", "--no-judge", "--no-facts", "--sample", "3", "--seed",
            "5", "--conditions", "agent,search,none,gold", "--window", "4096", "--conversations", "conv-qa",
            "--home", str(home)]
    report = _run(args, tmp_path)
    printed = capsys.readouterr().out
    assert report["questions"] == 3 and report["sample"]["n"] == 3 and report["sample"]["seed"] == 5
    assert sorted(q["category"] for q in report["sample"]["questions"]) == [1, 2, 3]  # the lowest numbers first
    assert [(r["conversation"], r["index"]) for r in report["rows"]] == [
        (q["conversation"], q["index"]) for q in report["sample"]["questions"]]
    assert "sample: 3 questions (seed 5" in printed and "conv-qa: " in printed
    assert report["models"]["judge"] is None and report["models"]["facts"] is None
    assert all(figures["judge"] is None for figures in report["results"].values())
    assert "judge accuracy" not in printed and report["memory"]["facts_stored"] == 0
    assert set(report["differences"]) == {"agent-none", "search-none"}
    for difference in report["differences"].values():
        overall = difference["overall"]
        assert overall["n"] == 3 and overall["low"] <= overall["mean"] <= overall["high"]
    assert "F1 difference over none" in printed
    agent = Agent.load("locomo-qa-conv-qa", home=home, read_only=True)
    assert agent.settings.context_window == 4096
    assert main(["locomo-qa", str(data_file), "--model", "scripted/reader", "--conversations", "conv-nope"]) == 2
    assert "no conversation conv-nope" in capsys.readouterr().err


def test_adversarial_questions_are_scored_as_locomo_does(data_file: Path, tmp_path: Path) -> None:
    report = _run([str(data_file), "--model", "scripted/reader", "--judge", "none", "--no-facts",
                   "--categories", "5", "--conditions", "none"], tmp_path)
    (row,) = report["rows"]
    assert row["category"] == 5 and row["gold"] == "Not mentioned in the conversation"
    assert row["f1"]["none"] == 0.0  # the scripted reader says "I don't know."


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


def test_locomo_f1_rules() -> None:
    assert locomo_qa.normalize("The Berlin marathon, and a race!") == "berlin marathon race"
    assert locomo_qa.token_f1("Biscuit", "Biscuit") == 1.0
    assert locomo_qa.token_f1("the Berlin marathon", "Berlin Marathon.") == 1.0  # articles, case, punctuation
    assert locomo_qa.token_f1("running shoes", "ran shoe") == pytest.approx(0.5)  # run/ran differ; shoes -> shoe
    assert locomo_qa.token_f1("running shoes", "run shoe") == 1.0  # Porter stems
    assert locomo_qa.token_f1("a puppy named Biscuit", "Biscuit") == pytest.approx(2 * (1 / 3) / (1 + 1 / 3))
    assert locomo_qa.token_f1("", "Biscuit") == 0.0 and locomo_qa.token_f1("Lisbon", "Porto") == 0.0
    assert locomo_qa.token_f1("7 May 2023", "7 May, 2023") == 1.0
    gold = "Psychology, counseling certification"
    assert locomo_qa.locomo_f1(1, "counseling certification, psychology", gold) == 1.0  # each part's best match
    assert locomo_qa.locomo_f1(1, "psychology", gold) == pytest.approx(0.5)
    assert locomo_qa.multi_hop_f1("psychology and counseling", gold) == pytest.approx(
        (2 * (1 / 2) / (1 + 1 / 2) + 2 * (1 / 2) * (1 / 2) / 1) / 2)
    assert locomo_qa.locomo_f1(4, "counseling certification, psychology", gold) == 1.0  # not split: a bag of words
    assert locomo_qa.locomo_f1(3, "Likely no", "Likely no; she values support") == 1.0  # before the first ';'
    assert locomo_qa.locomo_f1(2, "2022", str(2022)) == 1.0
    assert locomo_qa.locomo_f1(5, "Not mentioned in the conversation", "") == 1.0
    assert locomo_qa.locomo_f1(5, "No information available.", "") == 1.0
    assert locomo_qa.locomo_f1(5, "running shoes", "") == 0.0


def test_porter_stems() -> None:
    known = {"caresses": "caress", "ponies": "poni", "ties": "tie", "dying": "die", "skies": "sky",
             "running": "run", "hopping": "hop", "happy": "happi", "agreed": "agre", "feed": "feed",
             "conditional": "condit", "generalization": "gener", "geology": "geolog", "hopeful": "hope",
             "relational": "relat", "controlling": "control", "filing": "file", "sized": "size", "is": "is",
             "news": "news", "falling": "fall"}
    assert {word: stem(word) for word in known} == known


def _questions(counts: dict[int, int], conversations: int = 2) -> list[dict[str, Any]]:
    return [{"sample_id": f"c{k}", "conversation": {},
             "qa": [{"question": f"q{k}-{c}-{i}", "answer": "a", "category": c}
                    for c, n in counts.items() for i in range(n)] + [{"question": "no gold", "category": 1}]}
            for k in range(conversations)]


def test_the_sample_is_stratified_and_reproducible() -> None:
    data = _questions({1: 20, 2: 20, 3: 20, 4: 20})
    picks = locomo_qa.choose(data, (1, 2, 3, 4), None, 10, seed=7)
    by_category = {c: sum(1 for p in picks if p.category == c) for c in (1, 2, 3, 4)}
    assert by_category == {1: 3, 2: 3, 3: 2, 4: 2}  # equal shares, the remainder to the lowest numbers
    assert picks == locomo_qa.choose(data, (1, 2, 3, 4), None, 10, seed=7)
    assert picks != locomo_qa.choose(data, (1, 2, 3, 4), None, 10, seed=8)
    order = [(int(p.conversation[1:]), p.index) for p in picks]
    assert order == sorted(order) and len(set(order)) == 10  # asked in file order, each once
    assert all(data[int(p.conversation[1:])]["qa"][p.index]["category"] == p.category for p in picks)
    assert locomo_qa.shares({1: 1, 2: 50, 3: 50, 4: 50}, 10) == {1: 1, 2: 3, 3: 3, 4: 3}  # one short: others grow
    assert locomo_qa.shares({1: 2, 2: 2}, 10) == {1: 2, 2: 2}
    few = locomo_qa.choose(_questions({1: 1, 2: 30}), (1, 2), None, 9, seed=0)
    assert sum(p.category == 1 for p in few) == 2 and len(few) == 9  # category 1 gives all it has (1 each)
    everything = locomo_qa.choose(data, (2,), 5, None, seed=0)
    assert len(everything) == 10 and {p.category for p in everything} == {2}  # no sample: the first 5 each
    assert "no gold" not in {data[0]["qa"][p.index]["question"] for p in locomo_qa.eligible(data[0], (1,))}


def test_report_intervals() -> None:
    constant = locomo_qa.bootstrap([0.5] * 20, seed=0)
    assert constant == {"n": 20, "mean": 0.5, "low": 0.5, "high": 0.5}
    values = [0.0] * 10 + [1.0] * 10
    spread = locomo_qa.bootstrap(values, seed=3)
    assert spread == locomo_qa.bootstrap(values, seed=3)  # seeded
    assert spread["low"] < 0.5 < spread["high"] and 0.25 < spread["low"] and spread["high"] < 0.75
    assert locomo_qa.bootstrap([], seed=0)["mean"] is None
    better = locomo_qa.paired([1.0] * 20, values, seed=0)
    assert better["mean"] == pytest.approx(0.5) and better["low"] > 0
    rows = [locomo_qa.Row("c", i, "q", 1 + i % 2, "gold", answers={"agent": locomo_qa.Answer("x", 10, 2, 0.1 * i),
                                                                   "none": locomo_qa.Answer("", error="boom")},
                          f1={"agent": float(i % 3 == 0), "none": 0.0},
                          grades={"agent": locomo_qa.Grade(i % 3 == 0), "none": locomo_qa.Grade(False)})
            for i in range(12)]
    conversation = locomo_qa.Conversation("c", 5, 5, 0, 0.0, 0, "", rows=rows)
    options = locomo_qa.Options(path="f.json", model="m", conditions=("agent", "none"), facts=False)
    report = locomo_qa.build_report(options, [conversation])
    agent = report["results"]["agent"]
    assert agent["f1"]["overall"]["mean"] == pytest.approx(4 / 12) and agent["f1"]["1"]["n"] == 6
    assert agent["judge"]["overall"]["correct"] == 4 and agent["judge"]["overall"]["n"] == 12
    assert agent["seconds_per_question"]["p50"] == pytest.approx(0.5)
    assert agent["seconds_per_question"]["mean"] == pytest.approx(0.55)
    assert agent["tokens_per_question"]["answer"] == 12 and report["results"]["none"]["failed_answers"] == 12
    difference = report["differences"]["agent-none"]["overall"]
    assert difference["mean"] == pytest.approx(4 / 12) and difference["low"] <= difference["mean"] <= difference["high"]
    json.dumps(report)  # every figure can be written


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
    report = _run([str(data_file), "--model", spec, "--conditions", "agent,search,none,gold,full"], tmp_path)
    assert report["questions"] == 4 and report["results"]["agent"]["failed_answers"] == 0
    assert report["memory"]["per_conversation"][0]["messages_after"] == TURNS
    for name in ("agent", "search", "none", "gold", "full"):
        overall = report["results"][name]["judge"]["overall"]
        assert overall["n"] + overall["ungraded"] == 4
        assert overall["n"] == 0 or overall["low"] <= overall["accuracy"] <= overall["high"]
