"""The TUI paints its frame and takes typing at once, loading the agent behind it: keys typed before the agent (or
the first frame) is there reach the input and are kept."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from agentos.agent.agent import Agent
from agentos.errors import AgentNotFoundError
from agentos.providers import ScriptedProvider
from agentos.tui.app import AgentApp
from agentos.tui.memory import BlockView
from agentos.tui.opening import OPENING, SENT_WHEN_OPEN, TIMINGS_VARIABLE

SIZE = (120, 40)


class SlowLoad:
    """Loads an agent only once `release` is set (storage under load)."""

    def __init__(self, name: str, replies: list[str]) -> None:
        self.name, self.replies = name, replies
        self.started, self.release = threading.Event(), threading.Event()

    def __call__(self) -> Agent:
        self.started.set()
        self.release.wait(10)
        return Agent.load(self.name, provider=ScriptedProvider(self.replies))


def run(test: Callable[[AgentApp, Any], Awaitable[None]], app: AgentApp) -> AgentApp:
    async def main() -> None:
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await test(app, pilot)

    asyncio.run(main())
    return app


async def opened(app: AgentApp, pilot: Any) -> None:
    """Wait until the agent is shown, and the turn of a message sent meanwhile has been shown too."""
    for _ in range(200):
        await app.workers.wait_for_complete()
        await pilot.pause()
        if not app.opening and not app.busy:
            break
    await app.workers.wait_for_complete()
    await pilot.pause()


def test_the_frame_takes_typing_while_the_agent_loads_and_a_message_sent_meanwhile_goes_once_it_is_open() -> None:
    Agent.create("slowsam", provider=ScriptedProvider([]), human="Name: Ada").close()
    load = SlowLoad("slowsam", ["Hello Ada."])

    async def test(app: AgentApp, pilot: Any) -> None:
        await asyncio.to_thread(load.started.wait, 10)
        prompt = app.query_one("#prompt")
        assert app.opening and app.focused is prompt and app.conversation.texts() == [OPENING]
        await pilot.press(*"hello", "enter")  # typed before there is an agent
        assert prompt.value == "hello" and app.conversation.texts()[-1] == SENT_WHEN_OPEN
        await pilot.press("f1")  # the keys work meanwhile
        await pilot.pause()
        await pilot.press("escape")
        load.release.set()
        await opened(app, pilot)
        assert not app.opening and app.agent.name == "slowsam"
        assert app.conversation.texts()[-2:] == ["you> hello", "slowsam> Hello Ada."]
        assert app.query_one("#block-human", BlockView).text == "Name: Ada"
        assert "recall 2" in app.status_line.text and prompt.value == ""

    run(test, AgentApp(load))
    assert Agent.load("slowsam", provider=ScriptedProvider([])).state.message_count == 2  # saved, and let go of


def test_text_typed_while_the_agent_loads_is_not_replaced_by_the_tours_suggestion() -> None:
    Agent.create("slowtour", provider=ScriptedProvider([])).close()
    load = SlowLoad("slowtour", [])

    async def test(app: AgentApp, pilot: Any) -> None:
        await asyncio.to_thread(load.started.wait, 10)
        await pilot.press(*"my own words")
        load.release.set()
        await opened(app, pilot)
        assert app.query_one("#prompt").value == "my own words"
        assert any(t.startswith("Guided tour:") for t in app.conversation.texts())

    run(test, AgentApp(load, tour=["Hi! My name is Ada."]))


def test_an_agent_that_cannot_be_opened_ends_the_app_with_its_error() -> None:
    def load() -> Agent:
        return Agent.load("no-such-agent")

    codes: list[int | None] = []

    async def test(app: AgentApp, pilot: Any) -> None:
        await app.workers.wait_for_complete()
        await pilot.pause()
        codes.append(app.return_value)

    app = run(test, AgentApp(load))
    assert isinstance(app.open_error, AgentNotFoundError) and codes == [1]  # run_tui raises it, for the CLI to show


def test_quitting_while_the_agent_loads_closes_it_once_loaded() -> None:
    Agent.create("slowquit", provider=ScriptedProvider([])).close()
    load = SlowLoad("slowquit", [])

    async def test(app: AgentApp, pilot: Any) -> None:
        await asyncio.to_thread(load.started.wait, 10)
        threading.Timer(0.3, load.release.set).start()
        await pilot.press("ctrl+c")
        await pilot.pause()

    app = run(test, AgentApp(load))
    assert app.closed and app.close_error is None and app.return_value == 0
    Agent.load("slowquit", provider=ScriptedProvider([])).close()  # its lease was let go of


def test_the_timings_hook_records_the_first_paint_and_the_agent_shown_then_quits(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    Agent.create("timed", provider=ScriptedProvider([])).close()
    timings = tmp_path / "timings.jsonl"
    monkeypatch.setenv(TIMINGS_VARIABLE, str(timings))
    before = time.time()

    async def test(app: AgentApp, pilot: Any) -> None:
        for _ in range(100):
            await pilot.pause(0.05)
            if not app.is_running:
                break

    app = run(test, AgentApp(lambda: Agent.load("timed", provider=ScriptedProvider([]))))
    lines = [json.loads(line) for line in timings.read_text().splitlines()]
    assert [line["event"] for line in lines] == ["painted", "shown"]
    assert before <= lines[0]["at"] <= lines[1]["at"] <= time.time()
    assert app.closed and app.return_value == 0


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_keys_typed_before_the_first_frame_reach_the_input_in_a_real_terminal(tmp_path: Path) -> None:
    """`agentos tui` in tmux, typed at before Python has even started: the keys end up in the message input (they
    went to the first block of the memory pane, or nowhere, before)."""
    home = tmp_path / "home"
    sockets = tempfile.mkdtemp(prefix="tmux-")  # short: a socket's path has a length limit
    env = {"AGENTOS_HOME": str(home), "TMUX_TMPDIR": sockets, "PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, "-c", "from agentos.agent.agent import Agent; "
                    "Agent.create('sam', model='scripted/demo').close()"], env={**env, "LANCEDB_LOG": "error"},
                   check=True)
    socket = f"agentos-test-{uuid.uuid4().hex[:8]}"
    settings = [arg for name, value in env.items() for arg in ("-e", f"{name}={value}")]
    tmux = ["tmux", "-L", socket]
    subprocess.run([*tmux, "new-session", "-d", "-s", "main", "-x", "110", "-y", "32", *settings,
                    f"{sys.executable} -m agentos.cli tui sam"], env=env, check=True)
    try:
        subprocess.run([*tmux, "send-keys", "-t", "main", "typed early"], env=env, check=True)
        deadline = time.monotonic() + 60
        screen = ""
        while time.monotonic() < deadline:
            screen = subprocess.run([*tmux, "capture-pane", "-p", "-t", "main"], env=env, capture_output=True,
                                    text=True).stdout
            if "core memory" in screen and "recall 0" in screen:
                break
            time.sleep(0.2)
        time.sleep(0.5)
        screen = subprocess.run([*tmux, "capture-pane", "-p", "-t", "main"], env=env, capture_output=True,
                                text=True).stdout
        prompt = [line for line in screen.splitlines() if line.startswith("▊") and "▔" not in line and "▁" not in line]
        assert any("typed early" in line for line in prompt), screen
        assert "history of [" not in screen and "edit [" not in screen  # no block took them as its keys
    finally:
        subprocess.run([*tmux, "kill-server"], env=env, check=False, capture_output=True)
        shutil.rmtree(sockets, ignore_errors=True)
