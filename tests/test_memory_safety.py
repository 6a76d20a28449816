"""Model-supplied values never break or widen a LanceDB filter: quotes, SQL, unicode, huge strings."""

from __future__ import annotations

import pytest

from agentos.agent.agent import Agent
from agentos.agent.state import SearchSettings
from agentos.storage.filters import quote
from tests.memory_helpers import archival, call, make_agent, say

NASTY = [
    "it's",
    "'; DROP TABLE messages; --",
    "x' OR '1'='1",
    "\" OR \"\"=\"",
    ") OR (1=1",
    "%_*\\",
    "ünïcødé 日本語 🙂",
    "a:b AND c:d",
    "\\' OR 1=1 --",
    "x" * 100_000,
]


def index_now(agent: Agent) -> None:
    """Fold every row into the search indexes, as maintenance does in the background: searches of indexed
    rows go through the index's own query handling, which searches of fresh rows never reach."""
    agent.store.maintenance.run_now(["messages", archival(agent).table_name])


@pytest.mark.parametrize("indexed", [False, True], ids=["fresh rows", "indexed rows"])
@pytest.mark.parametrize("value", NASTY)
def test_queries_and_tags_are_data_not_sql(value: str, indexed: bool) -> None:
    agent = make_agent()
    say(agent, "user", "the only message")
    call(agent, "archival_insert", content="the only passage", tags=["safe"])
    if indexed:
        index_now(agent)
    text, err = call(agent, "conversation_search", query=value)
    assert not err, text
    text, err = call(agent, "archival_search", query=value)
    assert not err, text
    text, err = call(agent, "archival_search", query="passage", tags=[value[:64]])
    if len(value[:64]) and "\n" not in value:
        assert not err and text.startswith("No passages"), text  # filtered, never widened
    assert archival(agent).count() == 1


@pytest.mark.parametrize("query", ['"only"', 'the "only message', '"" only ""', "only:message AND"])
def test_quotes_and_operators_in_a_query_are_words_to_match(query: str) -> None:
    agent = make_agent(embedder="none")
    agent.update_settings(search=SearchSettings(paths=["keyword"]))  # keywords alone: what the index answers
    say(agent, "user", "the only message")
    say(agent, "user", "something else entirely")
    index_now(agent)
    text, err = call(agent, "conversation_search", query=query)
    assert not err, text
    assert text.startswith("Showing messages 1-1 of 1") and "the only message" in text, text


@pytest.mark.parametrize("value", NASTY)
def test_nasty_content_round_trips(value: str) -> None:
    agent = make_agent()
    content = f"marker {value}"
    text, err = call(agent, "archival_insert", content=content[:150_000], tags=[value[:64]])
    assert not err, text
    found, err = call(agent, "archival_search", query="", tags=[value[:64]])
    assert not err and "marker" in found
    say(agent, "user", content)
    assert "marker" in call(agent, "conversation_search", query="marker")[0]


def test_quote_escapes_and_refuses_nul() -> None:
    assert quote("it's") == "'it''s'"
    with pytest.raises(ValueError):
        quote("a\x00b")
    agent = make_agent()
    text, err = call(agent, "archival_search", query="x", tags=["a\x00b"])
    assert err and "bad tag" in text
    text, err = call(agent, "conversation_search", query="nul \x00 inside")
    assert not err


def test_oversized_insert_is_a_clear_error() -> None:
    agent = make_agent()
    text, err = call(agent, "archival_insert", content="y " * 150_000)
    assert err and "at most" in text
