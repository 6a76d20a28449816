"""System prompt rendering: order, sizes, a user's own prompt directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentos import Agent
from agentos.agent.state import AgentSettings
from agentos.blocks import Block
from agentos.errors import ConfigError
from agentos.providers import ScriptedProvider


def test_order_static_then_blocks_then_metadata() -> None:
    agent = Agent.create("sam", provider=ScriptedProvider([]), persona="P", human="H",
                         blocks=[Block(label="goals", value="ship it", limit=50, description="What we aim for.")])
    prompt = agent.system_prompt()
    static = agent.prompts.static()
    assert prompt.startswith(static)
    assert prompt.index("<persona") < prompt.index("<human") < prompt.index("<goals") < prompt.index("<memory_metadata>")
    assert '<goals chars="7" limit="50">\n<description>What we aim for.</description>\n<value>\nship it\n</value>' in prompt
    assert "Recall memory: all of this conversation is still in your context." in prompt
    assert "Passages in archival memory: 0" in prompt


def test_user_prompt_directory_overrides_templates(tmp_path: Path) -> None:
    (tmp_path / "system.j2").write_text("You are Pirate Bot. Arr.")
    (tmp_path / "human.j2").write_text("A landlubber.")
    agent = Agent.create("sam", provider=ScriptedProvider([]), settings=AgentSettings(prompt_dir=str(tmp_path)))
    prompt = agent.system_prompt()
    assert prompt.startswith("You are Pirate Bot. Arr.\n\n<memory_blocks>")
    assert agent.block("human").value == "A landlubber."
    assert "<memory_metadata>" in prompt  # templates it does not override come from the built-ins


def test_missing_prompt_directory_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="prompt directory .* does not exist"):
        Agent.create("sam", provider=ScriptedProvider([]), settings=AgentSettings(prompt_dir=str(tmp_path / "nope")))


def test_broken_template_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "system.j2").write_text("{% if %}")
    agent = Agent.create("sam", provider=ScriptedProvider([]), settings=AgentSettings(prompt_dir=str(tmp_path)))
    with pytest.raises(ConfigError, match="prompt template 'system.j2' is invalid"):
        agent.system_prompt()
