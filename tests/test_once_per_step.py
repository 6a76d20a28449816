"""Each thing a step needs is worked out once: the prompt rendered once per model call, tool schemas dumped once per
agent, a message's search text once however many tiers index it, the state serialized once per save."""

from __future__ import annotations

from typing import Any

import pytest

from agentos import Agent
from agentos.agent.state import AgentState
from agentos.providers import ScriptedProvider, Step
from agentos.storage import records
from agentos.tools.decorator import Tool


def counting(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[int]:
    """Count the calls of `owner.name` (a function or method) from now on."""
    calls: list[int] = []
    original = getattr(owner, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


def test_the_prompt_is_rendered_once_per_model_call(monkeypatch: pytest.MonkeyPatch) -> None:
    provider = ScriptedProvider([Step(tool_calls=[("conversation_search", {"query": "tea"})]), "Nothing yet."])
    agent = Agent.create("sam", provider=provider)
    renders = counting(monkeypatch, agent.prompts, "dynamic")
    list(agent.turn("what did I say about tea?"))
    assert len(provider.requests) == 2 and len(renders) == 2


def test_tool_schemas_are_dumped_once_per_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    agent = Agent.create("sam", provider=ScriptedProvider(["One.", "Two.", "Three."]))
    dumps = counting(monkeypatch, Tool, "openai_schema")
    for text in ("a", "b", "c"):
        list(agent.turn(text))
    assert len(dumps) == len(list(agent.tools))


def test_a_message_s_search_text_is_worked_out_once_per_save(monkeypatch: pytest.MonkeyPatch) -> None:
    agent = Agent.create("sam", provider=ScriptedProvider(["Noted, green tea."]))
    texts = counting(monkeypatch, records, "search_text_of")
    list(agent.turn("I like green tea"))
    assert len(texts) == 2  # the user's message and the reply, each once (recall and the exchanges share it)


def test_the_state_is_serialized_once_per_save(monkeypatch: pytest.MonkeyPatch) -> None:
    agent = Agent.create("sam", provider=ScriptedProvider(["Hello."]))
    dumps = counting(monkeypatch, AgentState, "model_dump_json")
    list(agent.turn("hi"))  # one step, which ends the turn: its state is also the turn's restore point
    assert len(dumps) == 1
