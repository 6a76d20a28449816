"""Fact memory in the TUI: the memory pane's Facts section, notifications of new facts and of consolidation's notices,
and the palette's Facts dialog, with a real agent whose facts are consolidated after every turn by a scripted model."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from agentos.agent.agent import Agent
from agentos.agent.state import AgentSettings
from agentos.cli.sessions import demo_settings
from agentos.errors import StorageError
from agentos.eval.scripted_models import decide
from agentos.events import FactsNotice
from agentos.memory.facts.rows import Fact, FactChange
from agentos.memory.facts.settings import FactSettings
from agentos.memory.facts.tier import FactTier
from agentos.messages import new_id
from agentos.presenter import describe_fact_changes
from agentos.providers import ModelRequest, ScriptedProvider, Step
from agentos.providers.demo import DEMO_TOUR
from agentos.tui.app import AgentApp
from agentos.tui.memory import FactsView
from agentos.tui.messages import NewsArrived
from agentos.tui.screens import FactsScreen, TextScreen

SIZE = (120, 40)
WAIT_SECONDS = 60.0  # a generous bound for the consolidator on a loaded machine; it returns as soon as it is idle


def extractor(*batches: list[str]) -> ScriptedProvider:
    """A fact model whose extractions find `batches` in turn (one per batch; then none), and whose decisions ADD
    what is new (`decide` of the scripted models)."""
    left = list(batches)

    def answer(request: ModelRequest) -> Step:
        if request.tools and request.tools[0].name == "decide":
            return decide(request.messages[0].content)
        found = left.pop(0) if left else []
        return Step(tool_calls=[("record_facts", {"facts": [{"text": t, "confidence": 0.9} for t in found]})])

    return ScriptedProvider(answer, model="facts")


def facts_agent(name: str, replies: list[str], fact_model: ScriptedProvider) -> Agent:
    """A new agent that consolidates facts after every turn, asking `fact_model`."""
    agent = Agent.create(name, provider=ScriptedProvider(replies),
                         settings=AgentSettings(facts=FactSettings(mode="turn")))
    agent.roles.use("facts", fact_model)
    return agent


def run(test: Callable[[AgentApp, Any], Awaitable[None]], agent: Agent) -> AgentApp:
    """Run `test(app, pilot)` inside a headless app."""
    app = AgentApp(agent)

    async def main() -> None:
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await settle(app, pilot)
            await test(app, pilot)

    asyncio.run(main())
    return app


async def settle(app: AgentApp, pilot: Any) -> None:
    """Let the app handle what was posted to it, and its workers finish (the fact reads they start too)."""
    for _ in range(2):  # a handled message may start a worker, whose result is posted in turn
        await pilot.pause()
        await app.workers.wait_for_complete()
    await pilot.pause()


async def say(app: AgentApp, pilot: Any, text: str) -> None:
    """Send a message; wait for its turn, then for the consolidation it started, then for the app to show it."""
    app.query_one("#prompt").value = text
    await pilot.press("enter")
    await app.workers.wait_for_complete()
    assert await asyncio.to_thread(app.agent.tier(FactTier).consolidator.wait_idle, WAIT_SECONDS)
    await settle(app, pilot)


def messages(app: AgentApp) -> list[str]:
    return [n.message for n in app._notifications]


def listed(screen: FactsScreen) -> list[str]:
    """The lines the Facts dialog lists now."""
    options = screen.query_one("#facts-list").options  # type: ignore[attr-defined]
    return [str(option.prompt) for option in options]


def add_fact(agent: Agent, text: str) -> None:
    fact = Fact(text=text, confidence=0.9)
    agent.tier(FactTier).commit([FactChange(kind="add", by="consolidator", group_id=new_id("grp"), fact=fact)])


def test_a_new_fact_shows_in_the_pane_and_as_a_notification() -> None:
    agent = facts_agent("tuifacts", ["Noted."], extractor(["Ada likes green tea"]))

    async def test(app: AgentApp, pilot: Any) -> None:
        facts = app.memory_panel.facts
        assert facts is not None and facts.count == 0 and "0 current" in str(facts.header.render())
        assert list(app.memory_panel.children)[-1] is facts  # under the blocks
        await say(app, pilot, "I like green tea")
        assert [f.text for f in facts.newest] == ["Ada likes green tea"] and facts.count == 1
        assert "1 current" in str(facts.header.render()) and "· Ada likes green tea" in str(facts.body.render())
        assert messages(app) == ["New fact: Ada likes green tea"]

    run(test, agent)


def test_the_palettes_facts_dialog_lists_the_facts_filters_them_and_shows_one() -> None:
    agent = facts_agent("tuifactlist", ["Noted.", "Nice."], extractor(["Ada likes green tea"], ["Ada has a dog, Rex"]))

    async def test(app: AgentApp, pilot: Any) -> None:
        await say(app, pilot, "I like green tea")
        await say(app, pilot, "My dog is called Rex")
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        commands["Facts"].callback()
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, FactsScreen)
        today = f"{screen.facts[0].valid_from.astimezone():%Y-%m-%d}"
        assert listed(screen) == [f"{today}  Ada has a dog, Rex", f"{today}  Ada likes green tea"]
        screen.query_one("#filter").value = "TEA"
        await pilot.pause()
        await pilot.pause()  # the input's change reaches the dialog
        assert listed(screen) == [f"{today}  Ada likes green tea"]
        assert "1 of 2 match" in str(screen.query_one("#summary").render())
        await pilot.press("enter")  # into the list
        await pilot.pause()
        assert app.focused is screen.query_one("#facts-list")
        await pilot.press("enter")  # the highlighted fact, whole
        await pilot.pause()
        assert isinstance(app.screen, TextScreen) and str(app.screen.text).startswith("Ada likes green tea\n")
        await pilot.press("escape")
        await pilot.pause()
        assert app.focused is app.query_one("#prompt")

    run(test, agent)


def test_several_new_facts_are_one_notification_and_each_is_one_line_in_the_pane() -> None:
    long = "Ada keeps a notebook of every tea she has tried, with where she bought it, what it cost and how it tasted"
    found = ["Ada likes green tea", "Ada lives in Berlin", "Ada has a dog called Rex", long]
    agent = facts_agent("tuimanyfacts", ["Noted."], extractor(found))

    async def test(app: AgentApp, pilot: Any) -> None:
        await say(app, pilot, "Some things about me")
        assert len(messages(app)) == 1
        assert messages(app)[0].startswith("4 new facts: ") and messages(app)[0].endswith("; and 1 more")
        facts = app.memory_panel.facts
        assert facts is not None and facts.count == 4 and len(facts.newest) == 4
        assert facts.body.size.height == 4  # one line each: the long one is cut at the pane's width
        assert facts.body.size.width < len(long)

    run(test, agent)


def test_a_consolidation_notice_is_a_warning_notification() -> None:
    agent = facts_agent("tuifactnote", ["Noted."], ScriptedProvider(lambda request: "I would rather not say."))

    async def test(app: AgentApp, pilot: Any) -> None:
        await say(app, pilot, "I like green tea")
        notes = [n for n in app._notifications if "fact consolidation skipped" in n.message]
        assert len(notes) == 1 and notes[0].severity == "warning"
        assert app.memory_panel.facts is not None and app.memory_panel.facts.count == 0

    run(test, agent)


def test_facts_kept_earlier_show_on_opening_and_a_storage_error_is_a_notification(
        monkeypatch: pytest.MonkeyPatch) -> None:
    agent = facts_agent("tuifactfail", [], extractor())
    add_fact(agent, "Ada likes green tea")

    async def test(app: AgentApp, pilot: Any) -> None:
        facts = app.memory_panel.facts
        assert facts is not None and [f.text for f in facts.newest] == ["Ada likes green tea"]

        def broken(self: FactTier, **options: Any) -> list[Fact]:
            raise StorageError("the disk is gone")

        monkeypatch.setattr(FactTier, "listing", broken)
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        commands["Facts"].callback()
        await settle(app, pilot)
        assert not isinstance(app.screen, FactsScreen) and app.is_running
        errors = [n for n in app._notifications if n.severity == "error"]
        assert [n.message for n in errors] == ["could not read fact memory: the disk is gone"]

    run(test, agent)


def test_without_fact_memory_nothing_changes() -> None:
    agent = Agent.create("tuinofacts", provider=ScriptedProvider(["Noted."]))

    async def test(app: AgentApp, pilot: Any) -> None:
        app.query_one("#prompt").value = "I like green tea"
        await pilot.press("enter")
        await settle(app, pilot)
        assert app.memory_panel.facts is None and not app.query(FactsView)
        assert "Facts" not in [c.title for c in app.get_system_commands(app.screen)]
        assert messages(app) == []

    run(test, agent)
    assert not agent.tier(FactTier).consolidating  # never even made


def test_news_after_the_app_closed_is_harmless() -> None:
    agent = facts_agent("tuifactclosed", ["Noted."], extractor(["Ada likes green tea"]))
    app = run(lambda app, pilot: say(app, pilot, "I like green tea"), agent)
    assert app.news is not None  # the test's app ended without quitting
    app.news.thread.join(5.0)  # the news thread ends with the app
    assert not app.news.thread.is_alive()
    app.post_message(NewsArrived(agent, FactsNotice(text="late news")))  # as if news came after the end
    agent.close()


def test_quitting_stops_taking_news() -> None:
    agent = facts_agent("tuifactquit", ["Noted."], extractor(["Ada likes green tea"]))

    async def test(app: AgentApp, pilot: Any) -> None:
        await say(app, pilot, "I like green tea")
        await pilot.press("ctrl+c")
        await pilot.pause()

    app = run(test, agent)
    assert app.closed and app.news is not None and app.news.stopped


def test_fact_changes_are_summarised_for_a_notification() -> None:
    assert describe_fact_changes(["+ Ada likes tea"]) == "New fact: Ada likes tea"
    assert describe_fact_changes(["~ Ada lives in Berlin"]) == "Updated fact: Ada lives in Berlin"
    assert describe_fact_changes(["- fact_1 (no longer true)"]) == "Fact memory: - fact_1 (no longer true)"
    assert describe_fact_changes(["+ a", "+ b"]) == "2 new facts: a; b"
    assert describe_fact_changes(["+ a", "- fact_1 (no longer true)"]) == \
        "2 fact changes: + a; - fact_1 (no longer true)"
    assert describe_fact_changes(["+ " + "x" * 200, "+ b"]).startswith("2 new facts: " + "x" * 79 + "…; b")


def test_the_demos_tour_shows_a_fact_added_then_superseded_in_the_pane() -> None:
    agent = Agent.create("tuitour", model="scripted/demo", settings=demo_settings())  # as `agentos demo` makes it

    async def test(app: AgentApp, pilot: Any) -> None:
        facts = app.memory_panel.facts
        assert facts is not None
        await say(app, pilot, DEMO_TOUR[0])
        await say(app, pilot, "I live in Lisbon.")
        assert "· The user lives in Lisbon." in str(facts.body.render())
        assert "New fact: The user lives in Lisbon." in messages(app)
        await say(app, pilot, "I just moved to Porto.")
        shown = str(facts.body.render())
        assert "· The user lives in Porto." in shown and "Lisbon" not in shown and facts.count == 2
        assert any("The user lives in Porto. (was: The user lives in Lisbon.)" in m for m in messages(app))
        assert not any("skipped" in m for m in messages(app))

    run(test, agent)
