"""`agentos demo` in a real terminal (tmux): the TUI starts, renders, takes a turn of the guided tour, and Ctrl-C
leaves it cleanly with the agent saved."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
WAIT_SECONDS = 60.0


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=False).stdout


def wait_for(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_the_demo_runs_in_a_real_terminal(agentos_home: Path, tmp_path: Path) -> None:
    session = f"agentos-test-{uuid.uuid4().hex[:8]}"
    done = tmp_path / "exit-code"
    command = f"{sys.executable} -m agentos.cli demo; echo $? > {done}"
    env = {**os.environ, "AGENTOS_HOME": str(agentos_home)}
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "110", "-y", "32", command], env=env,
                   check=True)
    screen = lambda: tmux("capture-pane", "-p", "-t", session)  # noqa: E731
    try:
        wait_for(lambda: "core memory" in screen() and "Guided tour" in screen(), "the TUI to render")
        first = screen()
        assert "Hi! My name is Ada." in first  # the tour's first message, offered in the input
        assert "recall 0" in first and "tokens" in first  # the status bar and its gauge
        tmux("send-keys", "-t", session, "Enter")
        wait_for(lambda: "Name: Ada" in screen() and "demo>" in screen(), "the first turn")
        tmux("send-keys", "-t", session, "C-c")
        wait_for(done.exists, "the app to exit")
        wait_for(lambda: done.read_text().strip() != "", "the exit code")
        assert done.read_text().strip() == "0"
    finally:
        tmux("kill-session", "-t", session)

    from agentos.agent.agent import Agent

    agent = Agent.load("demo", read_only=True, with_model=False)
    assert "Name: Ada" in agent.block("human").value and agent.state.message_count >= 4
