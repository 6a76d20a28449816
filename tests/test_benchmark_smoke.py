"""The long-conversation benchmark still runs (on a tiny LoCoMo-shaped file, not the real data)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

BENCHMARK = Path(__file__).resolve().parent.parent / "benchmarks" / "long_conversation.py"


def test_benchmark_replays_and_reports(tmp_path: Path, capsys: Any) -> None:
    lines = [{"speaker": "Ann" if i % 2 else "Bob", "dia_id": f"D1:{i}", "text": f"utterance {i} " + "chat " * 40}
             for i in range(70)]
    data = [{"sample_id": "tiny", "conversation": {"speaker_a": "Ann", "speaker_b": "Bob",
                                                   "session_1_date_time": "1 May 2023", "session_1": lines}}]
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(data))
    spec = importlib.util.spec_from_file_location("long_conversation", BENCHMARK)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    assert module.main([str(path), "--sample", "0", "--window", "2500", "--csv", str(tmp_path / "t.csv")]) == 0
    out = capsys.readouterr().out
    assert "LoCoMo tiny: 70 turns" in out and "turns over the window: 0" in out
    assert "failed turns:             0" in out
    compactions = int(out.split("compactions:")[1].split()[0])
    assert compactions >= 1
    assert len((tmp_path / "t.csv").read_text().splitlines()) == 71
