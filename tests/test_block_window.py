"""Blocks cannot crowd the conversation out of a small window, and a person can always edit a block by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentos import Agent
from agentos.agent.state import AgentSettings
from agentos.cli import main
from agentos.providers import ScriptedProvider, Step

SMALL = AgentSettings(context_window=2_500)


def test_an_edit_that_would_push_the_fixed_prompt_past_the_safe_share_is_a_tool_error() -> None:
    fact = "The user likes long walks by the sea and tea with lemon. " * 30
    agent = Agent.create("sam", settings=SMALL, provider=ScriptedProvider([
        Step(tool_calls=[("core_memory_append", {"label": "human", "content": fact})]), "noted"]))
    before = agent.block("human").value
    events = list(agent.turn("remember all this"))
    result = next(e for e in events if e.type == "tool_call_finished")
    assert result.is_error
    assert result.result.startswith("Error: this edit was not made: the fixed part of the prompt (instructions, memory "
                                     "blocks and tool schemas) would take ")
    assert "more than 60% of the 2,500-token context window (1,500), leaving too little room for the conversation" \
        in result.result
    assert result.result.endswith("Shorten a memory block, or keep the details in archival memory instead.")
    assert events[-1].type == "turn_finished"
    assert agent.block("human").value == before  # undone, and nothing logged
    assert agent.memory_edits() == []
    reloaded = Agent.load("sam", provider=ScriptedProvider(["still here"]))
    assert reloaded.block("human").value == before
    assert list(reloaded.turn("hello?"))[-1].type == "turn_finished"


def test_edits_that_shrink_a_block_are_allowed_even_when_the_prompt_is_already_too_big() -> None:
    agent = Agent.create("sam", human="x" * 4_000, provider=ScriptedProvider([]), settings=AgentSettings())
    agent.update_settings(context_window=2_500)  # the window shrank (another model) after the block grew
    edit = agent.set_block("human", "x" * 100)
    assert len(edit.new_value) == 100 and edit.by == "user"


def test_memory_set_from_the_cli_is_logged_as_the_users_edit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    agent = Agent.create("sam", human="y" * 4_000, provider=ScriptedProvider([]))
    agent.close()
    note = tmp_path / "human.txt"
    note.write_text("Name: Sam\nLives in Lisbon\n", encoding="utf-8")
    assert main(["memory", "sam", "set", "human", f"@{note}"]) == 0
    out = capsys.readouterr().out
    assert 'Set block "human": 4,000 -> 25 characters (logged as your edit).' in out
    reloaded = Agent.load("sam", provider=ScriptedProvider([]))
    assert reloaded.block("human").value == "Name: Sam\nLives in Lisbon"
    [edit] = reloaded.memory_edits()
    assert (edit.by, edit.tool_call_id, edit.old_value) == ("user", None, "y" * 4_000)
    reloaded.close()
    assert main(["memory", "sam", "log"]) == 0
    out = capsys.readouterr().out
    assert "[human]  by you (by hand): 4,000 -> 25 chars" in out
    assert "    -" + "y" * 4_000 in out and "    +Name: Sam\n    +Lives in Lisbon" in out


def test_memory_log_shows_each_blocks_edits_as_diffs_with_who_made_them(capsys: pytest.CaptureFixture[str]) -> None:
    provider = ScriptedProvider([Step(tool_calls=[("core_memory_append", {"label": "human", "content": "Likes tea"})]),
                                 "Noted."])
    agent = Agent.create("sam", human="Name: Sam", provider=provider)
    list(agent.turn("I like tea"))
    agent.set_block("persona", "A calm assistant.")
    agent.close()
    assert main(["memory", "sam", "log", "human"]) == 0
    out = capsys.readouterr().out
    assert "[human]  by the model (call-" in out and "    +Likes tea" in out
    assert "    -Name: Sam" not in out  # only what changed: the line kept is not shown
    assert "[persona]" not in out  # only the block asked for
    assert main(["memory", "sam", "log"]) == 0
    assert "[persona]  by you (by hand)" in capsys.readouterr().out


def test_memory_set_refuses_what_the_window_cannot_hold_and_names_the_problem(capsys: pytest.CaptureFixture[str]) -> None:
    Agent.create("sam", provider=ScriptedProvider([]), settings=SMALL).close()
    assert main(["memory", "sam", "set", "human", "z" * 3_000]) == 1
    err = capsys.readouterr().err
    assert "error: this edit was not made: the fixed part of the prompt" in err
    assert "2,500-token context window" in err
    assert main(["memory", "sam", "set", "nosuch", "hi"]) == 1
    assert 'no memory block labelled "nosuch". Blocks: persona, human.' in capsys.readouterr().err
    assert main(["memory", "sam", "set", "human", "@/nonexistent/file.txt"]) == 1
    assert "could not read /nonexistent/file.txt" in capsys.readouterr().err


def test_a_user_can_set_a_block_the_agent_may_not_edit() -> None:
    from agentos.blocks import Block

    agent = Agent.create("sam", provider=ScriptedProvider([]),
                         blocks=[Block(label="rules", value="Be brief.", read_only=True)])
    assert agent.set_block("rules", "Be brief and kind.").new_value == "Be brief and kind."
    assert Agent.load("sam", read_only=True).block("rules").value == "Be brief and kind."
