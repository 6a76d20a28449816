"""`agentos demo` in a real terminal (tmux): the TUI starts, renders, takes a turn of the guided tour, and Ctrl-C
leaves it cleanly with the agent saved; the terminal it runs in can never open the user's own data home."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
WAIT_SECONDS = 60.0


class Terminal:
    """One tmux session on a private server (its own socket), whose command sees exactly the environment given."""

    def __init__(self, command: str, env: dict[str, str], width: int = 110, height: int = 32) -> None:
        self.socket = f"agentos-test-{uuid.uuid4().hex[:8]}"
        settings = [arg for name, value in env.items() for arg in ("-e", f"{name}={value}")]
        self.tmux("new-session", "-d", "-s", "main", "-x", str(width), "-y", str(height), *settings, command,
                  check=True)

    def tmux(self, *args: str, check: bool = False) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True,
                              check=check).stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "main")

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "main", *keys)

    def close(self) -> None:
        self.tmux("kill-server")


def wait_for(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def decoy_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A tmux server already running on the default socket, whose environment points at a decoy data home.

    A session opened on that server would take the server's environment, not the test's; the decoy must stay
    untouched. TMUX_TMPDIR keeps this server (and any mistake) away from the user's own tmux."""
    monkeypatch.setenv("TMUX_TMPDIR", str(tmp_path / "tmux"))
    (tmp_path / "tmux").mkdir()
    decoy = tmp_path / "decoy-home"
    decoy.mkdir()
    env = {"TMUX_TMPDIR": str(tmp_path / "tmux"), "AGENTOS_HOME": str(decoy), "PATH": "/usr/bin:/bin"}
    subprocess.run(["tmux", "new-session", "-d", "-s", "decoy", "sleep 600"], env=env, check=True)
    try:
        yield decoy
    finally:
        subprocess.run(["tmux", "kill-server"], env=env, check=False, capture_output=True)


def test_the_demo_runs_in_a_real_terminal(agentos_home: Path, tmp_path: Path, decoy_home: Path) -> None:
    done = tmp_path / "exit-code"
    terminal = Terminal(f"{sys.executable} -m agentos.cli demo; echo $? > {done}", {"AGENTOS_HOME": str(agentos_home)})
    try:
        wait_for(lambda: "core memory" in terminal.screen() and "Guided tour" in terminal.screen(), "the TUI to render")
        first = terminal.screen()
        assert "Hi! My name is Ada." in first  # the tour's first message, offered in the input
        assert "recall 0" in first and "tokens" in first  # the status bar and its gauge
        terminal.keys("Enter")
        wait_for(lambda: "Name: Ada" in terminal.screen() and "demo>" in terminal.screen(), "the first turn")
        terminal.keys("C-c")
        wait_for(done.exists, "the app to exit")
        wait_for(lambda: done.read_text().strip() != "", "the exit code")
        assert done.read_text().strip() == "0"
    finally:
        terminal.close()

    from agentos.agent.agent import Agent

    agent = Agent.load("demo", read_only=True, with_model=False)
    assert "Name: Ada" in agent.block("human").value and agent.state.message_count >= 4
    assert list(decoy_home.iterdir()) == []  # the tmux server already running never saw the demo
