"""Pictures of the TUI (pytest-textual-snapshot): the main screen, a memory diff, a block's history, the 80x24
layout, and the summary marker (wrapped) opened with F4. A picture catches what functional asserts miss (a hidden status line, a panel that does not grow).

After a deliberate change of the look: `pytest tests/test_tui_snapshots.py --snapshot-update`, then look at the
new SVGs under tests/__snapshots__/ before committing them."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agentos.agent.agent import Agent
from agentos.agent.state import AgentSettings, PagerSettings
from agentos.providers import ScriptedProvider, Step
from agentos.tui.app import AgentApp
from agentos.tui.memory import BlockView
from agentos.tui.screens import BlockHistoryScreen

ADA = Step(tool_calls=[("core_memory_replace", {"label": "human", "old_content": "Nothing is known about the user yet.",
                                                "new_content": "Name: Ada\nLikes: green tea"})])
REPLY = "Nice to meet you, **Ada**! I've saved two things:\n\n- your name\n- that you like *green tea*"


@pytest.fixture(autouse=True)
def fixed_clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Local times shown as UTC, whatever the machine's zone; and the times in the prompt's metadata fixed, since the
    gauge shows the prompt's size in tokens."""
    with monkeypatch.context() as patched:
        patched.setattr("agentos.agent.prompts._format_hour", lambda now: "2026-05-01 09:00 UTC")
        patched.setattr("agentos.agent.prompts._format_time", lambda at: at and "2026-05-01 09:30 UTC")
        patched.setenv("TZ", "UTC")
        time.tzset()
        yield
    time.tzset()


class StillApp(AgentApp):
    """The app with no blinking cursor, so that a picture does not depend on when it is taken."""

    PROMPT_BLINKS = False


def app_after_a_memory_edit(name: str) -> StillApp:
    return StillApp(Agent.create(name, provider=ScriptedProvider([ADA, REPLY]),
                                 human="Nothing is known about the user yet."))


async def say(pilot: Any, text: str) -> None:
    """Send a message, wait for the turn, and settle the conversation at its end (so scrolling is not timing)."""
    app = pilot.app
    app.query_one("#prompt").value = text
    await pilot.press("enter")
    await app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.wait_for_scheduled_animations()
    app.conversation.scroll_end(animate=False, immediate=True)
    for view in app.memory_panel.query(BlockView):  # where the app scrolls once the edit is laid out
        if view.diff is not None:
            app.memory_panel.scroll_to_widget(view, animate=False, immediate=True)
    await pilot.pause()


def test_the_main_screen_on_reopening_an_agent(snap_compare: Any) -> None:
    agent = Agent.create("snapmain", provider=ScriptedProvider(["Hello! How can I help?", "Paris, in 2019."]),
                         human="Name: Ada")
    list(agent.turn("Hi there"))
    list(agent.turn("Where did we meet?"))
    agent.close()
    app = StillApp(Agent.load("snapmain", provider=ScriptedProvider([])))
    assert snap_compare(app, terminal_size=(120, 32))


def test_a_memory_diff(snap_compare: Any) -> None:
    async def run_before(pilot: Any) -> None:
        await say(pilot, "My name is Ada and I like green tea")

    assert snap_compare(app_after_a_memory_edit("snapdiff"), terminal_size=(120, 32), run_before=run_before)


def test_a_blocks_history(snap_compare: Any) -> None:
    async def run_before(pilot: Any) -> None:
        await say(pilot, "My name is Ada and I like green tea")
        app = pilot.app
        app.agent.set_block("human", "Name: Ada Lovelace\nLikes: green tea")
        start = datetime(2026, 5, 1, 9, 30, tzinfo=UTC)  # fixed times and ids: the picture must not change
        edits = [e.model_copy(update={"at": start + timedelta(minutes=i), "tool_call_id": "call_1" if e.tool_call_id
                                      else None}) for i, e in enumerate(app.agent.memory_edits())]
        await app.push_screen(BlockHistoryScreen("human", edits))
        await pilot.pause()

    assert snap_compare(app_after_a_memory_edit("snaphist"), terminal_size=(120, 32), run_before=run_before)


def test_the_narrow_layout(snap_compare: Any) -> None:
    async def run_before(pilot: Any) -> None:
        await say(pilot, "My name is Ada and I like green tea")

    assert snap_compare(app_after_a_memory_edit("snapnarrow"), terminal_size=(80, 24), run_before=run_before)


def test_f4_on_the_summary_marker_wrapped_and_opened(snap_compare: Any) -> None:
    provider = ScriptedProvider(lambda request: "ok", context_window=2000)
    agent = Agent.create("snapmarker", provider=provider, settings=AgentSettings(pager=PagerSettings()))
    agent.roles.use("summary", ScriptedProvider(lambda request: "S: eight numbered topics.", context_window=2000))
    for i in range(8):
        list(agent.turn(f"topic {i}: " + "words " * 50))
    agent.compact()
    agent.close()
    app = StillApp(Agent.load("snapmarker", provider=ScriptedProvider([])))

    async def run_before(pilot: Any) -> None:
        await pilot.pause()
        await pilot.press("f4", "enter")  # the marker, the only expandable line, chosen and opened
        await pilot.pause()
        await pilot.press("ctrl+home")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(120, 32), run_before=run_before)
