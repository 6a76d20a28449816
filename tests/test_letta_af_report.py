"""What a Letta import says about what it cannot carry or fit: blocks no agent uses, a stale compiled system
message when the file's `system` is empty, and an agent too big for its context window (with --window on import,
`agentos window` afterwards, and the hint a turn that overflows gives)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from agentos import Agent
from agentos.agent.agent import open_store
from agentos.agent.prompts import PromptRenderer
from agentos.cli import main
from agentos.errors import ContextOverflowError
from agentos.events import TurnFailed
from agentos.portable.letta_import import import_af
from agentos.providers import ScriptedProvider
from agentos.storage import Store

COMPILED_DATE = "The current system date is: November 21, 2025"
METADATA = (f"<memory_metadata>\n- {COMPILED_DATE}\n- Memory blocks were last modified: 2025-11-21 03:05:34 AM "
            f"UTC+0000\n- 0 previous messages between you and the user are stored in recall memory (use tools to "
            f"access them)\n</memory_metadata>")


@pytest.fixture
def store() -> Store:
    return open_store()


def write(tmp_path: Path, data: Any, name: str = "agent.af") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def v2(agents: list[dict[str, Any]], blocks: list[dict[str, Any]]) -> dict[str, Any]:
    return {"agents": agents, "groups": [], "blocks": blocks, "files": [], "sources": [], "tools": [],
            "mcp_servers": [], "metadata": {}, "created_at": "2025-11-21T03:05:34+00:00"}


def agent(index: int, name: str, block_ids: list[str], **fields: Any) -> dict[str, Any]:
    return {"id": f"agent-{index}", "name": name, "system": "You are tiny.", "agent_type": "letta_v1_agent",
            "llm_config": {"model": "gpt-4o-mini", "model_endpoint_type": "openai", "context_window": 16000},
            "block_ids": block_ids, "tool_ids": [], "messages": [], "in_context_message_ids": [], **fields}


def block(index: int, label: str, value: str, limit: int = 20_000) -> dict[str, Any]:
    return {"id": f"block-{index}", "label": label, "value": value, "limit": limit, "read_only": False}


def message(index: int, role: str, text: str) -> dict[str, Any]:
    return {"id": f"message-{index}", "role": role, "content": [{"type": "text", "text": text}],
            "created_at": f"2025-11-21T03:0{index}:00+00:00"}


# -- blocks no imported agent uses ---------------------------------------------------------------


def test_blocks_that_belong_to_no_agent_are_reported_with_their_count_and_size(store: Store, tmp_path: Path) -> None:
    blocks = [block(0, "persona", "I am tiny."), block(1, "human", "Name: Ada"), block(2, "old_notes", "n" * 1_200),
              block(3, "Scratch Pad", "s" * 34), block(4, "beta_notes", "b" * 500)]
    path = write(tmp_path, v2([agent(0, "alpha", ["block-0", "block-1"]), agent(1, "beta", ["block-4"])], blocks))
    [alpha] = import_af(store, path, agent="alpha")
    orphans = [line for line in alpha.not_imported if "belong to no agent" in line]
    assert orphans == ["2 blocks of the file that belong to no agent in it (1,234 characters): old_notes, Scratch Pad"]
    others = [line for line in alpha.not_imported if "not imported now" in line]
    assert others == ["1 block that only agents of the file not imported now use (500 characters): beta_notes; "
                      "import them with --agent NAME or --all"]
    alpha_lines = "\n".join(alpha.lines())
    assert "not imported: 2 blocks of the file that belong to no agent in it" in alpha_lines
    # with every agent imported, only the blocks no agent uses are left out
    both = import_af(open_store(), write(tmp_path, v2([agent(0, "a2", ["block-0"]), agent(1, "b2", ["block-4"])],
                                                      blocks), "both.af"), all_agents=True)
    for report in both:
        assert [line for line in report.not_imported if "block" in line and "agent" in line] == [
            "3 blocks of the file that belong to no agent in it (1,243 characters): human, old_notes, Scratch Pad"]


# -- an empty system field -----------------------------------------------------------------------


@pytest.mark.parametrize("compiled", [
    "\n\n" + METADATA,  # what Letta compiles for an empty system prompt and an agent with no blocks
    f"<memory>\n<persona>\nI am tiny.\n</persona>\n</memory>\n\n{METADATA}",  # blocks in another wrapper
], ids=["metadata-only", "other-wrapper"])
def test_an_empty_system_field_leaves_out_lettas_stale_compiled_message(store: Store, tmp_path: Path,
                                                                        compiled: str) -> None:
    messages = [message(0, "system", compiled), message(1, "user", "hi"),
                message(2, "system", "Note: the user switched to their phone."), message(3, "assistant", "Hello!")]
    tiny = agent(0, "tiny", ["block-0"], system="", messages=messages,
                 in_context_message_ids=[m["id"] for m in messages])
    [report] = import_af(store, write(tmp_path, v2([tiny], [block(0, "persona", "I am tiny.")])))
    assert (report.messages, report.in_context) == (3, 3)  # the later system message is a real one: kept
    assert any("compiled system prompt (system messages: 1)" in line for line in report.not_imported)
    assert "system prompt: agentos's own (the file's system field is empty)" in report.notes
    provider = ScriptedProvider(["Hello again."])
    opened = Agent.load("tiny", store=store, provider=provider)
    list(opened.turn("what day is it?"))
    opened.close()
    request = provider.requests[0]
    assert [m.content for m in request.messages] == ["hi", "Note: the user switched to their phone.", "Hello!",
                                                     "what day is it?"]
    assert COMPILED_DATE not in request.system_static + request.system_dynamic
    assert request.system_static == PromptRenderer().static()


# -- the context window --------------------------------------------------------------------------


def too_big(tmp_path: Path, window: int = 8192) -> Path:
    """An agent whose instructions alone take far more than its file's window of `window` tokens (blocks that do are
    shown cut to fit instead: tests/test_oversized_blocks.py)."""
    notes = " ".join(f"note {i}: the deploy of service {i} happens on day {i % 7}." for i in range(1_400))
    tiny = agent(0, "tiny", ["block-0"], system=f"You are tiny. Remember: {notes}")
    tiny["llm_config"]["context_window"] = window
    return write(tmp_path, v2([tiny], [block(0, "persona", "I am tiny.")]))


def test_an_agent_that_cannot_fit_its_window_is_reported_with_the_percentage_and_the_fix(store: Store,
                                                                                         tmp_path: Path) -> None:
    [report] = import_af(store, too_big(tmp_path))
    breakdown = Agent.load("tiny", store=store, read_only=True).context_breakdown()
    assert breakdown["window"] == 8192 and breakdown["total"] > 2 * 8192
    percent = round(100 * breakdown["total"] / 8192)
    [warning] = report.warnings
    assert f"{breakdown['total']:,} tokens, {percent}% of its 8,192-token context window" in warning
    assert "agentos window tiny TOKENS" in warning and "--window TOKENS" in warning
    assert report.lines()[1] == f"  warning: {warning}"


def test_import_window_sets_the_window_and_the_agent_then_fits(store: Store, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", str(too_big(tmp_path)), "--window", "128000"]) == 0
    out = capsys.readouterr().out
    assert "context window 128,000 tokens (given on import)" in out and "warning" not in out
    opened = Agent.load("tiny", read_only=True)
    assert opened.settings.context_window == 128_000 and opened.window == 128_000


def test_a_native_import_takes_window_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["new", "sam", "--model", "scripted/demo"]) == 0
    assert main(["export", "sam", "-o", str(tmp_path / "sam.agentos")]) == 0
    assert main(["import", str(tmp_path / "sam.agentos"), "--name", "sam2", "--window", "50000"]) == 0
    assert Agent.load("sam2", read_only=True).settings.context_window == 50_000
    assert "context window: 50,000 tokens" in capsys.readouterr().out


def test_the_window_command_shows_and_changes_an_agents_window(store: Store, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    import_af(store, too_big(tmp_path))
    capsys.readouterr()
    assert main(["window", "tiny"]) == 0
    shown = capsys.readouterr().out
    assert "8,192 tokens (this agent's setting)" in shown and "does not fit" in shown
    assert main(["window", "tiny", "64000"]) == 0
    changed = capsys.readouterr().out
    assert "64,000 tokens (this agent's setting; it was 8,192)" in changed
    assert re.search(r"the next request takes [\d,]+ tokens, \d+% of it", changed)
    assert Agent.load("tiny", read_only=True).settings.context_window == 64_000
    assert main(["window", "tiny", "default"]) == 0
    assert Agent.load("tiny", read_only=True).settings.context_window is None
    assert "model catalogue" in capsys.readouterr().out
    assert main(["window", "tiny", "lots"]) == 1
    assert "a number of tokens" in capsys.readouterr().err


def test_a_turn_that_cannot_fit_says_which_window_and_how_to_change_it(store: Store, tmp_path: Path) -> None:
    import_af(store, too_big(tmp_path))
    opened = Agent.load("tiny", store=store, provider=ScriptedProvider(["never sent"]))
    events = list(opened.turn("hello"))
    opened.close()
    [failed] = [e for e in events if isinstance(e, TurnFailed)]
    assert failed.kind == "ContextOverflowError"
    assert "8,192 tokens (this agent's setting)" in failed.error
    assert "agentos window tiny TOKENS" in failed.error


def test_a_provider_overflow_says_which_window_and_how_to_change_it(store: Store, tmp_path: Path) -> None:
    import_af(store, write(tmp_path, v2([agent(0, "tiny", ["block-0"])], [block(0, "persona", "I am tiny.")])))
    rejected = [ContextOverflowError("the request is longer than gpt-4o-mini's context window.") for _ in range(5)]
    opened = Agent.load("tiny", store=store, provider=ScriptedProvider(rejected))
    events = list(opened.turn("hello"))
    opened.close()
    [failed] = [e for e in events if isinstance(e, TurnFailed)]
    assert failed.kind == "ContextOverflowError"
    assert "16,000 tokens (this agent's setting)" in failed.error
    assert "agentos window tiny TOKENS" in failed.error
