"""The Textual TUI driven by a pilot, with the scripted provider and a real LanceDB store."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from agentos.agent.agent import Agent
from agentos.agent.context import repair_context
from agentos.agent.state import AgentSettings, PagerSettings
from agentos.errors import ServerError
from agentos.events import TextDelta
from agentos.providers import ModelRequest, ScriptedProvider, Step
from agentos.tui.app import AgentApp
from agentos.tui.widgets import BlockView, Reply

SIZE = (120, 40)
ADA = Step(tool_calls=[("core_memory_append", {"label": "human", "content": "Name: Ada"})])


def run(test: Callable[[AgentApp, Any], Awaitable[None]], agent: Agent) -> AgentApp:
    """Run `test(app, pilot)` inside a headless app."""
    app = AgentApp(agent)

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await test(app, pilot)

    asyncio.run(main())
    return app


async def say(app: AgentApp, pilot: Any, text: str) -> None:
    """Type a message, submit it, and wait until its turn has been shown."""
    app.query_one("#prompt").value = text
    await pilot.press("enter")
    await app.workers.wait_for_complete()
    await pilot.pause()


def test_turn_streams_reply_and_memory_edit_updates_panel() -> None:
    provider = ScriptedProvider([ADA, "Nice to meet you, Ada!"], chunk_size=3)
    agent = Agent.create("tuiada", provider=provider, human="")

    async def test(app: AgentApp, pilot: Any) -> None:
        before = app.query_one("#block-human", BlockView).text
        assert "Ada" not in before
        await say(app, pilot, "my name is Ada")
        texts = app.conversation.texts()
        assert "you> my name is Ada" in texts
        assert any(t.startswith("→ core_memory_append(") for t in texts)
        assert any(t.startswith("✎ memory [human]") for t in texts)
        replies = list(app.conversation.query(Reply))
        assert [r.text for r in replies] == ["tuiada> Nice to meet you, Ada!"]
        view = app.query_one("#block-human", BlockView)
        assert view.text.startswith("[human] 9/") and "Name: Ada" in view.text
        assert view.has_class("changed")
        assert "messages" in app.status_line.text and "context" in app.status_line.text
        assert not app.busy

    run(test, agent)


def test_failed_turn_shows_one_error_line_and_next_turn_works() -> None:
    provider = ScriptedProvider([ServerError("down"), "back again"])
    agent = Agent.create("tuifail", provider=provider)

    async def test(app: AgentApp, pilot: Any) -> None:
        await say(app, pilot, "hello")
        errors = [t for t in app.conversation.texts() if t.startswith("error:")]
        assert errors == ["error: down (ServerError)"]
        await say(app, pilot, "hello again")
        assert app.conversation.texts()[-1] == "tuifail> back again"

    run(test, agent)


def test_a_cut_reply_is_flagged_and_a_deleted_agent_ends_the_session() -> None:
    provider = ScriptedProvider([Step("Once upon a", stop_reason="max_tokens"), "never shown"])
    agent = Agent.create("tuicut", provider=provider)

    async def test(app: AgentApp, pilot: Any) -> None:
        await say(app, pilot, "tell me a story")
        assert "! the reply was cut off: the model reached its output limit (max_tokens)" in app.conversation.texts()
        agent.store.delete_agent(agent.id, "tuicut", None)  # as `agentos delete --force` elsewhere
        await say(app, pilot, "still there?")
        assert any("was deleted" in t for t in app.conversation.texts())
        prompt = app.query_one("#prompt")
        assert prompt.disabled and app.ended

    run(test, agent)


def test_escape_cancels_a_slow_turn_and_the_agent_reloads_consistently() -> None:
    entered, release = threading.Event(), threading.Event()
    calls = [0]

    def script(request: ModelRequest) -> Any:
        calls[0] += 1
        if calls[0] == 1:
            return ADA
        entered.set()
        release.wait(10)  # the model is slow to answer
        return Step(text="a very long answer " * 50)

    agent = Agent.create("tuicancel", provider=ScriptedProvider(script, chunk_size=2), human="")

    async def test(app: AgentApp, pilot: Any) -> None:
        app.query_one("#prompt").value = "my name is Ada"
        await pilot.press("enter")
        await asyncio.to_thread(entered.wait, 10)  # the second model call is running
        await pilot.press("escape")
        assert app.status_line.text.endswith("cancelling…")
        release.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        texts = app.conversation.texts()
        assert texts[-1] == "(cancelled)"
        reply = list(app.conversation.query(Reply))
        assert len(reply) <= 1 and len(reply[0].text if reply else "") < 40  # stopped after one chunk
        assert not app.busy

    run(test, agent)
    reloaded = Agent.load("tuicancel", provider=ScriptedProvider(["ok"]))
    assert repair_context(list(reloaded.context)) == list(reloaded.context)  # every tool call has its result
    calls_ = [c.id for m in reloaded.context for c in m.tool_calls]
    results = [m.tool_call_id for m in reloaded.context if m.role == "tool"]
    assert calls_ and calls_ == results
    assert "Name: Ada" in reloaded.block("human").value
    assert reloaded.context[-1].role in ("tool", "assistant", "user")
    assert [e.type for e in reloaded.turn("still there?")][-1] == "turn_finished"


def test_summarize_shows_the_eviction() -> None:
    provider = ScriptedProvider(lambda request: "ok", context_window=2000)
    settings = AgentSettings(pager=PagerSettings())
    agent = Agent.create("tuisum", provider=provider, settings=settings)
    agent.pager.summarizer = ScriptedProvider(lambda request: "S: numbered topics.", context_window=2000)
    for i in range(8):
        list(agent.turn(f"topic {i}: " + "words " * 50))

    async def test(app: AgentApp, pilot: Any) -> None:
        await say(app, pilot, "/summarize")
        assert any("old messages moved out of context, summarized" in t for t in app.conversation.texts())
        await say(app, pilot, "/help")
        assert app.conversation.texts()[-1].startswith("Commands:")
        await say(app, pilot, "/memory")
        assert app.focused is app.memory_panel

    run(test, agent)
    assert len(agent.context) == 3


def test_exit_command_closes_the_agent() -> None:
    agent = Agent.create("tuiexit", provider=ScriptedProvider(["hi"]))

    async def test(app: AgentApp, pilot: Any) -> None:
        await say(app, pilot, "hello")
        await say(app, pilot, "/exit")

    app = run(test, agent)
    assert app.closed and app.return_code == 0
    assert Agent.load("tuiexit", provider=ScriptedProvider([])).state.message_count == 2


def test_an_exception_from_the_turn_is_one_error_line() -> None:
    agent = Agent.create("tuiboom", provider=ScriptedProvider(["fine"]))

    def broken(text: str) -> Any:
        yield TextDelta(text="partial")
        raise RuntimeError("storage exploded")

    async def test(app: AgentApp, pilot: Any) -> None:
        agent.turn = broken  # type: ignore[method-assign]
        await say(app, pilot, "hello")
        assert app.conversation.texts()[-2:] == ["tuiboom> partial", "error: RuntimeError: storage exploded"]
        assert not app.busy and app.is_running

    run(test, agent)


def test_layout_keeps_status_line_and_input_clear_of_the_footer() -> None:
    agent = Agent.create("tuilayout", provider=ScriptedProvider([]))

    async def test(app: AgentApp, pilot: Any) -> None:
        await pilot.pause()
        screen = app.screen.region
        status, prompt = app.status_line.region, app.query_one("#prompt").region
        footer, memory = app.query_one("Footer").region, app.memory_panel.region
        for region in (status, prompt, footer, memory):
            assert region.area > 0 and screen.contains_region(region)
        assert not status.overlaps(footer) and not prompt.overlaps(footer) and not status.overlaps(prompt)
        assert status.bottom <= prompt.y and prompt.bottom <= footer.y
        assert not memory.overlaps(app.conversation.region)
        assert app.status_line.text.startswith("scripted/script · context ")

    run(test, agent)
