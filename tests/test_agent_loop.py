"""The turn loop with the scripted provider: memory edits, tool failures, step limits, failures."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest

from agentos import Agent, tool
from agentos.agent.state import AgentSettings
from agentos.blocks import Block
from agentos.errors import RateLimitError
from agentos.providers import ScriptedProvider, Step
from tests.helpers import of_type, types


def make(steps, **kwargs) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedProvider(steps)
    agent = Agent.create("sam", provider=provider, persona="I am Sam.", human="Nothing yet.", **kwargs)
    return agent, provider


def test_memory_edits_reach_the_next_system_prompt() -> None:
    agent, provider = make(
        [
            Step(tool_calls=[("core_memory_append", {"label": "human", "content": "Name: Ada"})]),
            Step(tool_calls=[("core_memory_replace", {"label": "human", "old_content": "Nothing yet.",
                                                      "new_content": "Likes tea."})]),
            "Nice to meet you, Ada.",
            "Hello again.",
        ]
    )
    events = list(agent.turn("Hi, I'm Ada and I like tea."))
    assert types(events) == [
        "usage", "tool_call_started", "memory_edited", "tool_call_finished", "step_saved",
        "usage", "tool_call_started", "memory_edited", "tool_call_finished", "step_saved",
        "text_delta", "text_delta", "usage", "step_saved", "turn_finished",
    ]
    assert [e.rev for e in of_type(events, "step_saved")] == [1, 2, 3]
    edits = of_type(events, "memory_edited")
    assert [(e.label, e.old_value, e.new_value) for e in edits] == [
        ("human", "Nothing yet.", "Nothing yet.\nName: Ada"),
        ("human", "Nothing yet.\nName: Ada", "Likes tea.\nName: Ada"),
    ]
    assert events[-1].reply.content == "Nice to meet you, Ada."
    list(agent.turn("Bye"))
    # The request after the edits carries the edited block in its system prompt.
    after = provider.requests[2].system
    assert "<value>\nLikes tea.\nName: Ada\n</value>" in after
    assert "Nothing yet." not in after
    assert "Likes tea.\nName: Ada" in provider.requests[3].system
    assert "Nothing yet." in provider.requests[0].system


def test_edit_records_are_persisted_with_their_tool_call() -> None:
    agent, _ = make([Step(tool_calls=[("core_memory_append", {"label": "human", "content": "Name: Ada"})]), "ok"])
    events = list(agent.turn("I'm Ada"))
    call_id = of_type(events, "tool_call_started")[0].call_id
    edits = agent.store.memory_edits(agent.id)
    assert [(e.label, e.old_value, e.new_value, e.tool_call_id) for e in edits] == [
        ("human", "Nothing yet.", "Nothing yet.\nName: Ada", call_id)
    ]
    assert agent.state.last_memory_edit_at == edits[0].at


def test_static_prompt_is_byte_identical_and_metadata_changes_only_with_memory(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import agentos.agent.requests as agent_module

    clock = iter(datetime(2026, 12, 1, 18, minute, tzinfo=UTC) for minute in range(10, 60))
    monkeypatch.setattr(agent_module, "utc_now", lambda: next(clock))  # calls minutes apart, within one hour
    agent, provider = make([Step(tool_calls=[("core_memory_append", {"label": "human", "content": "x"})]), "a", "b"])
    list(agent.turn("one"))
    list(agent.turn("two"))
    statics = {r.system_static for r in provider.requests}
    assert len(statics) == 1
    first, after_edit, next_turn = (r.system_dynamic for r in provider.requests)
    assert "Last memory edit: never" in first and "Last memory edit: never" not in after_edit
    assert "Recall memory: all of this conversation is still in your context.\n" in first
    assert re.search(r"Current hour: 2026-12-0[12] \d\d:00 \S+ \(\w+\)\n", first)  # to the hour, and said so
    assert next_turn == after_edit  # an ordinary turn changes nothing before the conversation: caches reuse it
    assert provider.requests[0].system.index("<memory_blocks>") > provider.requests[0].system.index("Never mention")


def test_the_system_prompt_is_rendered_once_per_step_and_again_only_after_a_change() -> None:
    agent, provider = make([Step(tool_calls=[("core_memory_append", {"label": "human", "content": "x"})]), "a", "b"],
                           settings=AgentSettings(context_window=100_000))
    renders: list[str] = []
    real = agent.prompts.dynamic

    def dynamic(*args, **kwargs) -> str:
        renders.append(real(*args, **kwargs))
        return renders[-1]

    agent.prompts.dynamic = dynamic  # type: ignore[method-assign]
    list(agent.turn("one"))  # two steps: a memory edit, then the reply
    sent = [r.system_dynamic for r in provider.requests]
    assert len(renders) == 3 and [renders[0], renders[2]] == sent  # the middle one: the edit's check of the window
    # the next call is over the warning line (75%): an alert joins the context
    agent.update_settings(context_window=int(agent.last_usage.input_tokens / 0.8))
    renders.clear()
    events = list(agent.turn("two"))
    assert "notice" in types(events)
    assert len(renders) == 2 and provider.requests[-1].system_dynamic == renders[-1]  # rebuilt once after the alert


def test_several_tool_calls_in_one_response_run_in_order() -> None:
    seen: list[str] = []

    @tool
    def note(text: str) -> str:
        """Remember a word.

        Args:
            text: The word.
        """
        seen.append(text)
        return f"noted {text}"

    agent, provider = make([Step(tool_calls=[("note", {"text": "a"}), ("note", {"text": "b"}), ("note", {"text": "c"})]),
                            "done"], tools=[note])
    events = list(agent.turn("go"))
    assert seen == ["a", "b", "c"]
    assert [e.result for e in of_type(events, "tool_call_finished")] == ["noted a", "noted b", "noted c"]
    roles = [m.role for m in provider.requests[1].messages]
    assert roles == ["user", "assistant", "tool", "tool", "tool"]


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (("shout", {"text": "x"}), 'Error: unknown tool "shout". Tools you can call: archival_insert, archival_search, conversation_search, core_memory_append, core_memory_replace. Call a tool by its name with its arguments, for example: {"name": "archival_insert", "arguments": {"content": "..."}}.'),
        (("core_memory_append", '{"label": "human", '),
         "Error: the arguments for core_memory_append are not valid JSON (Expecting property name enclosed in "
         "double quotes at position 18). Send one JSON object."),
        (("core_memory_append", {"label": "human"}),
         "Error: invalid arguments for core_memory_append: content: missing required argument."),
        (("core_memory_append", {"label": 5, "content": "x"}),
         "Error: invalid arguments for core_memory_append: label: Input should be a valid string."),
        (("core_memory_replace", {"label": "human", "old_content": "absent", "new_content": "y"}),
         'Error: old_content was not found in block "human". Copy the exact text from the block.'),
        (("core_memory_append", {"label": "persona", "content": "x" * 6000}),
         'Error: this edit would make block "persona" 6,010 characters, 1,010 over its limit of 5,000. '
         "Shorten or remove something first."),
        (("core_memory_append", {"label": "rules", "content": "x"}),
         'Error: block "rules" is read-only and cannot be edited.'),
    ],
)
def test_tool_failures_go_back_to_the_model_and_the_turn_goes_on(call, expected) -> None:
    agent, provider = make([Step(tool_calls=[call]), "Sorry, let me fix that."],
                           blocks=[Block(label="rules", value="Be kind.", read_only=True)])
    events = list(agent.turn("do it"))
    finished = of_type(events, "tool_call_finished")[0]
    assert finished.is_error
    assert finished.result == expected
    tool_message = provider.requests[1].messages[-1]
    assert (tool_message.role, tool_message.content, tool_message.is_error) == ("tool", expected, True)
    assert events[-1].type == "turn_finished"
    assert events[-1].reply.content == "Sorry, let me fix that."
    assert not of_type(events, "memory_edited")


def test_exception_inside_a_user_tool_goes_back_to_the_model() -> None:
    @tool
    def fragile(n: int) -> float:
        """Divide one by n.

        Args:
            n: The divisor.
        """
        return 1 / n

    agent, provider = make([Step(tool_calls=[("fragile", {"n": 0})]), "oops"], tools=[fragile])
    events = list(agent.turn("divide"))
    assert of_type(events, "tool_call_finished")[0].result == "Error: fragile failed: ZeroDivisionError: division by zero"
    assert events[-1].type == "turn_finished"


def test_max_steps_bounds_a_looping_model() -> None:
    loop = Step(tool_calls=[("core_memory_append", {"label": "human", "content": "again"})])
    agent, provider = make([loop] * 10, settings=AgentSettings(max_steps=3))
    events = list(agent.turn("loop"))
    assert events[-1].type == "turn_failed"
    assert events[-1].kind == "MaxStepsExceeded"
    assert events[-1].error == "stopped after 3 steps without a final reply (max_steps=3)."
    assert len(provider.requests) == 3
    # the context is still valid: every call has its result
    roles = [m.role for m in agent.context]
    assert roles == ["user"] + ["assistant", "tool"] * 3


def test_provider_failure_ends_the_turn_and_keeps_the_user_message() -> None:
    agent, provider = make([RateLimitError("slow down"), "back again"])
    events = list(agent.turn("hello?"))
    assert events[-1].type == "turn_failed"
    assert (events[-1].kind, events[-1].error) == ("RateLimitError", "slow down")
    assert [m.content for m in agent.context] == ["hello?"]
    reloaded = Agent.load("sam", provider=provider)
    assert [m.content for m in reloaded.context] == ["hello?"]
    events = list(reloaded.turn("anyone?"))
    assert events[-1].type == "turn_finished"
    assert [m.content for m in provider.requests[-1].messages] == ["hello?", "anyone?"]


def test_script_exhaustion_is_a_clear_turn_failure() -> None:
    agent, provider = make(["only one"])
    list(agent.turn("one"))
    events = list(agent.turn("two"))
    assert events[-1].type == "turn_failed"
    assert events[-1].error == (
        "the scripted provider ran out of steps: it was called 2 times but its script has 1 steps"
    )


def test_text_streams_as_deltas_that_add_up_to_the_reply() -> None:
    text = "A longer reply that arrives in several pieces over the stream."
    agent, _ = make([text])
    events = list(agent.turn("talk"))
    deltas = of_type(events, "text_delta")
    assert len(deltas) > 1
    assert "".join(d.text for d in deltas) == text == events[-1].reply.content


def test_closing_the_turn_midway_leaves_a_consistent_saved_agent() -> None:
    agent, provider = make([Step("thinking", tool_calls=[("core_memory_append", {"label": "human", "content": "A"}),
                                                           ("core_memory_append", {"label": "human", "content": "B"})]),
                            "after"])
    turn = agent.turn("go")
    for event in turn:
        if event.type == "tool_call_started":
            break
    turn.close()  # what Ctrl-C in the REPL does
    roles = [m.role for m in agent.context]
    assert roles == ["user", "assistant", "tool", "tool"]
    assert all(m.is_error and "cancelled" in m.content for m in agent.context[2:])
    reloaded = Agent.load("sam", provider=provider)
    assert [m.id for m in reloaded.context] == [m.id for m in agent.context]
    assert list(reloaded.turn("again"))[-1].type == "turn_finished"


def test_keyboard_interrupt_inside_a_tool_is_contained() -> None:
    @tool
    def slow(n: int) -> str:
        """Pretend to work.

        Args:
            n: Ignored.
        """
        raise KeyboardInterrupt

    agent, provider = make([Step(tool_calls=[("slow", {"n": 1})]), "done"], tools=[slow])
    with pytest.raises(KeyboardInterrupt):
        list(agent.turn("go"))
    assert [m.role for m in agent.context] == ["user", "assistant", "tool"]
    reloaded = Agent.load("sam", provider=provider)
    assert [m.role for m in reloaded.context] == ["user", "assistant", "tool"]


def test_tool_call_arguments_are_recorded_verbatim() -> None:
    agent, provider = make([Step(tool_calls=[("core_memory_append", '{"label":"human","content":"Z"}')]), "ok"])
    list(agent.turn("x"))
    call = provider.requests[1].messages[1].tool_calls[0]
    assert json.loads(call.arguments) == {"label": "human", "content": "Z"}
