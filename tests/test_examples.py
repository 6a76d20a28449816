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


def test_one_agent_reads_and_adds_to_another_agents_memory_over_mcp(tmp_path: Path) -> None:
    env = {**os.environ, "AGENTOS_HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "examples/shared_memory_over_mcp.py"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith('[bob__read_memory_blocks] [ { "label": "human", "value": "The user is Ada. She keeps')
    assert lines[1].startswith('[bob__core_memory_append] Appended to block "human"')
    assert lines[-2] == "bob's human block now: \"The user is Ada. She keeps bees.\\nAlice says: Ada's hives are in Kent.\""
    assert lines[-1] == "bob's last edit was made by: mcp (mcp:agentos agent alice-reader)"
