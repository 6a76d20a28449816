"""The examples run as documented, with no API key."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_remember_my_name_example_runs_again_in_the_same_home(tmp_path: Path) -> None:
    env = {**os.environ, "AGENTOS_HOME": str(tmp_path)}
    for _ in range(2):
        done = subprocess.run([sys.executable, "examples/remember_my_name.py"], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        assert "[memory] human: 'Nothing is known about the user yet.' -> 'Name: Ada Lovelace'" in lines
        assert "resumed with 4 messages in context; human block = 'Name: Ada Lovelace'" in lines
        assert lines[-1] == "agent: Of course: you are Ada Lovelace."
