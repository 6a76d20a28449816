"""conversation_search: ranking modes, filters, paging, freshness, tool traffic left out."""

from __future__ import annotations

import re

import pytest

from agentos.providers.scripted import ScriptedProvider, Step
from tests.memory_helpers import call, day, make_agent, recall, say


@pytest.mark.parametrize("embedder", ["none", "hash:64"])
def test_empty_store(embedder: str) -> None:
    agent = make_agent(embedder=embedder)
    text, err = call(agent, "conversation_search", query="anything")
    assert not err and text.startswith("No messages found")


@pytest.mark.parametrize("embedder", ["none", "hash:64"])
def test_message_is_found_at_once(embedder: str) -> None:
    agent = make_agent(embedder=embedder)
    say(agent, "user", "My sister Beatrix lives in Porto.")
    text, _ = call(agent, "conversation_search", query="Beatrix")
    assert "Porto" in text and "user:" in text and "of 1 " in text
    assert re.search(r"\[\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC\] user", text)


def test_hybrid_uses_vectors_and_bm25_alone_does_not() -> None:
    hybrid = make_agent("h", embedder="hash:64")
    plain = make_agent("p", embedder="none")
    for agent in (hybrid, plain):
        say(agent, "user", "quarterly budget review meeting")
        say(agent, "assistant", "noted")
    # "budget review quarterly" shares words; both find it. A vector table exists only for hybrid.
    assert recall(hybrid).vectors is not None and recall(plain).vectors is None
    assert "budget" in call(hybrid, "conversation_search", query="budget")[0]
    assert "budget" in call(plain, "conversation_search", query="budget")[0]


@pytest.mark.parametrize("embedder", ["none", "hash:64"])
def test_paging_and_true_totals(embedder: str) -> None:
    agent = make_agent(embedder=embedder)
    for i in range(11):
        say(agent, "user", f"pancake recipe number {i}")
    say(agent, "user", "unrelated chatter")
    text, _ = call(agent, "conversation_search", query="pancake")
    total = int(re.search(r"of (\d+)", text).group(1))  # type: ignore[union-attr]
    # BM25 finds 11; the turn after the last one shares its score (the neighbours path), and hybrid adds the
    # nearest vectors (here every message): 12 either way
    assert total == 12
    assert "(page 0 of pages 0-2)" in text
    seen: set[str] = set()
    for page in range(3):
        seen |= set(re.findall(r"recipe number \d+", call(agent, "conversation_search", query="pancake", page=page)[0]))
    assert len(seen) == 11
    assert "past the end" in call(agent, "conversation_search", query="pancake", page=5)[0]


def test_tool_traffic_and_own_search_calls_are_left_out() -> None:
    provider = ScriptedProvider([
        Step(tool_calls=[("conversation_search", {"query": "zebra"})]),
        Step(text="I found nothing about a zebra."),
    ])
    agent = make_agent()
    agent.roles.use("main", provider)
    events = list(agent.turn("tell me about the zebra"))
    assert events
    page = recall(agent).search("zebra")
    roles = sorted(h.role for h in page.hits)
    assert roles == ["assistant", "user"]  # not the tool call, not its result
    assert all("conversation_search" not in h.text for h in page.hits)


def test_roles_filter() -> None:
    agent = make_agent()
    say(agent, "user", "I like green tea")
    say(agent, "assistant", "green tea is lovely")
    text, _ = call(agent, "conversation_search", query="green tea", roles=["assistant"])
    assert "lovely" in text and "I like" not in text
    text, err = call(agent, "conversation_search", query="tea", roles=["tool"])
    assert err and "roles must be" in text
    text, err = call(agent, "conversation_search", query="tea", roles=["user' OR '1'='1"])
    assert err


def test_date_filters_and_date_search() -> None:
    agent = make_agent()
    say(agent, "user", "hiking trip planning", when=day(3))
    say(agent, "user", "hiking boots bought", when=day(15))
    say(agent, "user", "dinner with Ana", when=day(15))
    text, _ = call(agent, "conversation_search", query="hiking", start_date="2024-01-10")
    assert "boots" in text and "planning" not in text
    text, _ = call(agent, "conversation_search", query="hiking", end_date="2024-01-03")
    assert "planning" in text and "boots" not in text
    text, _ = call(agent, "conversation_search", query="", start_date="2024-01-15", end_date="2024-01-15")
    assert "boots" in text and "Ana" in text and "planning" not in text and "of 2 " in text
    text, _ = call(agent, "conversation_search", query="hiking", start_date="2024-01-15T00:00", end_date="2024-01-15T23:59Z")
    assert "boots" in text and "planning" not in text
    text, err = call(agent, "conversation_search", query="")
    assert err and "query" in text
    for bad in ["yesterday", "2024-13-01", "2024-01-01'; DROP TABLE messages; --", "9" * 100_000]:
        text, err = call(agent, "conversation_search", query="hiking", start_date=bad)
        assert err and "not a date" in text


def test_results_are_capped_in_size() -> None:
    agent = make_agent()
    say(agent, "user", "needle " + "hay " * 5000)
    text, _ = call(agent, "conversation_search", query="needle")
    assert "more characters]" in text and len(text) < 1500


def test_other_agents_messages_are_not_found() -> None:
    a, b = make_agent("a"), make_agent("b")
    say(a, "user", "secret plan alpha")
    assert call(b, "conversation_search", query="secret plan alpha")[0].startswith("No messages")


def test_search_after_reload_and_compaction() -> None:
    agent = make_agent()
    for i in range(5):
        say(agent, "user", f"fact {i} about volcanoes")
    agent.store.compact()
    from agentos.agent.agent import Agent

    again = Agent.load("sam", provider=agent.provider)
    say(again, "user", "one more about volcanoes")
    text, _ = call(again, "conversation_search", query="volcanoes")
    assert "of 6 " in text


def test_dates_at_the_ends_of_the_calendar_filter_instead_of_failing() -> None:
    agent = make_agent()
    say(agent, "user", "an old note", when=day(2))
    for args in ({"end_date": "9999-12-31"}, {"start_date": "0999-01-01"}, {"start_date": "0001-01-01", "end_date": "9999-12-31"}):
        for tool in ("conversation_search", "archival_search"):
            text, err = call(agent, tool, query="", **args)
            assert not err, (tool, args, text)
    assert "an old note" in call(agent, "conversation_search", query="", end_date="9999-12-31")[0]
    assert call(agent, "conversation_search", query="", start_date="9999-12-31")[0] == "No messages found."
