"""SIGKILL at any point of a turn: after each restart the agent loads, nothing reported durable is lost,
nothing is stored twice, every in-context message exists, and each block matches its newest logged edit."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

HARNESS = Path(__file__).resolve().parent.parent / "benchmarks" / "kill_recovery.py"


def test_twenty_sigkills_lose_nothing_durable(tmp_path: Path) -> None:
    """Twenty kills keep the suite's time in bounds; `benchmarks/kill_recovery.py --kills 300` runs many more."""
    spec = importlib.util.spec_from_file_location("kill_recovery", HARNESS)
    harness = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules["kill_recovery"] = harness  # its dataclasses look their module up
    spec.loader.exec_module(harness)  # type: ignore[union-attr]
    chains = harness.run(20, chains=2, seed=7, root=tmp_path)
    assert [p for c in chains for p in c.problems] == []
    assert sum(c.kills for c in chains) == 20
    assert all(c.steps > 0 and c.durable for c in chains)  # the workers did get work done between kills
