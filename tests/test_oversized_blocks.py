"""Issue 39, item 4: a block over its limit (or too big for the window) never locks the agent out. The import report
names it; the prompt shows it cut, with a notice telling the model how to shorten it; the stored block stays whole;
`agentos memory NAME set` fixes it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentos import Agent
from agentos.agent.agent import open_store
from agentos.agent.shown_blocks import BlockRoom, shown_lengths
from agentos.blocks import Block
from agentos.cli import main
from agentos.portable.letta_import import import_af
from agentos.providers import ScriptedProvider, Step
from agentos.tokens import EstimateCounter

HUGE = 5_000_000
NOTICE = "[agentos: this block was cut from"


def write_af(tmp_path: Path, blocks: list[tuple[str, str, int]], window: int = 128_000) -> Path:
    """A Letta v2 file with one agent, "tiny", holding `blocks` (label, value, limit)."""
    raw = [{"id": f"block-{i}", "label": label, "value": value, "limit": limit, "read_only": False}
           for i, (label, value, limit) in enumerate(blocks)]
    tiny: dict[str, Any] = {
        "id": "agent-0", "name": "tiny", "system": "You are tiny.", "agent_type": "letta_v1_agent",
        "llm_config": {"model": "gpt-4o-mini", "model_endpoint_type": "openai", "context_window": window},
        "block_ids": [b["id"] for b in raw], "tool_ids": [], "messages": [], "in_context_message_ids": []}
    data = {"agents": [tiny], "groups": [], "blocks": raw, "files": [], "sources": [], "tools": [], "mcp_servers": [],
            "metadata": {}, "created_at": "2025-11-21T03:05:34+00:00"}
    path = tmp_path / "tiny.af"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def text(size: int, word: str) -> str:
    """`size` characters of distinct lines, so any cut is visible."""
    lines, length = [], 0
    while length < size:
        lines.append(f"{word} {len(lines)}.\n")
        length += len(lines[-1])
    return "".join(lines)[:size]


def turn(name: str, say: str = "hello") -> tuple[list[Any], str]:
    """One turn of agent `name` with a scripted reply: its events and the system prompt the provider received."""
    provider = ScriptedProvider(["Hi."])
    agent = Agent.load(name, provider=provider)
    try:
        events = list(agent.turn(say))
    finally:
        agent.close()
    return events, provider.requests[0].system


def test_blocks_over_their_limit_are_reported_on_import_shown_cut_and_fixed_by_memory_set(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    big, notes, rules = text(HUGE, "huge"), text(28_927, "note"), text(22_427, "rule")
    path = write_af(tmp_path, [("persona", "I am tiny.", 5_000), ("big", big, 20_000), ("notes", notes, 10_000),
                               ("rules", rules, 5_000)])
    assert main(["import", str(path)]) == 0
    out = capsys.readouterr().out
    for label, size, limit in (("big", "5,000,000", "20,000"), ("notes", "28,927", "10,000"),
                               ("rules", "22,427", "5,000")):
        assert (f'  warning: block "{label}" holds {size} characters, over its limit of {limit}: it is kept whole, '
                f"and the model sees its first {limit} characters with a note asking it to shorten the block. Shorten it "
                f"yourself with `agentos memory tiny set {label} @FILE`, or raise its limit in the file and import it "
                f"again.") in out, label
    assert out.count('  warning: block "') == 3  # persona is within its limit

    events, system = turn("tiny")
    assert events[-1].type == "turn_finished"
    assert len(system) < 60_000  # not 5 MB: each block at most its limit
    assert f"{big[:20_000]}\n{NOTICE} 5,000,000 to 20,000 characters for this prompt because it is over its limit " \
           f"of 20,000. The rest is stored but hidden from you: shorten it with core_memory_replace (an empty " \
           f"new_content deletes text) and the rest comes into view.]" in system
    assert '<big chars="5000000" limit="20000">' in system  # the block's real size
    assert f"{notes[:10_000]}\n{NOTICE} 28,927 to 10,000 characters" in system
    assert f"{rules[:5_000]}\n{NOTICE} 22,427 to 5,000 characters" in system
    assert system.count(NOTICE) == 3
    assert len(Agent.load("tiny", read_only=True).block("big").value) == HUGE  # stored whole

    fixed = tmp_path / "big.txt"
    fixed.write_text(big[:1_000], encoding="utf-8")
    assert main(["memory", "tiny", "set", "big", f"@{fixed}"]) == 0
    out = capsys.readouterr().out
    assert 'Set block "big": 5,000,000 -> 999 characters (logged as your edit).' in out
    assert "It fits now: the model sees all of it again." in out
    events, system = turn("tiny", "and now?")
    assert events[-1].type == "turn_finished"
    assert f"{big[:999]}\n</value>" in system and system.count(NOTICE) == 2  # notes and rules are still cut


def test_memory_set_that_leaves_a_block_over_its_limit_says_the_model_still_sees_it_cut(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", str(write_af(tmp_path, [("notes", text(28_927, "note"), 10_000)]))]) == 0
    assert main(["memory", "tiny", "set", "notes", text(12_000, "note")]) == 0
    out = capsys.readouterr().out
    assert "[notes] 12000/10000 chars, 2,000 over its limit: the model sees it cut until it is shortened" in out
    assert ("The model still sees it cut to 10,000 characters: it is over its limit of 10,000. Shorten it further to "
            "show all of it.") in out
    assert main(["show", "tiny"]) == 0
    assert "[notes] 12000/10000 chars, 2,000 over its limit" in capsys.readouterr().out


def test_blocks_within_their_limits_but_too_big_for_the_window_are_cut_to_fit_and_the_turn_runs(
        tmp_path: Path) -> None:
    notes = text(80_000, "the deploy of a service")
    path = write_af(tmp_path, [("persona", "I am tiny.", 5_000), ("notes", notes, 100_000)], window=8_192)
    [report] = import_af(open_store(), path)
    [warning] = [w for w in report.warnings if w.startswith('block "notes"')]
    assert "holds 80,000 characters, more than the 8,192-token context window has room for" in warning
    assert "or give it a larger window (agentos window tiny TOKENS)" in warning
    events, system = turn("tiny")
    assert [e.type for e in events if e.type in ("turn_failed", "turn_finished")] == ["turn_finished"]
    assert "because the context window has no room for more" in system
    assert "I am tiny.\n</value>" in system  # the small block is whole: the largest is cut
    assert len(Agent.load("tiny", read_only=True).block("notes").value) == 80_000


def test_the_model_shortens_an_over_limit_block_and_the_notice_follows_its_size() -> None:
    rules = text(6_000, "rule")
    first = rules[: rules.index("\n") + 1]
    provider = ScriptedProvider([
        Step(tool_calls=[("core_memory_append", {"label": "rules", "content": "one more"})]),
        Step(tool_calls=[("core_memory_replace", {"label": "rules", "old_content": first, "new_content": ""})]),
        "Shortened."])
    agent = Agent.create("sam", provider=provider, blocks=[Block(label="rules", value=rules, limit=5_000)])
    events = list(agent.turn("tidy your rules"))
    results = [e for e in events if e.type == "tool_call_finished"]
    assert results[0].is_error and "over its limit of 5,000" in results[0].result  # growing it is refused
    assert not results[1].is_error  # shortening is allowed, though still over the limit
    assert agent.block("rules").value == rules[len(first):]
    assert f"{NOTICE} 6,000 to 5,000 characters" in provider.requests[0].system
    assert f"{NOTICE} {6_000 - len(first):,} to 5,000 characters" in provider.requests[2].system


def test_a_read_only_block_cut_asks_the_model_to_have_the_user_shorten_it() -> None:
    provider = ScriptedProvider(["ok"])
    agent = Agent.create("sam", provider=provider,
                         blocks=[Block(label="law", value="x" * 300, limit=100, read_only=True)])
    list(agent.turn("hi"))
    assert ("it is read-only to you, so ask the user to shorten it (agentos memory set).]"
            in provider.requests[0].system)


def test_the_window_share_cuts_the_largest_blocks_first() -> None:
    blocks = [Block(label="a", value="a" * 100, limit=10_000), Block(label="b", value="b" * 9_000, limit=10_000),
              Block(label="c", value="c" * 5_000, limit=10_000)]
    counter = EstimateCounter(0.25)
    lengths = shown_lengths(blocks, BlockRoom(2_000, counter))
    assert lengths[0] == 100 and lengths[1] == lengths[2] < 5_000
    shown = sum(counter.count(b.value[:n]) for b, n in zip(blocks, lengths, strict=True))
    assert 1_500 < shown <= 2_000
    assert shown_lengths(blocks, None) == [100, 9_000, 5_000]
