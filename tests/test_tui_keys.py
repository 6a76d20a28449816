"""The TUI without a mouse: PageUp and the rest scroll the conversation, F4 opens and closes tool calls and the
summary marker, F1 lists every key, and the summary marker is never cut."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from typing import Any

from textual.containers import VerticalScroll
from textual.geometry import Region
from textual.widget import Widget

from agentos.agent.agent import Agent
from agentos.agent.state import AgentSettings, PagerSettings
from agentos.messages import Message, ToolCall
from agentos.providers import ScriptedProvider
from agentos.tui.app import AgentApp
from agentos.tui.conversation import Conversation, SummaryMarker, ToolCallView
from agentos.tui.keys import HELP, ConversationKeys
from agentos.tui.memory import BlockView
from agentos.tui.screens import EditBlockScreen, TextScreen

SIZE = (120, 40)


def run(test: Callable[[AgentApp, Any], Awaitable[None]], agent: Agent, size: tuple[int, int] = SIZE) -> AgentApp:
    app = AgentApp(agent)

    async def main() -> None:
        async with app.run_test(size=size, notifications=True) as pilot:
            await pilot.pause()
            await test(app, pilot)

    asyncio.run(main())
    return app


def long_history(name: str, turns: int = 30) -> Agent:
    """An agent whose in-context history is much taller than the screen, with a tool call in the middle."""
    agent = Agent.create(name, provider=ScriptedProvider([]))
    for i in range(turns):
        agent.add_history([Message.user(f"question {i}"), Message.assistant(f"answer {i}")], in_context=2)
    with_a_tool_call(agent)
    for i in range(turns, turns + 10):
        agent.add_history([Message.user(f"question {i}"), Message.assistant(f"answer {i}")], in_context=2)
    return agent


def with_a_tool_call(agent: Agent) -> None:
    call = ToolCall(id="call_1", name="archival_search", arguments='{"query": "tea"}')
    agent.add_history([Message.user("find tea"), Message.assistant("", tool_calls=[call]),
                       Message.tool_result(call, "found: green tea"), Message.assistant("Green tea.")], in_context=4)


def compacted(name: str) -> Agent:
    """An agent whose older messages were summarized (the conversation opens under the summary marker)."""
    provider = ScriptedProvider(lambda request: "ok", context_window=2000)
    agent = Agent.create(name, provider=provider, settings=AgentSettings(pager=PagerSettings()))
    agent.roles.use("summary", ScriptedProvider(lambda request: "S: the older talk was about tea.",
                                                context_window=2000))
    for i in range(8):
        list(agent.turn(f"topic {i}: " + "words " * 50))
    agent.compact()
    assert agent.state.hidden_count > 0
    return agent


def shown_text(widget: Widget) -> str:
    """What the widget shows on screen, line by line."""
    width, height = widget.size
    return "\n".join(strip.text for strip in widget.render_lines(Region(0, 0, width, height)))


def test_pageup_pagedown_and_ctrl_home_end_scroll_the_conversation_while_typing_goes_on() -> None:
    agent = long_history("keysscroll")

    async def test(app: AgentApp, pilot: Any) -> None:
        conversation, prompt = app.conversation, app.query_one("#prompt")
        await pilot.press(*"draft")
        bottom = conversation.max_scroll_y
        assert bottom > 0 and conversation.scroll_y == bottom  # opened at the end
        await pilot.press("pageup")
        assert conversation.scroll_y < bottom
        await pilot.press("ctrl+home")
        assert conversation.scroll_y == 0
        await pilot.press("pagedown")
        assert 0 < conversation.scroll_y < bottom
        await pilot.press("ctrl+end")
        assert conversation.scroll_y == bottom
        assert app.focused is prompt and prompt.value == "draft"  # the input kept its focus and its text
        await pilot.press("home")  # in the one-line input, Home and End still move the cursor
        assert prompt.cursor_position == 0 and conversation.scroll_y == bottom
        await pilot.press("end")
        assert prompt.cursor_position == len("draft")

    run(test, agent)


def test_pageup_scrolls_the_conversation_from_the_memory_pane_too_but_not_under_a_dialog() -> None:
    agent = long_history("keysdialog")

    async def test(app: AgentApp, pilot: Any) -> None:
        conversation = app.conversation
        await pilot.press("tab")
        assert isinstance(app.focused, BlockView)
        await pilot.press("pageup")
        assert conversation.scroll_y < conversation.max_scroll_y and isinstance(app.focused, BlockView)
        await pilot.press("ctrl+end")
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, TextScreen)
        help_text = app.screen.query_one(VerticalScroll)
        await pilot.press("pagedown")
        assert help_text.scroll_y > 0  # the dialog has the keys (its text scrolls), not the conversation
        await pilot.press("pageup", "ctrl+home")
        assert conversation.scroll_y == conversation.max_scroll_y
        await pilot.press("escape")

    run(test, agent, size=(80, 24))


def test_f4_chooses_tool_calls_and_the_summary_marker_and_enter_opens_and_closes_them() -> None:
    agent = compacted("keysbrowse")
    with_a_tool_call(agent)

    async def test(app: AgentApp, pilot: Any) -> None:
        conversation = app.conversation
        marker, call = conversation.query_one(SummaryMarker), conversation.query_one(ToolCallView)
        assert marker.collapsed and call.collapsed
        await pilot.press(*"draft ", "f4")
        assert app.focused is conversation and conversation.chosen is call  # the newest expandable line
        await pilot.press("enter")
        await pilot.pause()
        assert not call.collapsed and "found: green tea" in shown_text(call.detail)
        assert app.focused is conversation  # opening it kept the focus on the lines
        await pilot.press("enter")
        assert call.collapsed
        await pilot.press("up")
        assert conversation.chosen is marker
        await pilot.press("space")
        await pilot.pause()
        assert not marker.collapsed and "S: the older talk was about tea." in shown_text(marker.query_one(".summary"))
        await pilot.press("end")
        assert conversation.chosen is call
        await pilot.press("escape")  # back to the input, where typing goes on after the draft
        await pilot.press(*"hi")
        assert app.focused is app.query_one("#prompt") and app.query_one("#prompt").value == "draft hi"
        assert conversation.chosen is None and not call.has_class("-chosen")
        await pilot.press("f4", "home", "f4")  # F4 again also goes back
        assert app.focused is app.query_one("#prompt") and marker.collapsed is False
        await pilot.press("tab")  # Tab still goes from the input to the memory pane, past the expandable lines
        assert isinstance(app.focused, BlockView)

    run(test, agent)


def test_f4_with_nothing_to_open_says_so_and_leaves_the_focus_in_the_input() -> None:
    agent = Agent.create("keysnothing", provider=ScriptedProvider([]))

    async def test(app: AgentApp, pilot: Any) -> None:
        await pilot.press("f4")
        await pilot.pause()
        assert app.focused is app.query_one("#prompt")
        assert any("No tool call or summary" in n.message for n in app._notifications)

    run(test, agent)


def test_the_summary_marker_wraps_instead_of_being_cut_at_120_columns() -> None:
    agent = compacted("keysmarker")
    hidden = agent.state.hidden_count

    async def test(app: AgentApp, pilot: Any) -> None:
        title = app.conversation.query_one(SummaryMarker)._title
        shown = " ".join(shown_text(title).split())
        assert shown.endswith(f"{hidden:,} older messages were summarized (they stay in recall memory) — expand for "
                              "the summary")
        assert title.size.height >= 2 and title.region.right <= app.conversation.region.right

    run(test, agent)


KEY_NAMES = {"pageup": "PageUp", "pagedown": "PageDown", "escape": "Escape", "enter": "Enter", "space": "Space",
             "up": "Up", "down": "Down", "home": "Home", "end": "End", "tab": "Tab"}


def key_name(key: str) -> str:
    """A binding's key as the help writes it: ctrl+home -> Ctrl-Home, ctrl+s -> Ctrl-S, f4 -> F4, h -> h."""
    parts = key.split("+")
    if len(parts) == 1 and len(key) == 1:
        return key
    return "-".join(KEY_NAMES.get(part, part.capitalize()) for part in parts)


def test_f1_lists_every_key_the_app_binds() -> None:
    agent = Agent.create("keyshelp", provider=ScriptedProvider([]))
    bound = [b for cls in (AgentApp, ConversationKeys, Conversation, BlockView, EditBlockScreen)
             for b in cls.BINDINGS if not isinstance(b, tuple)]
    keys = {key_name(k.strip()) for b in bound for k in b.key.split(",")}
    assert {"PageUp", "PageDown", "Ctrl-Home", "Ctrl-End", "F4", "h", "e", "Ctrl-S"} <= keys

    async def test(app: AgentApp, pilot: Any) -> None:
        await pilot.press("f1")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, TextScreen) and str(screen.text) == HELP
        listed = str(screen.text).split("Keys:")[1]
        missing = [k for k in sorted(keys) if not re.search(rf"(?<![\w-]){re.escape(k)}(?![\w-])", listed)]
        assert missing == []

    run(test, agent)

