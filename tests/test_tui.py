"""The Textual TUI driven by a pilot, with the scripted provider (or the real OpenAI SDK over a mock transport) and a
real LanceDB store."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from mock_api import MockAPI, oa_error, oa_text_reply, sse_response

from agentos.agent.agent import Agent
from agentos.agent.context import repair_context
from agentos.agent.state import AgentSettings, PagerSettings
from agentos.errors import ServerError
from agentos.events import TextDelta
from agentos.messages import Message
from agentos.providers import ModelRequest, ScriptedProvider, Step
from agentos.providers.base import ProviderEvent, StreamText
from agentos.providers.openai_provider import OpenAIProvider
from agentos.providers.retry import RetryPolicy
from agentos.tui.app import AgentApp
from agentos.tui.conversation import Reply, ToolCallView
from agentos.tui.diff import ADDED_STYLE, REMOVED_STYLE
from agentos.tui.memory import BlockView
from agentos.tui.screens import BlockHistoryScreen, EditBlockScreen, PickerScreen, SearchScreen, TextScreen

SIZE = (120, 40)
ADA = Step(tool_calls=[("core_memory_append", {"label": "human", "content": "Name: Ada"})])


def run(test: Callable[[AgentApp, Any], Awaitable[None]], agent: Agent, size: tuple[int, int] = SIZE,
        **options: Any) -> AgentApp:
    """Run `test(app, pilot)` inside a headless app."""
    app = AgentApp(agent, **options)

    async def main() -> None:
        async with app.run_test(size=size, notifications=True) as pilot:
            await test(app, pilot)

    asyncio.run(main())
    return app


async def say(app: AgentApp, pilot: Any, text: str) -> None:
    """Type a message, submit it, and wait until its turn has been shown."""
    app.query_one("#prompt").value = text
    await pilot.press("enter")
    await app.workers.wait_for_complete()
    await pilot.pause()


def styles_of(view: BlockView) -> dict[str, str]:
    """The text of each styled span of a block's shown value: {style: text}."""
    text = view.shown
    return {str(span.style): text.plain[span.start:span.end] for span in text.spans}


def test_a_turn_streams_a_markdown_reply_and_a_tool_call_expands_to_its_arguments_and_result() -> None:
    provider = ScriptedProvider([ADA, "Nice to meet you, **Ada**!"], chunk_size=3)
    agent = Agent.create("tuiada", provider=provider, human="")

    async def test(app: AgentApp, pilot: Any) -> None:
        await say(app, pilot, "my name is Ada")
        texts = app.conversation.texts()
        assert "you> my name is Ada" in texts
        assert any(t.startswith("✓ core_memory_append(") for t in texts)
        assert any(t.startswith("✎ memory [human] +9/−0 chars by the model") for t in texts)
        replies = list(app.conversation.query(Reply))
        assert [r.text for r in replies] == ["tuiada> Nice to meet you, **Ada**!"]
        assert "**" not in str(replies[0].query_one("MarkdownParagraph").render())  # shown as Markdown: bold, not stars
        call = app.conversation.query_one(ToolCallView)
        assert call.collapsed
        await pilot.click(call._title)
        await pilot.pause()
        assert not call.collapsed
        detail = str(call.detail.render())
        assert '"label": "human"' in detail and "result" in detail
        assert "recall 4" in app.status_line.text and "archival 0" in app.status_line.text
        assert not app.busy and app.focused is app.query_one("#prompt")

    run(test, agent)


def test_a_memory_edit_shows_its_diff_until_the_next_turn() -> None:
    replace = Step(tool_calls=[("core_memory_replace", {"label": "human", "old_content": "Likes tea",
                                                        "new_content": "Likes coffee"})])
    agent = Agent.create("tuidiff", provider=ScriptedProvider([replace, "Noted.", "Hello."]), human="Likes tea")

    async def test(app: AgentApp, pilot: Any) -> None:
        await say(app, pilot, "I switched to coffee")
        view = app.query_one("#block-human", BlockView)
        assert view.diff == ("Likes tea", "Likes coffee", "the model") and view.has_class("changed")
        spans = styles_of(view)
        assert spans[REMOVED_STYLE] == "tea" and spans[ADDED_STYLE] == "coffee"
        await pilot.pause(1.6)  # the diff does not fade on a timer (the old highlight went after 1.5 s)
        assert view.diff is not None
        await say(app, pilot, "hello")
        assert view.diff is None and not view.has_class("changed") and view.text == "Likes coffee"

    run(test, agent)


def test_a_blocks_history_lists_its_edits_as_diffs_and_escape_returns_focus_to_the_block() -> None:
    steps = [ADA, "ok", Step(tool_calls=[("core_memory_append", {"label": "human", "content": "Likes: tea"})]), "ok"]
    agent = Agent.create("tuihist", provider=ScriptedProvider(steps), human="")

    async def test(app: AgentApp, pilot: Any) -> None:
        await say(app, pilot, "my name is Ada")
        await say(app, pilot, "I like tea")
        block = app.query_one("#block-human", BlockView)
        block.focus()
        await pilot.press("h")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, BlockHistoryScreen)
        assert [e.new_value for e in screen.edits] == ["Name: Ada\nLikes: tea", "Name: Ada"]  # newest first
        heads = [str(w.render()) for w in screen.query(".edit-head")]
        assert len(heads) == 2 and all("by the model" in h for h in heads)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, BlockHistoryScreen) and app.focused is block
        await pilot.press("e")  # the block's key, not a letter typed into the message
        await pilot.pause()
        assert isinstance(app.screen, EditBlockScreen) and app.screen.label == "human"
        assert app.query_one("#prompt").value == ""
        await pilot.press("escape")
        await pilot.pause()
        assert app.focused is block

    run(test, agent)


def test_a_hand_edit_is_saved_and_logged_as_the_users() -> None:
    agent = Agent.create("tuihand", provider=ScriptedProvider([]), human="Name: Ada")

    async def test(app: AgentApp, pilot: Any) -> None:
        app.action_edit_block("human")
        await pilot.pause()
        editor = app.screen.query_one("TextArea")
        assert isinstance(app.screen, EditBlockScreen) and editor.text == "Name: Ada"
        editor.text = "Name: Ada Lovelace"
        await pilot.press("ctrl+s")
        await pilot.pause()
        view = app.query_one("#block-human", BlockView)
        assert view.diff == ("Name: Ada", "Name: Ada Lovelace", "you (by hand)")
        assert app.conversation.texts()[-1] == "✎ memory [human] +9/−0 chars by you (by hand)"
        assert app.focused is app.query_one("#prompt")

    run(test, agent)
    reloaded = Agent.load("tuihand", provider=ScriptedProvider([]), read_only=True)
    assert reloaded.block("human").value == "Name: Ada Lovelace"
    assert reloaded.memory_edits()[-1].by == "user"


def test_a_hand_edit_over_the_limit_is_refused_with_a_notice_and_nothing_changes() -> None:
    agent = Agent.create("tuilimit", provider=ScriptedProvider([]), human="Name: Ada")
    limit = agent.block("human").limit

    async def test(app: AgentApp, pilot: Any) -> None:
        app.action_edit_block("human")
        await pilot.pause()
        app.screen.query_one("TextArea").text = "x" * (limit + 1)
        await pilot.press("ctrl+s")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, EditBlockScreen)  # still open, with what was typed, and why it was refused
        assert screen.query_one("TextArea").text == "x" * (limit + 1)
        assert "not saved" in str(screen.query_one("#edit-error").render())
        assert app.query_one("#block-human", BlockView).text == "Name: Ada" and app.is_running
        await pilot.press("escape")
        await pilot.pause()
        assert app.focused is app.query_one("#prompt")

    run(test, agent)
    assert Agent.load("tuilimit", provider=ScriptedProvider([]), read_only=True).block("human").value == "Name: Ada"


@pytest.mark.usefixtures("allow_real_providers")
def test_escape_cancels_during_a_retry_back_off() -> None:
    api = MockAPI(oa_error(429, "Rate limit reached", "requests", "rate_limit_exceeded", {"retry-after": "30"}),
                  sse_response(oa_text_reply("never sent")))
    provider = OpenAIProvider("gpt-4.1-mini", api_key="sk-test", base_url="http://mock/v1", http_client=api.client(),
                              retry=RetryPolicy(max_retries=2, jitter=0.0))  # a real 30 s wait, in slices
    agent = Agent.create("tuiretry", provider=provider)

    async def test(app: AgentApp, pilot: Any) -> None:
        app.query_one("#prompt").value = "hello"
        await pilot.press("enter")
        for _ in range(100):
            await pilot.pause(0.05)
            if any(t.startswith("! rate limited, retrying in") for t in app.conversation.texts()):
                break
        assert "! rate limited, retrying in 30 s (attempt 1 of 2)" in app.conversation.texts()
        assert "rate limited, retrying in" in app.status_line.text
        await pilot.press("escape")
        await asyncio.wait_for(app.workers.wait_for_complete(), 10)  # well before the 30 s wait would end
        await pilot.pause()
        # cancelled at the wait's next quarter-second step, or, on a loaded machine that misses it, let go of
        assert app.conversation.texts()[-1].startswith("(cancelled") and not app.busy
        assert len(api.requests) == 1  # the retry was never sent

    run(test, agent)
    reloaded = Agent.load("tuiretry", provider=ScriptedProvider(["ok"]))
    assert [m.content for m in reloaded.context] == ["hello"]


class SlowStream(ScriptedProvider):
    """A scripted model that streams its first chunk, then waits on `gate` before the rest."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.streaming, self.gate = threading.Event(), threading.Event()

    def stream(self, request: ModelRequest) -> Iterator[ProviderEvent]:
        for event in super().stream(request):
            yield event
            if isinstance(event, StreamText) and not self.gate.is_set():
                self.streaming.set()
                self.gate.wait(10)


def test_ctrl_c_during_a_reply_quits_cleanly_and_saves() -> None:
    provider = SlowStream(["A long story " * 20], chunk_size=5)
    agent = Agent.create("tuictrlc", provider=provider)

    async def test(app: AgentApp, pilot: Any) -> None:
        app.query_one("#prompt").value = "tell me a story"
        await pilot.press("enter")
        await asyncio.to_thread(provider.streaming.wait, 10)
        await pilot.pause()
        threading.Timer(0.3, provider.gate.set).start()  # the model sends its next chunk while the app quits
        await pilot.press("ctrl+c")
        await pilot.pause()

    app = run(test, agent)
    assert app.return_code == 0 and app.closed and app.quitting
    reloaded = Agent.load("tuictrlc", provider=ScriptedProvider([]))
    assert reloaded.context[0].content == "tell me a story"
    assert repair_context(list(reloaded.context)) == list(reloaded.context)


def test_a_provider_error_is_a_notification_and_the_next_turn_works() -> None:
    agent = Agent.create("tuifail", provider=ScriptedProvider([ServerError("down"), "back again"]))

    async def test(app: AgentApp, pilot: Any) -> None:
        await say(app, pilot, "hello")
        assert [t for t in app.conversation.texts() if t.startswith("error:")] == ["error: down (ServerError)"]
        assert [n.severity for n in app._notifications] == ["error"]
        await say(app, pilot, "hello again")
        assert app.conversation.texts()[-1] == "tuifail> back again"
        assert app.focused is app.query_one("#prompt")

    run(test, agent)


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
        assert "cancelling…" in app.status_line.text
        await pilot.pause(1.0)  # the model is still answering: the screen lets go of it anyway
        assert not app.busy and app.in_use and not release.is_set()
        assert app.conversation.texts()[-1].startswith("(cancelled; the model call still under way")
        app.query_one("#prompt").value = "too soon"
        await pilot.press("enter")
        await pilot.pause()
        assert app.query_one("#prompt").value == "too soon"  # kept, and not sent while the call is out
        assert any("has not returned yet" in n.message for n in app._notifications)
        release.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert not app.in_use and app.conversation.texts()[-1].startswith("(cancelled; the model call")
        assert not list(app.conversation.query(Reply))  # nothing of the late answer is shown

    run(test, agent)
    reloaded = Agent.load("tuicancel", provider=ScriptedProvider(["ok"]))
    assert repair_context(list(reloaded.context)) == list(reloaded.context)  # every tool call has its result
    assert "Name: Ada" in reloaded.block("human").value
    assert [e.type for e in reloaded.turn("still there?")][-1] == "turn_finished"


def eight_long_turns(name: str) -> Agent:
    """An agent in a small window after eight long turns: a manual compaction has old messages to summarize."""
    provider = ScriptedProvider(lambda request: "ok", context_window=2000)
    agent = Agent.create(name, provider=provider, settings=AgentSettings(pager=PagerSettings()))
    agent.roles.use("summary", ScriptedProvider(lambda request: "S: numbered topics.", context_window=2000))
    for i in range(8):
        list(agent.turn(f"topic {i}: " + "words " * 50))
    return agent


def test_reopening_shows_the_history_with_a_marker_where_messages_were_summarized() -> None:
    agent = eight_long_turns("tuireopen")
    agent.compact()
    list(agent.turn("the last question"))
    agent.close()
    reopened = Agent.load("tuireopen", provider=ScriptedProvider(["fine"]))

    async def test(app: AgentApp, pilot: Any) -> None:
        await pilot.pause()
        marker = app.conversation.query_one(".marker")
        assert "older messages were summarized" in str(marker.title)
        assert "S: numbered topics." in str(marker.query_one(".summary").render())
        texts = app.conversation.texts()
        assert texts[-2:] == ["you> the last question", "tuireopen> ok"]
        assert f"compactions {reopened.state.compactions}" in app.status_line.text

    run(test, reopened)


def test_summarize_help_and_memory_commands() -> None:
    agent = eight_long_turns("tuisum")

    async def test(app: AgentApp, pilot: Any) -> None:
        await say(app, pilot, "/summarize")
        assert any("old messages moved out of context, summarized" in t for t in app.conversation.texts())
        await say(app, pilot, "/help")
        last = app.conversation.entries()[-1]
        assert app.conversation.texts()[-1].startswith("Commands:") and last.has_class("help")
        await pilot.press("f3")
        assert app.memory_panel.has_class("hidden")
        await say(app, pilot, "/memory")
        assert not app.memory_panel.has_class("hidden")
        assert app.focused is app.query_one("#prompt")  # the next keystrokes go to the input
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, TextScreen) and "Ctrl-P" in str(app.screen.text)

    run(test, agent)
    assert len(agent.context) == 3


def test_switching_agents_shows_the_other_one_and_releases_the_first() -> None:
    other = Agent.create("tuiother", provider=ScriptedProvider(["hi from the other"]), human="Name: Bo")
    list(other.turn("are you there?"))
    other.close()
    agent = Agent.create("tuifirst", provider=ScriptedProvider([]))
    opened: list[str] = []

    def opener(name: str) -> Agent:
        opened.append(name)
        return Agent.load(name, provider=ScriptedProvider(["second reply"]))

    async def test(app: AgentApp, pilot: Any) -> None:
        await pilot.press("f2")
        await pilot.pause()
        picker = app.screen
        assert isinstance(picker, PickerScreen)
        assert [key for key, _ in picker.options] == ["+new", "tuifirst", "tuiother"]  # most recently active first
        picker.dismiss("tuiother")
        await pilot.pause()
        assert app.agent.name == "tuiother" and opened == ["tuiother"]
        assert app.conversation.texts()[-2:] == ["you> are you there?", "tuiother> hi from the other"]
        assert "Name: Bo" in app.query_one("#block-human", BlockView).text
        await say(app, pilot, "hello")
        assert app.conversation.texts()[-1] == "tuiother> second reply"

    run(test, agent, opener=opener)
    Agent.load("tuifirst", provider=ScriptedProvider([])).close()  # its lease was released on the switch


def test_an_agent_that_cannot_be_opened_leaves_the_current_one_in_place() -> None:
    agent = Agent.create("tuistay", provider=ScriptedProvider(["still here"]))

    async def test(app: AgentApp, pilot: Any) -> None:
        assert not await app.switch_to(lambda: Agent.load("no-such-agent"))
        await pilot.pause()
        assert any("could not open that agent" in n.message for n in app._notifications)
        await say(app, pilot, "hello")
        assert app.agent is agent and app.conversation.texts()[-1] == "tuistay> still here"

    run(test, agent)


def test_recall_search_jumps_to_the_message() -> None:
    agent = Agent.create("tuisearch", provider=ScriptedProvider(["ok", "ok", "ok"]))

    async def test(app: AgentApp, pilot: Any) -> None:
        for text in ("my sister lives in Lisbon", "the weather is grey", "let's plan a trip"):
            await say(app, pilot, text)
        app.action_search_recall()
        await pilot.pause()
        search = app.screen
        assert isinstance(search, SearchScreen)
        search.query_one("#query").value = "Lisbon"
        await pilot.press("enter")
        await pilot.pause()
        assert len(search.results) == 1 and "my sister lives in Lisbon" in search.results[0].line
        await pilot.press("enter")  # choose the highlighted result
        await pilot.pause()
        found = app.conversation.query(".found")
        assert [w.text for w in found] == ["you> my sister lives in Lisbon"]  # type: ignore[attr-defined]

    run(test, agent)


def test_the_80_by_24_layout_puts_the_memory_pane_below_and_keeps_everything_on_screen() -> None:
    agent = Agent.create("tuinarrow", provider=ScriptedProvider([ADA, "Hello Ada"]), human="")

    async def test(app: AgentApp, pilot: Any) -> None:
        await say(app, pilot, "my name is Ada")
        screen = app.screen.region
        status, prompt = app.status_line.region, app.query_one("#prompt").region
        footer, memory, conversation = app.query_one("Footer").region, app.memory_panel.region, app.conversation.region
        for region in (status, prompt, footer, memory, conversation):
            assert region.area > 0 and screen.contains_region(region)
        assert conversation.bottom <= memory.y and conversation.width == memory.width  # stacked, full width
        assert memory.bottom <= status.y and status.bottom <= prompt.y and prompt.bottom <= footer.y
        human = app.query_one("#block-human", BlockView)
        assert memory.contains_region(human.region)  # the edited block is scrolled into view
        assert "thinking" not in app.status_line.text and app.status_line.text.startswith("scripted/script")

    run(test, agent, size=(80, 24))


def test_the_wide_layout_keeps_the_status_and_input_clear_of_the_footer() -> None:
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
        assert not memory.overlaps(app.conversation.region) and memory.x > app.conversation.region.x
        assert app.status_line.text.startswith("scripted/script · recall 0")

    run(test, agent)


def test_exit_command_closes_the_agent() -> None:
    agent = Agent.create("tuiexit", provider=ScriptedProvider(["hi"]))

    async def test(app: AgentApp, pilot: Any) -> None:
        await say(app, pilot, "hello")
        await say(app, pilot, "/exit")

    app = run(test, agent)
    assert app.closed and app.return_code == 0
    assert Agent.load("tuiexit", provider=ScriptedProvider([])).state.message_count == 2


def test_the_demos_guided_tour_shows_every_memory_tier_at_work() -> None:
    from agentos.providers.demo import DEMO_TOUR, demo_provider

    agent = Agent.create("tuidemo", provider=demo_provider())

    async def test(app: AgentApp, pilot: Any) -> None:
        await pilot.pause()
        assert any(t.startswith("Guided tour:") for t in app.conversation.texts())
        for suggestion in DEMO_TOUR:
            assert app.query_one("#prompt").value == suggestion  # offered, one after another
            await pilot.press("enter")
            await app.workers.wait_for_complete()
            await pilot.pause()
        texts = app.conversation.texts()
        calls = [t.split("(")[0] for t in texts if t.startswith(("✓ ", "✗ "))]
        assert calls == ["✓ core_memory_replace", "✓ core_memory_append", "✓ archival_insert", "✓ archival_search",
                         "✓ conversation_search"]
        human = app.query_one("#block-human", BlockView).text
        assert "Ada" in human and "green tea" in human
        assert any("Mia" in t and t.startswith("tuidemo> ") for t in texts[texts.index("you> What do you remember about Mia?"):])
        assert any("old messages moved out of context, summarized" in t for t in texts)
        assert texts[-1].startswith("That was the tour")
        assert "archival 1" in app.status_line.text and "compactions 1" in app.status_line.text
        assert app.query_one("#prompt").value == ""

    run(test, agent, tour=DEMO_TOUR)


def test_the_new_agent_dialog_creates_an_agent_and_switches_to_it() -> None:
    agent = Agent.create("tuiold", provider=ScriptedProvider([]))

    def creator(spec: Any) -> Agent:
        return Agent.create(spec.name, provider=ScriptedProvider(["I am new"]), human=spec.human or None)

    async def test(app: AgentApp, pilot: Any) -> None:
        app.action_new_agent()
        await pilot.pause()
        for field, value in (("#name", "bad name!"), ("#human", "Name: Cy")):
            app.screen.query_one(field).value = value
        await pilot.click("#create")
        await pilot.pause()
        assert app.agent.name == "tuiold"  # an invalid name is refused with a notice; nothing changes
        assert any("invalid agent name" in n.message for n in app._notifications)
        app.action_new_agent()
        await pilot.pause()
        for field, value in (("#name", "tuinew"), ("#human", "Name: Cy")):
            app.screen.query_one(field).value = value
        app.screen.query_one("#human").focus()
        await pilot.press("enter")
        await pilot.pause()
        assert app.agent.name == "tuinew" and app.query_one("#block-human", BlockView).text == "Name: Cy"
        await say(app, pilot, "hello")
        assert app.conversation.texts()[-1] == "tuinew> I am new"

    run(test, agent, creator=creator)


def test_the_palette_offers_the_agents_commands_and_archival_search_shows_a_passage() -> None:
    store = Step(tool_calls=[("archival_insert", {"content": "Mia's birthday is on 12 May"})])
    agent = Agent.create("tuipal", provider=ScriptedProvider([store, "Stored."]))

    async def test(app: AgentApp, pilot: Any) -> None:
        await say(app, pilot, "remember Mia's birthday: 12 May")
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for wanted in ("Switch agent", "New agent", "Search archival memory", "Search recall memory", "Summarize now",
                       "Export agent", "Rewind", "Edit block: human", "Block history: persona"):
            assert wanted in titles
        assert "archival 1" in app.status_line.text
        app.action_search_archival()
        await pilot.pause()
        app.screen.query_one("#query").value = "birthday"
        await pilot.press("enter")
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, TextScreen) and "Mia's birthday is on 12 May" in str(app.screen.text)
        await pilot.press("escape")
        await pilot.pause()
        assert app.focused is app.query_one("#prompt")

    run(test, agent)


def test_export_from_the_tui_writes_a_file_that_imports(tmp_path: Any) -> None:
    from agentos.agent.agent import open_store
    from agentos.portable.archive import import_agent

    agent = Agent.create("tuiexport", provider=ScriptedProvider(["hi"]))
    path = tmp_path / "tuiexport.agentos"

    async def test(app: AgentApp, pilot: Any) -> None:
        await say(app, pilot, "hello")
        app.action_export()
        await pilot.pause()
        app.screen.query_one("#answer").value = str(path)
        await pilot.press("enter")
        await pilot.pause()
        assert app.conversation.texts()[-1].startswith(f"Exported to {path}")
        await say(app, pilot, "still here")  # the agent is still held by this app, and takes turns

    run(test, agent)
    import_agent(open_store(), path, "tuicopy")
    copy = Agent.load("tuicopy", provider=ScriptedProvider([]), read_only=True)
    assert [m.content for m in copy.context] == ["hello", "hi"]


def test_rewind_from_the_tui_takes_back_the_last_turn_and_keeps_a_copy() -> None:
    agent = Agent.create("tuirw", provider=ScriptedProvider([ADA, "ok", "second"]), human="")

    async def test(app: AgentApp, pilot: Any) -> None:
        await say(app, pilot, "my name is Ada")
        await say(app, pilot, "another turn")
        app.action_rewind()
        await pilot.pause()
        picker = app.screen
        assert isinstance(picker, PickerScreen) and [key for key, _ in picker.options] == ["1", "0"]
        picker.dismiss("0")
        await pilot.pause()
        await app.workers.wait_for_complete()  # the rewind runs as a job
        await pilot.pause()
        assert app.conversation.texts()[-1].startswith("Rewound to point 0")
        assert app.query_one("#block-human", BlockView).text == ""
        assert app.agent.state.message_count == 0

    run(test, agent)
    copy = Agent.load("tuirw.before-rewind-1", provider=ScriptedProvider([]), read_only=True)
    assert "Name: Ada" in copy.block("human").value and copy.state.message_count == 6


def test_markup_in_errors_replies_blocks_and_tool_arguments_is_shown_as_typed() -> None:
    call = Step(tool_calls=[("core_memory_append", {"label": "human", "content": "likes [bold]x[/] and C:\\[x]"})])
    provider = ScriptedProvider([ServerError("bad [/] thing [@click=app.quit]"), call, "a [/] reply [link=x]y[/link]"])
    agent = Agent.create("tuimarkup", provider=provider, human="[red]")

    async def test(app: AgentApp, pilot: Any) -> None:
        await say(app, pilot, "hello [/]")
        assert "error: bad [/] thing [@click=app.quit] (ServerError)" in app.conversation.texts()
        assert [n.message for n in app._notifications] == ["error: bad [/] thing [@click=app.quit] (ServerError)"]
        await say(app, pilot, "remember [b]")
        title = str(app.conversation.query_one(ToolCallView)._title.render())
        assert "[bold]x[/]" in title and "C:\\\\[x]" in title  # as the JSON has it: no markup, no doubled escapes
        assert "[bold]x[/]" in app.query_one("#block-human", BlockView).text
        await say(app, pilot, "/[/]")
        assert app.is_running and any(t.startswith("unknown command /[/]") for t in app.conversation.texts())
        assert "Edit [human] by hand" in [str(c.help) for c in app.get_system_commands(app.screen)
                                          if c.title == "Edit block: human"][0].replace("\\", "")

    run(test, agent)


def test_tab_moves_from_the_input_into_the_memory_pane() -> None:
    agent = Agent.create("tuitab", provider=ScriptedProvider([ADA, "ok"]), human="")

    async def test(app: AgentApp, pilot: Any) -> None:
        await say(app, pilot, "my name is Ada")  # a tool call line is in the conversation now
        await pilot.press("tab")
        assert isinstance(app.focused, BlockView)
        await pilot.press("tab")
        assert isinstance(app.focused, BlockView) and app.focused.block_label == "human"
        await pilot.press("h")
        await pilot.pause()
        assert isinstance(app.screen, BlockHistoryScreen)

    run(test, agent)


def test_quitting_while_a_model_call_hangs_leaves_it_to_close_the_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    import agentos.tui.app as tui_app

    monkeypatch.setattr(tui_app, "QUIT_WAIT_SECONDS", 0.2)
    entered, release = threading.Event(), threading.Event()

    def script(request: ModelRequest) -> Any:
        entered.set()
        release.wait(10)  # a model call that outlasts the wait
        return Step(text="late answer")

    agent = Agent.create("tuihang", provider=ScriptedProvider(script))

    async def test(app: AgentApp, pilot: Any) -> None:
        app.query_one("#prompt").value = "hello"
        await pilot.press("enter")
        await asyncio.to_thread(entered.wait, 10)
        await pilot.press("ctrl+c")
        await pilot.pause(0.5)
        assert not app.closed  # the worker still has the agent: nobody closed it under the running turn
        release.set()

    app = run(test, agent)
    assert app.closed and app.close_error is None  # the worker closed it once the call returned
    reloaded = Agent.load("tuihang", provider=ScriptedProvider([]))
    assert reloaded.context[0].content == "hello" and repair_context(list(reloaded.context)) == list(reloaded.context)


def test_summarize_runs_in_a_worker_and_the_screen_stays_live() -> None:
    gate = threading.Event()

    def summarizer(request: ModelRequest) -> Step:
        gate.wait(10)
        return Step("S: numbered topics.")

    provider = ScriptedProvider(lambda request: "ok", context_window=2000)
    agent = Agent.create("tuislow", provider=provider, settings=AgentSettings(pager=PagerSettings()))
    agent.roles.use("summary", ScriptedProvider(summarizer, context_window=2000))
    for i in range(8):
        agent.add_history([Message.user(f"topic {i}: " + "words " * 50), Message.assistant("ok")], in_context=2)

    async def test(app: AgentApp, pilot: Any) -> None:
        app.query_one("#prompt").value = "/summarize"
        await pilot.press("enter")
        await pilot.pause()
        assert app.busy and "summarizing" in app.status_line.text
        await pilot.press("f1")  # the app answers keys while the model writes the summary
        await pilot.pause()
        assert isinstance(app.screen, TextScreen)
        await pilot.press("escape")
        gate.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert not app.busy and any("summarized" in t for t in app.conversation.texts())

    run(test, agent)


def test_a_message_sent_during_a_reply_stays_in_the_input() -> None:
    provider = SlowStream(["A long story " * 5, "second answer"], chunk_size=5)
    agent = Agent.create("tuiwait", provider=provider)

    async def test(app: AgentApp, pilot: Any) -> None:
        app.query_one("#prompt").value = "tell me a story"
        await pilot.press("enter")
        await asyncio.to_thread(provider.streaming.wait, 10)
        app.query_one("#prompt").value = "and then?"
        await pilot.press("enter")
        await pilot.pause()
        assert app.query_one("#prompt").value == "and then?"  # not lost, not sent
        assert app.conversation.texts()[-1] == "(a reply is in progress; Escape cancels it)"
        provider.gate.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.conversation.texts()[-2:] == ["you> and then?", "tuiwait> second answer"]

    run(test, agent)
