"""Tool calls that local models write as text run as tool calls, through the real OpenAI SDK over a mock
transport, as llama.cpp's and Ollama's OpenAI-compatible servers send them."""

from __future__ import annotations

import json

import pytest
from mock_api import MockAPI, oa_delta, oa_sse, oa_text_reply, oa_usage, sse_response

from agentos.agent.agent import Agent
from agentos.agent.state import AgentSettings
from agentos.agent.text_calls import CallWatch, parse_text_calls
from agentos.events import TextDelta, ToolCallFinished
from agentos.providers import ScriptedProvider
from agentos.providers.openai_provider import OpenAIProvider
from agentos.providers.retry import RetryPolicy
from agentos.providers.scripted import Step

pytestmark = pytest.mark.usefixtures("allow_real_providers")

APPEND = {"name": "core_memory_append", "arguments": {"label": "human", "content": "Ada loves hiking."}}
FORMS = {
    "fenced": "```json\n" + json.dumps(APPEND) + "\n```",
    "bare": json.dumps(APPEND),
    "parameters": json.dumps({"name": "core_memory_append", "parameters": APPEND["arguments"]}),
    "tagged": "<tool_call>\n" + json.dumps(APPEND) + "\n</tool_call>",
    "list": json.dumps([APPEND]),
    "lead-in": "I'll remember that.\n```json\n" + json.dumps(APPEND) + "\n```",
    "function": json.dumps({"type": "function", "function": {"name": "core_memory_append",
                                                              "arguments": json.dumps(APPEND["arguments"])}}),
}


def _reply(text: str, pieces: int) -> bytes:
    """A streamed reply of `text` in `pieces` deltas (1: the whole text in one chunk, as some servers do)."""
    size = max(1, -(-len(text) // pieces))
    chunks = [oa_delta({"role": "assistant", "content": ""})]
    chunks += [oa_delta({"content": text[i:i + size]}) for i in range(0, len(text), size)]
    return oa_sse(*chunks, oa_delta({}, "stop"), oa_usage(300, 20))


def _agent(api: MockAPI, family: str = "llamacpp", **settings: object) -> Agent:
    provider = OpenAIProvider("qwen2.5-0.5b", family=family, base_url="http://mock/v1", api_key="sk-test",
                              http_client=api.client(), retry=RetryPolicy(max_retries=0, sleep=lambda s: None))
    return Agent.create("ada", provider=provider, settings=AgentSettings(**settings))  # type: ignore[arg-type]


@pytest.mark.parametrize("pieces", [1, 7])
@pytest.mark.parametrize("form", sorted(FORMS))
def test_a_tool_call_written_as_text_runs_and_the_block_changes(form: str, pieces: int) -> None:
    api = MockAPI(sse_response(_reply(FORMS[form], pieces)), sse_response(oa_text_reply("Noted, Ada!")))
    agent = _agent(api)
    events = list(agent.turn("I love hiking"))
    shown = "".join(e.text for e in events if e.type == "text_delta")
    assert agent.block("human").value.endswith("Ada loves hiking.")
    [started] = [e for e in events if e.type == "tool_call_started"]
    assert started.name == "core_memory_append"
    assert "core_memory_append" not in shown and "```" not in shown  # seen as a tool call, not as a reply
    assert shown.endswith("Noted, Ada!") and events[-1].type == "turn_finished"
    sent = api.body(1)["messages"]  # the next request carries it as a native call and its result
    assert sent[-2]["tool_calls"][0]["function"]["name"] == "core_memory_append"
    assert sent[-1]["role"] == "tool" and "Appended" in sent[-1]["content"]


def test_a_json_example_inside_an_ordinary_answer_does_not_run() -> None:
    answer = ("To store a fact the agent may call a tool. A call looks like this:\n\n```json\n"
              + json.dumps(APPEND) + "\n```\n\nThat is all there is to it, and it only runs when the model sends it.")
    api = MockAPI(sse_response(_reply(answer, 5)))
    agent = _agent(api)
    events = list(agent.turn("how do tool calls look?"))
    assert "".join(e.text for e in events if e.type == "text_delta") == answer  # shown whole, nothing held back
    assert not [e for e in events if e.type == "tool_call_started"]
    assert agent.block("human").value == "Nothing is known about the user yet."


def test_a_block_named_as_a_tool_gets_a_hint_with_the_right_calls() -> None:
    near_miss = json.dumps({"name": "human", "content": "Ada"})
    api = MockAPI(sse_response(_reply(near_miss, 3)), sse_response(oa_text_reply("ok")))
    agent = _agent(api)
    events = list(agent.turn("my name is Ada"))
    [finished] = [e for e in events if e.type == "tool_call_finished"]
    assert finished.is_error
    assert finished.result == (
        'Error: "human" is a memory block, not a tool. To change it, call: {"name": "core_memory_append", '
        '"arguments": {"label": "human", "content": "..."}} or {"name": "core_memory_replace", "arguments": '
        '{"label": "human", "old_content": "...", "new_content": "..."}}. Tools you can call: archival_insert, '
        "archival_search, conversation_search, core_memory_append, core_memory_replace.")


def test_an_unknown_tool_with_arguments_gets_the_tool_names_and_an_example() -> None:
    api = MockAPI(sse_response(_reply(json.dumps({"name": "core_memory_add", "arguments": {"fact": "x"}}), 1)),
                  sse_response(oa_text_reply("ok")))
    events = list(_agent(api).turn("remember x"))
    [finished] = [e for e in events if e.type == "tool_call_finished"]
    assert finished.result.startswith('Error: unknown tool "core_memory_add". Did you mean "core_memory_append"? '
                                      "Tools you can call: archival_insert, ")
    assert ('for example: {"name": "core_memory_append", "arguments": {"label": "...", "content": "..."}}'
            in finished.result)


def test_json_data_the_user_asked_for_is_shown_not_run() -> None:
    data = json.dumps([{"name": "resnet50", "parameters": {"layers": 50}}, {"name": "vit", "parameters": {"layers": 12}}])
    api = MockAPI(sse_response(_reply(data, 4)))
    events = list(_agent(api).turn("list two models as JSON"))
    assert "".join(e.text for e in events if e.type == "text_delta") == data
    assert not [e for e in events if e.type == "tool_call_started"]


def test_a_parameter_that_looks_like_a_schema_word_is_kept_when_the_tool_has_it() -> None:
    found = parse_text_calls(json.dumps({"name": "create_note", "arguments": {"title": "Milk", "body": "buy"}}),
                             {"create_note": ["title", "body"]})
    assert found is not None and json.loads(found.calls[0].arguments) == {"title": "Milk", "body": "buy"}


def test_other_call_markers_and_several_objects_on_their_own_lines() -> None:
    call = json.dumps(APPEND)
    for text in (f"[TOOL_CALLS] [{call}]", f"<|python_tag|>{call}", f"{call}\n{call}", f"Saving it [now]: {call}",
                 f"<tool_call>\n{call}"):
        found = parse_text_calls(text, {"core_memory_append": ["label", "content"]})
        assert found is not None and {c.name for c in found.calls} == {"core_memory_append"}, text


def test_text_with_a_native_call_is_all_shown() -> None:
    from mock_api import oa_tool

    reply = oa_sse(oa_delta({"role": "assistant", "content": "I'll note {tea} for you."}),
                   oa_delta({"tool_calls": [oa_tool(0, id="c1", name="core_memory_append",
                                                    args=json.dumps({"label": "human", "content": "tea"}))]}),
                   oa_delta({}, "tool_calls"))
    api = MockAPI(sse_response(reply), sse_response(oa_text_reply("Done.")))
    events = list(_agent(api).turn("I like tea"))
    assert "".join(e.text for e in events if e.type == "text_delta") == "I'll note {tea} for you.Done."


def test_a_reply_that_begins_with_a_link_or_a_code_block_streams_at_once() -> None:
    watch = CallWatch(True)
    shown = watch.feed("See [the docs](https://example.org) for ") + watch.feed("the details of this.")
    assert shown.startswith("See [the docs](https://example.org) for the")
    fenced = CallWatch(True)
    assert fenced.feed("```python\nprint(1)\nprint(2)\nprint(3)\n").startswith("```python\nprint(1)\nprint")


def test_schema_leftovers_in_the_arguments_are_dropped() -> None:
    call = {"name": "conversation_search", "arguments": {"query": "hiking", "required": ["query"]}}
    found = parse_text_calls(json.dumps(call), {"conversation_search": ["query", "page"]})
    assert found is not None and json.loads(found.calls[0].arguments) == {"query": "hiking"}


def test_text_calls_are_off_for_openai_unless_the_agent_says_so() -> None:
    api = MockAPI(sse_response(_reply(FORMS["bare"], 2)))
    agent = _agent(api, family="openai")
    events = list(agent.turn("I love hiking"))
    assert "".join(e.text for e in events if e.type == "text_delta") == FORMS["bare"]
    assert agent.block("human").value == "Nothing is known about the user yet."
    api.add(sse_response(_reply(FORMS["bare"], 2)), sse_response(oa_text_reply("ok")))
    agent.update_settings(text_tool_calls=True)
    list(agent.turn("I love hiking"))
    assert agent.block("human").value.endswith("Ada loves hiking.")


def test_the_watch_streams_ordinary_text_at_once_and_holds_only_a_possible_call() -> None:
    watch = CallWatch(True)
    shown = [watch.feed(piece) for piece in ["Hello there, ", "this is an ordinary ", "answer."]]
    assert "".join(shown).startswith("Hello there, this is")  # only a few characters are held, never the reply
    assert "".join(shown) + watch.finish({"x"}, ())[1] == "Hello there, this is an ordinary answer."
    held = CallWatch(True)
    assert held.feed("Sure: {") == "Sure: " and held.feed('"name": "x", "arguments": {}}') == ""
    found, rest = held.finish({"x"}, ())
    assert found is not None and found.calls[0].name == "x" and found.lead_in == "Sure:" and rest == ""


def test_a_server_killed_mid_reply_keeps_the_partial_reply_and_the_conversation_well_formed() -> None:
    import httpx2
    from mock_api import ChunkStream, oa_event

    cut = ChunkStream([oa_event(oa_delta({"role": "assistant", "content": "Hiking is "})),
                       oa_event(oa_delta({"content": "a fine"}))],
                      then=httpx2.RemoteProtocolError("peer closed connection (incomplete chunked read)"))
    api = MockAPI(sse_response(cut), sse_response(oa_text_reply("Yes, go on.")))
    agent = _agent(api)
    events = list(agent.turn("tell me about hiking"))
    [incomplete] = [e for e in events if e.type == "reply_incomplete"]
    assert incomplete.reason == "disconnected" and "the reply was cut off" in incomplete.detail
    assert events[-1].type == "turn_failed"
    assert "".join(e.text for e in events if e.type == "text_delta") == "Hiking is a fine"
    assert [(m.role, m.content) for m in agent.context] == [
        ("user", "tell me about hiking"),
        ("assistant", "Hiking is a fine\n[cut off: the connection was lost before this reply ended]")]
    list(agent.turn("go on"))
    sent = api.body(1)["messages"]
    assert [m["role"] for m in sent[1:]] == ["user", "assistant", "user"]  # not joined to the orphaned question
    reloaded = Agent.load("ada", provider=agent.provider, read_only=True)
    assert [m.content for m in reloaded.context][1].startswith("Hiking is a fine\n[cut off")


def test_local_servers_get_an_output_cap_by_default_and_an_agent_can_set_its_own() -> None:
    api = MockAPI(sse_response(oa_text_reply("hi")), sse_response(oa_text_reply("hi")))
    agent = _agent(api, context_window=4096)
    list(agent.turn("hello"))
    assert api.body(0)["max_tokens"] == 1024  # a quarter of the 4,096-token window
    agent.update_settings(max_output_tokens=300)
    list(agent.turn("hello again"))
    assert api.body(1)["max_tokens"] == 300


@pytest.mark.parametrize("form", ["fenced", "bare", "tagged"])
def test_a_text_call_in_a_whole_non_streamed_completion_runs_too(form: str) -> None:
    """Some servers answer `stream: true` with one JSON completion; its text is read the same way."""
    import httpx2

    completion = {"id": "c1", "object": "chat.completion", "created": 0, "model": "qwen",
                  "choices": [{"index": 0, "finish_reason": "stop",
                               "message": {"role": "assistant", "content": FORMS[form]}}],
                  "usage": {"prompt_tokens": 300, "completion_tokens": 20, "total_tokens": 320}}
    api = MockAPI(httpx2.Response(200, json=completion), sse_response(oa_text_reply("Noted.")))
    agent = _agent(api)
    events = list(agent.turn("I love hiking"))
    assert agent.block("human").value.endswith("Ada loves hiking.")
    assert [e.name for e in events if e.type == "tool_call_started"] == ["core_memory_append"]
    assert events[-1].type == "turn_finished"


def test_a_lenient_whole_completion_without_ids_or_a_finish_reason() -> None:
    import httpx2

    completion = {"choices": [{"message": {"content": "Hello there."}, "finish_reason": None}]}
    api = MockAPI(httpx2.Response(200, json=completion))
    events = list(_agent(api).turn("hi"))
    assert events[-1].type == "turn_finished" and events[-1].reply.content == "Hello there."  # type: ignore[union-attr]


DOUBLED = {  # Qwen2.5's chat template shows the format as {{"name": ..., "arguments": ...}}; the 1.5B copies it
    "object": '{{"name": "core_memory_append", "arguments": {"label": "human", "content": "Name: Ada"}}}',
    "string": '{{"name": "bob__read_memory_blocks", "arguments": "{\\"label\\": \\"human\\"}"}}',
    "tagged": '<tool_call>\n{{"name": "core_memory_append", "arguments": {"label": "human", "content": "Name: Ada"}}}'
              "\n</tool_call>",
}


@pytest.mark.parametrize("form", sorted(DOUBLED))
def test_a_call_in_doubled_braces_copied_from_the_chat_template_is_read(form: str) -> None:
    tools = {"core_memory_append": ["label", "content"], "bob__read_memory_blocks": ["label"]}
    found = parse_text_calls(DOUBLED[form], tools)
    assert found is not None and len(found.calls) == 1
    expected = {"label": "human"} if form == "string" else {"label": "human", "content": "Name: Ada"}
    assert json.loads(found.calls[0].arguments) == expected
    assert parse_text_calls('{{"name": "resnet50", "parameters": {"layers": 50}}}', tools) is None  # no tool's name
    assert parse_text_calls('{{ greeting }} and {{"name": "x"}}', tools) is None


def test_a_doubled_brace_call_streamed_in_pieces_runs() -> None:
    api = MockAPI(sse_response(_reply(DOUBLED["object"], 9)), sse_response(oa_text_reply("Hi Ada!")))
    agent = _agent(api)
    events = list(agent.turn("I'm Ada"))
    assert agent.block("human").value.endswith("Name: Ada")
    assert "".join(e.text for e in events if e.type == "text_delta") == "Hi Ada!"


def test_a_call_followed_by_an_invented_next_turn_runs_without_it() -> None:
    call = '{"name": "core_memory_append", "arguments": {"label": "human", "content": "Likes tea"}}'
    text = call + "\n\nHuman: what do you know about me?\nAssistant: ..."
    api = MockAPI(sse_response(_reply(text, 6)), sse_response(oa_text_reply("Noted.")))
    agent = _agent(api)
    events = list(agent.turn("I like tea"))
    assert agent.block("human").value.endswith("Likes tea")
    assert "".join(e.text for e in events if e.type == "text_delta") == "Noted."  # the invented turn is not shown
    tools = {"core_memory_append": ["label", "content"]}
    for rest in ("\n\nUser: and now?", "<|im_end|>\n<|im_start|>user\nmore", "\n<|im_start|>user\nmore",
                 "<|im_end|>"):
        found = parse_text_calls(call + rest, tools)
        assert found is not None and [c.name for c in found.calls] == ["core_memory_append"], rest
    assert parse_text_calls(call + "\n\nThat is how a call looks; User: is not a role here.", tools) is None


def test_list_arguments_are_taken_as_the_parameters_in_order() -> None:
    text = '{"name": "core_memory_append", "arguments": ["human", "Name: Ada"]}'
    api = MockAPI(sse_response(_reply(text, 3)), sse_response(oa_text_reply("Hi Ada!")))
    agent = _agent(api)
    events = list(agent.turn("I'm Ada"))
    [finished] = [e for e in events if e.type == "tool_call_finished"]
    assert not finished.is_error and agent.block("human").value.endswith("Name: Ada")
    found = parse_text_calls('{"name": "conversation_search", "arguments": ["hiking"]}',
                             {"conversation_search": ["query", "page"]})
    assert found is not None and json.loads(found.calls[0].arguments) == {"query": "hiking"}
    too_long = '{"name": "conversation_search", "arguments": ["hiking", 1, 2]}'
    for tools in ({"conversation_search": ["query", "page"]}, {"conversation_search"}):  # too long; names only
        found = parse_text_calls(too_long, tools)
        assert found is not None and json.loads(found.calls[0].arguments) == {}


def test_a_tool_result_the_model_writes_itself_is_taken_and_answered_never_shown() -> None:
    """Qwen2.5-Coder-1.5B, after a successful core_memory_append, wrote its own result in its template's doubled
    braces as the whole reply (recorded through agentos, 2026-12-05)."""
    recorded = ('{{"name": "tool_response", "arguments": {"response": "Appended to block \\"human\\"; it now has '
                '58 of 5,000 characters."}}}')
    found = parse_text_calls(recorded, {"core_memory_append": ["label", "content"]}, ["human", "persona"])
    assert found is not None and [c.name for c in found.calls] == ["tool_response"]
    provider = ScriptedProvider([recorded, "Got it, Ana."])
    agent = Agent.create("qwen", provider=provider, settings=AgentSettings(text_tool_calls=True))
    events = list(agent.turn("My name is Ana Souza. Please remember it."))
    shown = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert shown == "Got it, Ana." and "tool_response" not in shown
    [result] = [e for e in events if isinstance(e, ToolCallFinished)]
    assert result.is_error and "reply to the user in plain words" in result.result


def test_a_tool_result_in_the_templates_tags_is_answered_never_shown() -> None:
    """The same model, standard prompts: after the call it wrote Qwen's result tags as the reply (2026-12-05)."""
    recorded = '<tool_response> Updated block "human"; it now has 5,000 characters.</tool_response>'
    provider = ScriptedProvider([recorded, "Noted: no peanuts."])
    agent = Agent.create("qwen", provider=provider, settings=AgentSettings(text_tool_calls=True))
    events = list(agent.turn("I'm allergic to peanuts, keep that in mind."))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Noted: no peanuts."
    watch = CallWatch(True)
    assert watch.feed("<tool_resp") == "" and watch.feed("onse> x") == ""  # held back while it streams in


def test_a_call_repeated_in_one_turn_is_not_run_twice_and_the_model_is_told_to_reply() -> None:
    """Qwen2.5-Coder-1.5B with the compact prompts appended the same line after every success until max_steps (20
    steps, each re-reading the grown block; recorded 2026-12-05). The second identical call is not run."""
    same = ("core_memory_append", {"label": "human", "content": "Name: Ana Souza"})
    provider = ScriptedProvider([Step(tool_calls=[same]), Step(tool_calls=[same]), "Saved, Ana."])
    agent = Agent.create("loop", provider=provider)
    events = list(agent.turn("My name is Ana Souza. Please remember it."))
    assert agent.block("human").value.count("Name: Ana Souza") == 1
    first, second = [e for e in events if isinstance(e, ToolCallFinished)]
    assert not first.is_error and second.is_error
    assert "already made in this turn, and it worked" in second.result and "reply to the user now" in second.result
    assert events[-1].type == "turn_finished" and events[-1].reply.content == "Saved, Ana."  # type: ignore[union-attr]
    # the same call in another turn runs again: the guard is per turn
    agent2 = Agent.create("loop2", provider=ScriptedProvider([Step(tool_calls=[same]), "ok",
                                                               Step(tool_calls=[same]), "ok"]))
    list(agent2.turn("remember"))
    list(agent2.turn("remember again"))
    assert agent2.block("human").value.count("Name: Ana Souza") == 2


@pytest.mark.parametrize("after", [
    " Now, let me know if you have any other questions!",
    " This updates the label \"human\" with the given information.",
])
def test_a_fenced_call_that_opens_the_reply_runs_and_a_line_of_chatter_after_it_is_dropped(after: str) -> None:
    """Recorded from Qwen2.5-Coder-1.5B with the compact prompts (2026-12-05): the call, then a line for the user."""
    recorded = ('```json { "name": "core_memory_append", "arguments": { "label": "human", "content": "I work night '
                'shifts at a hospital." } } ```' + after)
    found = parse_text_calls(recorded, {"core_memory_append": ["label", "content"]})
    assert found is not None and [c.name for c in found.calls] == ["core_memory_append"] and found.lead_in == ""
    provider = ScriptedProvider([recorded, "Noted."])
    agent = Agent.create("shifts", provider=provider, settings=AgentSettings(text_tool_calls=True))
    events = list(agent.turn("I work night shifts at a hospital."))
    assert agent.block("human").value.endswith("I work night shifts at a hospital.")
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Noted."
    long_after = recorded.replace(after, " " + "and more words " * 10)  # a paragraph after it: an answer
    assert parse_text_calls(long_after, {"core_memory_append": ["label", "content"]}) is None


def test_a_call_in_the_tools_tag_of_qwens_template_runs() -> None:
    """Recorded from Qwen2.5-Coder-1.5B, compact prompts (2026-12-05), asked the capital of Canada."""
    recorded = '<tools> {"name": "conversation_search", "arguments": {"query": "What\'s the capital of Canada?"}} </tools>'
    found = parse_text_calls(recorded, {"conversation_search": ["query"]})
    assert found is not None and [c.name for c in found.calls] == ["conversation_search"]
    watch = CallWatch(True)
    assert watch.feed("<too") == "" and watch.feed("ls> {") == ""  # held back while it streams in


def test_a_bare_call_that_opens_the_reply_runs_though_a_stray_fence_follows() -> None:
    """Recorded from Qwen2.5-Coder-1.5B, compact prompts (2026-12-05): the call in doubled braces, then a stray fence."""
    recorded = ('{{"name": "core_memory_append", "arguments": {"label": "human", "content": "My sister Mia moved to '
                'Lisbon last month."}}} ```')
    tools = {"core_memory_append": ["label", "content"]}
    found = parse_text_calls(recorded, tools, ["human"])
    assert found is not None and json.loads(found.calls[0].arguments)["label"] == "human"
    assert parse_text_calls(recorded.replace(" ```", " Let me know if there is more."), tools, ["human"]) is not None
    assert parse_text_calls('{"name": "Ada", "age": 3} is how it looks', tools, ["human"]) is None  # data, not a call
    assert parse_text_calls(recorded.replace(" ```", " and " * 40), tools, ["human"]) is None  # a paragraph after


def test_a_fenced_call_whose_fence_is_never_closed_runs() -> None:
    """Recorded from Qwen2.5-Coder-1.5B, compact prompts (2026-12-05): the reply ended before the closing fence."""
    recorded = ('```json { "name": "core_memory_append", "arguments": { "label": "human", "content": "Mia moved to '
                'Lisbon last month." } }')
    found = parse_text_calls(recorded, {"core_memory_append": ["label", "content"]})
    assert found is not None and [c.name for c in found.calls] == ["core_memory_append"]
