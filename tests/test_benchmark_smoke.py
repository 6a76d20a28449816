"""The benchmarks still run: the long-conversation one on a tiny LoCoMo-shaped file (not the real data), and the
start-up one on two cheap commands."""

from __future__ import annotations

import importlib.util
import json
import sys
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


def test_cli_startup_benchmark_times_commands_beside_another_tree(capsys: Any, monkeypatch: Any) -> None:
    path = Path(__file__).resolve().parent.parent / "benchmarks" / "cli_startup.py"
    spec = importlib.util.spec_from_file_location("cli_startup", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    monkeypatch.setitem(sys.modules, "cli_startup", module)  # its dataclasses look their module up
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    tree = str(path.parent.parent)
    assert module.main(["--runs", "1", "--commands", "version,help", "--before", tree]) == 0
    out = capsys.readouterr().out
    assert "agentos start-up, ms: median (min-max) over 1 runs as whole processes" in out
    assert "agentos --version" in out and "agentos --help" in out and "after vs before" in out


def test_serve_load_benchmark_drives_a_real_server_and_reads_every_agent_back(capsys: Any,
                                                                             allow_real_providers: None) -> None:
    """A tiny run of the load test: the mock model (on loopback) and `agentos serve` in processes of their own, two
    users; the agents' model is an OpenAI-compatible server, hence the opt-in."""
    path = Path(__file__).resolve().parent.parent / "benchmarks" / "serve_load.py"
    spec = importlib.util.spec_from_file_location("serve_load", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules["serve_load"] = module  # its dataclasses look their module up
    try:
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        code = module.main(["--clients", "3", "--turns", "2", "--contention", "3", "--contention-turns", "2",
                            "--paced-seconds", "1"])
    finally:
        sys.modules.pop("serve_load", None)
    out = capsys.readouterr().out
    assert code == 0, out
    assert "server CPU per turn: LanceDB's threads" in out and "stored twice 0, missing 0" in out
    assert "lost 0, duplicated 0, stored though not acknowledged 0, replies that differ 0, rows of another agent 0, " \
           "read across users 0 of 4 tries" in out
