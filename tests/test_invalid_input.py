"""Invalid text and deeply nested arguments, from users and models: clear tool errors, nothing lost, never a
failed save. Then a property test of random tool calls: no exception escapes a turn, and the agent reloads."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentos import Agent
from agentos.memory.archival import ArchivalTier
from agentos.providers import ScriptedProvider, Step
from agentos.text import REPLACEMENT, valid_text
from tests.processes import REPO, env_for

LONE = "\ud800"


def test_lone_surrogates_from_user_and_model_are_saved_as_replacement_characters() -> None:
    provider = ScriptedProvider([
        Step(tool_calls=[("core_memory_append", {"label": "human", "content": f"likes {LONE}tea"}),
                         ("archival_insert", '{"content": "note \\udc80 here"}')]),  # the escape a model sends
        f"Noted {LONE}.",
    ])
    agent = Agent.create("sam", provider=provider)
    events = list(agent.turn(f"hello {LONE} there"))
    assert events[-1].type == "turn_finished", events[-1]
    assert [e.is_error for e in events if e.type == "tool_call_finished"] == [False, False]
    agent.close()

    again = Agent.load("sam", provider=ScriptedProvider([]))
    context = [m.content for m in again.state.context]
    assert context[0] == f"hello {REPLACEMENT} there" and context[-1] == f"Noted {REPLACEMENT}."
    assert again.state.block("human").value.endswith(f"likes {REPLACEMENT}tea")
    found = again.tier(ArchivalTier).search("note here")
    assert [h.text for h in found.hits] == [f"note {REPLACEMENT} here"]
    assert again.memory_edits()[-1].new_value.endswith(f"likes {REPLACEMENT}tea")


def test_arguments_nested_thousands_deep_are_a_tool_error_and_the_turn_goes_on() -> None:
    provider = ScriptedProvider([Step(tool_calls=[("archival_insert", "[" * 5000), ("archival_insert", '{"a":' * 150 + "1" + "}" * 150)]),
                                 "Sorry."])
    agent = Agent.create("sam", provider=provider)
    events = list(agent.turn("store this"))
    results = [e.result for e in events if e.type == "tool_call_finished"]
    assert results == ["Error: the arguments for archival_insert are nested too deeply (more than 100 levels). "
                       "Send a flat JSON object."] * 2
    assert events[-1].type == "turn_finished"
    agent.close()
    assert Agent.load("sam", provider=ScriptedProvider([])).state.message_count == 5


def test_valid_text_keeps_valid_strings_as_they_are() -> None:
    text = "plain, ünïcödé, 日本語, 😀, and \x00 NUL"
    assert valid_text(text) is text
    assert valid_text("a\udfffb\ud83d") == f"a{REPLACEMENT}b{REPLACEMENT}"


def test_chat_with_invalid_utf8_on_stdin_answers_every_line(agentos_home: Path) -> None:
    Agent.create("bob", model="scripted/demo").close()
    done = subprocess.run([sys.executable, "-m", "agentos.cli", "chat", "bob"], input=b"hello \xff\xfe there\nmy name is Ada\n",
                          capture_output=True, cwd=REPO, env=env_for(agentos_home), timeout=120)
    out = done.stdout.decode()
    assert done.returncode == 0 and b"unexpected" not in done.stderr, done.stderr
    assert "Nice to meet you, Ada!" in out
    agent = Agent.load("bob", read_only=True, with_model=False)
    assert agent.state.context[0].content == f"hello {REPLACEMENT}{REPLACEMENT} there"


def test_a_reader_that_stops_early_is_not_an_error(agentos_home: Path) -> None:
    Agent.create("bob", model="scripted/demo").close()
    done = subprocess.run(f"{sys.executable} -m agentos.cli show bob | head -c 5", shell=True, capture_output=True,
                          text=True, cwd=REPO, env=env_for(agentos_home), timeout=120)
    assert done.stdout == "Agent" and done.stderr == ""


# -- random tool calls --------------------------------------------------------------------------

ODD = ["\ud800", "\udfff", "\x00", "\ufffd", "😀", "\\", '"', "'", "\n", "%", "' OR '1'='1"]
text = st.lists(st.one_of(st.text(max_size=12), st.sampled_from(ODD)), max_size=6).map("".join)
scalar = st.one_of(text, st.integers(), st.floats(allow_nan=False), st.booleans(), st.none())
value = st.recursive(scalar, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                     st.dictionaries(text, inner, max_size=3)), max_leaves=8)
PARAMS = ["label", "content", "old_content", "new_content", "query", "page", "tags", "start_date", "end_date", "roles"]
arguments = st.one_of(
    st.dictionaries(st.sampled_from(PARAMS), value, max_size=4).map(json.dumps),  # right names, any types
    st.dictionaries(text, value, max_size=3).map(json.dumps),  # wrong names
    st.integers(1, 3000).map(lambda n: "[" * n),  # deep nesting
    text,  # not JSON at all
    st.sampled_from(["x" * 120_000, json.dumps({"content": "y" * 120_000}), json.dumps({"query": "z" * 50_000})]),
)
TOOLS = ["core_memory_append", "core_memory_replace", "archival_insert", "archival_search", "conversation_search"]
tool_call = st.tuples(st.one_of(st.sampled_from(TOOLS), text), arguments)


def test_random_tool_calls_never_break_a_turn_and_the_agent_reloads() -> None:
    """250 turns of 4 calls each (1,000 calls a run) on one agent, reloaded every 50 turns."""
    held = {"agent": Agent.create("fuzz", provider=ScriptedProvider([])), "turns": 0}

    @settings(max_examples=250, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(calls=st.lists(tool_call, min_size=4, max_size=4), said=text)
    def turn(calls: list[tuple[str, str]], said: str) -> None:
        agent: Agent = held["agent"]  # type: ignore[assignment]
        agent.roles.use("summary", ScriptedProvider(lambda request: "A summary of earlier tool calls."))
        agent.provider.add(Step(tool_calls=list(calls)), "ok")  # type: ignore[attr-defined]
        events = list(agent.turn(said))
        assert events[-1].type == "turn_finished", getattr(events[-1], "error", events[-1].type)[:2000]
        assert sum(e.type == "tool_call_finished" for e in events) == 4
        held["turns"] += 1  # type: ignore[operator]
        if held["turns"] % 50 == 0:  # type: ignore[operator]
            count = agent.state.message_count
            agent.close()
            held["agent"] = again = Agent.load("fuzz", provider=ScriptedProvider([]))
            assert again.state.message_count == count

    turn()
