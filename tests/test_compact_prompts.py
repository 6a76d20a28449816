"""The compact prompt set: shorter instructions and tool schemas for a small model's window, with every tool still
running as before."""

from __future__ import annotations

import json
from pathlib import Path

from agentos import Agent
from agentos.agent.state import AgentSettings
from agentos.cli import main
from agentos.providers import ScriptedProvider
from agentos.providers.scripted import Step


def fixed(agent: Agent) -> int:
    parts = agent.context_breakdown()
    return int(parts["system"] + parts["memory"] + parts["tools"])


def test_the_compact_set_takes_under_half_the_fixed_prompt_of_the_standard_one() -> None:
    standard = Agent.create("standard", model="scripted/demo")
    compact = Agent.create("compact", model="scripted/demo", settings=AgentSettings(prompts="compact"))
    assert fixed(compact) < fixed(standard) / 2
    request = compact.build_request()
    assert "core_memory_append" in request.system and "<description>" not in request.system
    schemas = {t.name: t.openai_schema()["function"] for t in request.tools}
    search = schemas["conversation_search"]
    assert search["parameters"]["required"] == ["query"] and list(search["parameters"]["properties"]) == ["query"]
    assert "description" not in json.dumps(search["parameters"])
    assert "\n" not in search["description"]
    # the standard set is untouched
    full = {t.name: t for t in standard.build_request().tools}["conversation_search"]
    assert "start_date" in full.parameters["properties"]


def test_a_compact_tool_runs_as_before_optional_arguments_included() -> None:
    provider = ScriptedProvider([Step(tool_calls=[("archival_insert", {"content": "Ada's cat is Pixel",
                                                                        "tags": ["pets"]})]),
                                 Step(tool_calls=[("archival_search", {"query": "cat", "page": 0})]), "Pixel."])
    agent = Agent.create("sam", provider=provider, settings=AgentSettings(prompts="compact"))
    events = list(agent.turn("what is my cat called?"))
    results = [e for e in events if type(e).__name__ == "ToolCallFinished"]
    assert [r.is_error for r in results] == [False, False]
    assert "Pixel" in results[1].result
    # the same schema object every call, so the providers' encoded-once caches hold
    assert agent.build_request().tools[0] is agent.build_request().tools[0]


def test_the_prompt_set_is_kept_and_chosen_on_the_command_line(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["new", "small", "--model", "scripted/demo", "--prompts", "compact"]) == 0
    agent = Agent.load("small", read_only=True)
    assert agent.settings.prompts == "compact"
    assert "save it at once with core_memory_append" in agent.system_prompt()


def test_a_prompt_dir_still_overrides_the_compact_set(tmp_path: Path) -> None:
    (tmp_path / "system.j2").write_text("Mine, word for word.")
    agent = Agent.create("mine", model="scripted/demo",
                         settings=AgentSettings(prompts="compact", prompt_dir=str(tmp_path)))
    prompt = agent.system_prompt()
    assert prompt.startswith("Mine, word for word.")
    assert "<description>" not in prompt  # the compact blocks template still applies
