"""Letta Agent Files (.af): the real files import with their content; a hand-made v1 MemGPT conversation maps to
agentos messages; a bad file or a failed import writes nothing; tool source never runs; export writes a v2 file
that imports back to the same blocks, system prompt and messages."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from agentos import Agent
from agentos.agent.agent import open_store
from agentos.agent.prompts import PromptRenderer
from agentos.agent.state import AgentSettings
from agentos.blocks import Block
from agentos.errors import AgentExistsError, AgentOSError, ConfigError, StorageError
from agentos.messages import Message
from agentos.portable.archive import ExportFileError
from agentos.portable.letta_export import export_af
from agentos.portable.letta_file import read_af
from agentos.portable.letta_import import AfImportReport, import_af
from agentos.providers import ScriptedProvider, Step
from agentos.storage import Store
from agentos.storage.filters import quote
from agentos.storage.records import row_message

FIXTURES = Path(__file__).parent / "fixtures" / "letta"
REAL = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "letta-af"
REAL_FILES = sorted(REAL.glob("*.af")) if REAL.is_dir() else []
needs_real = pytest.mark.skipif(not REAL_FILES, reason=f"the real Letta agent files are not at {REAL}")
V2_KEYS = {"agents", "groups", "blocks", "files", "sources", "tools", "mcp_servers", "metadata", "created_at"}


@pytest.fixture
def store() -> Store:
    return open_store()


def real(name: str) -> Path:
    path = REAL / name
    if not path.exists():
        pytest.skip(f"{path} is not here")
    return path


def letta_json(path: Path) -> dict[str, Any]:
    """The file's JSON, read independently of the code under test (double-encoded files decoded twice)."""
    data = json.loads(path.read_text())
    return json.loads(data) if isinstance(data, str) else data


def history(store: Store, name: str) -> tuple[list[Message], list[str]]:
    """Every saved message of the agent (straight from the table, in order) and the ids in its context."""
    agent = Agent.load(name, store=store, read_only=True)
    state = agent.state.snapshot()
    table = store.db.existing("messages")
    if table is None:
        return [], state.in_context_ids
    rows = table.to_lance().to_table(filter=f"agent_id = {quote(state.id)}").to_pylist()
    return [row_message(r) for r in sorted(rows, key=lambda r: r["seq"])], state.in_context_ids


def shape(messages: list[Message]) -> list[tuple[Any, ...]]:
    return [(m.role, m.content, [(c.id, c.name, json.loads(c.arguments)) for c in m.tool_calls], m.tool_call_id, m.name,
             m.is_error) for m in messages]


def write(tmp_path: Path, data: Any, name: str = "agent.af") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def v2(agent: dict[str, Any], **top: Any) -> dict[str, Any]:
    """A small v2 file around one agent."""
    base: dict[str, Any] = {"agents": [agent], "groups": [], "blocks": [], "files": [], "sources": [], "tools": [],
                            "mcp_servers": [], "metadata": {}, "created_at": "2025-11-01T00:00:00+00:00"}
    return {**base, **top}


def small_agent(**fields: Any) -> dict[str, Any]:
    return {"id": "agent-0", "name": "tiny", "system": "You are tiny.", "agent_type": "letta_v1_agent",
            "llm_config": {"model": "gpt-4o-mini", "model_endpoint_type": "openai", "context_window": 16000},
            "block_ids": [], "tool_ids": [], "messages": [], "in_context_message_ids": [], **fields}


def nothing_written(store: Store) -> None:
    assert store.agent_rows() == {}
    table = store.db.existing("messages")
    assert table is None or table.count_rows() == 0


# -- the real files ------------------------------------------------------------------------------


@needs_real
@pytest.mark.parametrize("path", REAL_FILES, ids=lambda p: p.name)
def test_every_real_file_imports_with_its_blocks_system_prompt_and_model(store: Store, path: Path) -> None:
    data = letta_json(path)
    reports = import_af(store, path, all_agents=True)
    assert [r.name for r in reports] == [a["name"] for a in data["agents"]]
    blocks = {b["id"]: b for b in data["blocks"]}
    for report, letta in zip(reports, data["agents"]):
        agent = Agent.load(report.name, store=store, read_only=True)
        by_label = {b.label: b for b in agent.blocks}
        for block_id in letta["block_ids"]:
            expected = blocks[block_id]
            got = by_label[expected["label"]]
            assert (got.value, got.limit, got.read_only) == (expected["value"], expected["limit"], expected["read_only"])
            assert got.description == (expected["description"] or "")
        assert agent.settings.system_prompt == letta["system"]
        llm = letta["llm_config"]
        assert agent.model == f"{llm['model_endpoint_type']}/{llm['model']}"
        assert agent.settings.context_window == llm["context_window"]
        assert report.blocks == len(agent.blocks) and report.lines()[0].startswith(f'Imported agent "{report.name}"')
        custom = [t["name"] for t in data["tools"] if t["id"] in letta["tool_ids"] and t["tool_type"] == "custom"]
        for name in custom:
            assert any(f'tool "{name}"' in line for line in report.not_imported)


@needs_real
def test_memgpt_agent_with_convo_keeps_chad_and_reports_what_it_leaves_out(store: Store) -> None:
    [report] = import_af(store, real("memgpt_agent_with_convo.af"))
    agent = Agent.load("memgpt_agent", store=store, read_only=True)
    assert [b.label for b in agent.blocks] == ["human", "persona"]
    assert "First name: Chad" in agent.block("human").value and "I am Sam." in agent.block("persona").value
    assert agent.settings.system_prompt is not None and agent.settings.system_prompt.startswith("<base_instructions>")
    # its one message is Letta's compiled system prompt (instructions + blocks), which agentos renders itself
    assert (report.messages, report.in_context) == (0, 0)
    assert any("compiled system prompt (system messages: 1)" in line for line in report.not_imported)
    assert any(line.startswith('tool "memory_insert"') for line in report.not_imported)
    assert any(line.startswith('tool "memory_replace"') for line in report.not_imported)
    assert "tools that are agentos built-ins: conversation_search" in report.notes
    assert report.model == "openai/gpt-4o-mini"


@needs_real
def test_deep_research_agent_lists_its_tools_and_keeps_its_research_blocks(store: Store) -> None:
    [report] = import_af(store, real("deep_research_agent.af"))
    agent = Agent.load("deep-thought-research-agent", store=store, read_only=True)
    assert [b.label for b in agent.blocks] == ["human", "persona", "research_citations", "research_plan"]
    assert agent.block("persona").read_only and agent.block("research_citations").limit == 5000
    assert agent.model == "anthropic/claude-sonnet-4-5-20250929" and agent.settings.max_output_tokens == 8192
    left_out = {line.split('"')[1] for line in report.not_imported if line.startswith("tool ")}
    assert left_out == {"create_research_plan", "reset_research", "web_search", "memory"}
    assert "tools that are agentos built-ins: conversation_search" in report.notes


@needs_real
@pytest.mark.parametrize("name", ["customer_service.af", "memgpt_agent.af"])
def test_a_double_encoded_real_file_is_read(name: str) -> None:
    af = read_af(real(name))
    assert af.double_encoded and af.version == "v2"
    assert [a.name for a in af.agents] == [a["name"] for a in letta_json(real(name))["agents"]]


@needs_real
def test_a_file_with_several_agents_needs_agent_or_all_and_writes_nothing_without(store: Store) -> None:
    path = real("evie.af")
    with pytest.raises(AgentOSError) as refused:
        import_af(store, path)
    message = str(refused.value)
    assert "Evie (agent-0)" in message and "companion-sleeptime_copy (agent-1)" in message
    assert "--agent NAME" in message and "--all" in message
    nothing_written(store)
    [evie] = import_af(store, path, agent="Evie")
    [helper] = import_af(store, path, agent="agent-1")
    assert (evie.name, helper.name) == ("Evie", "companion-sleeptime_copy")
    for report in (evie, helper):
        assert any(line.startswith("multi-agent group group-0 (sleeptime") for line in report.not_imported)
    assert any("tool rules" in line and "continue_loop on conversation_search" in line for line in evie.not_imported)
    assert 'added an empty "human" block (every agentos agent has persona and human blocks)' in evie.notes
    assert Agent.load("Evie", store=store, read_only=True).block("human").value == ""


# -- a hand-made v1 MemGPT conversation ----------------------------------------------------------


def test_a_v1_memgpt_conversation_becomes_agentos_messages(store: Store) -> None:
    [report] = import_af(store, FIXTURES / "memgpt_v1.af")
    messages, in_context = history(store, "sam")
    assert shape(messages) == [
        ("assistant", "Hello, I am Sam.", [], None, None, False),  # send_message's argument is the reply
        ("user", "hi, my name is Ada, not Chad", [], None, None, False),  # out of its JSON envelope
        ("assistant", "", [("call-fix", "core_memory_replace",  # inner thoughts and request_heartbeat left out
                            {"label": "human", "old_content": "Name: Chad", "new_content": "Name: Ada"})], None, None, False),
        ("tool", "None", [], "call-fix", "core_memory_replace", False),
        ("assistant", "Nice to meet you, Ada!", [], None, None, False),
        ("user", "what is my cat called?", [], None, None, False),
        ("assistant", "", [("call-search", "archival_memory_search", {"query": "cat"})], None, None, False),
        ("tool", "Error: archival search is not available", [], "call-search", "archival_memory_search", True),
        ("assistant", "Your cat is called Miso.", [], None, None, False),
    ]
    assert in_context == [m.id for m in messages[-4:]]
    assert messages[0].created_at.isoformat() == "2025-03-31T20:41:00.000001+00:00"
    agent = Agent.load("sam", store=store, read_only=True)
    assert agent.state.summary == "Ada corrected her name; she has a cat named Miso."
    assert [b.label for b in agent.blocks] == ["persona", "human", "project_notes"]
    assert agent.block("project_notes").limit == 2000 and agent.block("human").value == "Name: Ada"
    assert agent.model == "ollama/llama3.1:8b" and agent.settings.context_window == 8192
    assert agent.state.snapshot().created_at.isoformat() == "2025-03-31T20:30:00+00:00"
    assert agent.settings.system_prompt == json.loads((FIXTURES / "memgpt_v1.af").read_text())["system"]
    assert (report.blocks, report.messages, report.in_context) == (3, 9, 4)
    assert 'block label "Project Notes" is "project_notes" here (agentos labels use a-z, 0-9 and _)' in report.notes
    for said in ("compiled system prompt (system messages: 2)", "inner thoughts (5)", "heartbeats (messages: 1)",
                 "login events (messages: 1)", 'tool "roll_dice": a custom tool', 'tool "send_message": not needed',
                 "tool rules (agentos's loop has no tool rules): exit_loop on send_message", "tags test"):
        assert any(said in line for line in report.not_imported), said
    assert "send_message calls became the assistant's reply text (3)" in report.notes
    assert "tools that are agentos built-ins: core_memory_replace, archival_memory_search (as archival_search)" in report.notes


def test_an_imported_agent_takes_a_turn_from_where_letta_left_off(store: Store) -> None:
    import_af(store, FIXTURES / "memgpt_v1.af")
    provider = ScriptedProvider(["Still Miso."])
    agent = Agent.load("sam", store=store, provider=provider)
    list(agent.turn("and again?"))
    agent.close()
    request = provider.requests[0]
    assert [m.content for m in request.messages][-2:] == ["Your cat is called Miso.", "and again?"]
    assert "Ada corrected her name" in request.messages[0].content  # the summary heads the request
    assert "Name: Ada" in request.system_dynamic


def test_when_letta_context_is_not_a_suffix_the_smallest_covering_suffix_is_in_context(store: Store, tmp_path: Path) -> None:
    data = json.loads((FIXTURES / "memgpt_v1.af").read_text())
    data["in_context_message_indices"] = [6, 12, 4, 13, 14, 15, 16]  # "hi, my name is Ada" but not what follows it
    [report] = import_af(store, write(tmp_path, data))
    messages, in_context = history(store, "sam")
    assert in_context == [m.id for m in messages[1:]] and report.in_context == 8
    assert any("not the end of its history" in line and "4 messages Letta had out of context" in line
               for line in report.notes)


def test_a_double_encoded_v1_file_imports_like_the_plain_one(store: Store, tmp_path: Path) -> None:
    text = (FIXTURES / "memgpt_v1.af").read_text()
    path = tmp_path / "double.af"
    path.write_text(json.dumps(text))
    assert read_af(path).double_encoded
    import_af(store, path, name="double")
    import_af(store, FIXTURES / "memgpt_v1.af", name="plain")
    assert shape(history(store, "double")[0]) == shape(history(store, "plain")[0])


# -- a hand-made v2 file with two agents ---------------------------------------------------------


def test_a_v2_team_maps_approvals_parallel_results_reasoning_and_unanswered_calls(store: Store) -> None:
    path = FIXTURES / "team_v2.af"
    with pytest.raises(AgentOSError, match="--name names one agent"):
        import_af(store, path, all_agents=True, name="solo")
    alpha, beta = import_af(store, path, all_agents=True)
    messages, in_context = history(store, "alpha")
    assert shape(messages) == [
        ("user", "Can you check both services?", [], None, None, False),
        ("assistant", "", [("toolu_a", "check_service", {"service": "api"}),  # the approval request: a tool call
                           ("toolu_b", "check_service", {"service": "web"})], None, None, False),
        ("tool", "api: up", [], "toolu_a", "check_service", False),  # one Letta message, two results
        ("tool", "web: timeout", [], "toolu_b", "check_service", True),
        ("assistant", "The api is up; the web check timed out.", [], None, None, False),  # reasoning left out
        ("user", "thanks, here is the graph", [], None, None, False),  # the image left out
        ("assistant", "You're welcome.", [], None, None, False),
    ]
    assert in_context == [m.id for m in messages]
    for said in ("approval responses (1)", "reasoning (parts: 2)", "images (1)", 'tool "check_service": a custom tool',
                 "multi-agent group group-0 (round_robin: alpha, beta)"):
        assert any(said in line for line in alpha.not_imported), said
    assert ("blocks shared with other agents imported from the file stay shared (an edit by one is seen by the others): "
            "team_notes") in alpha.notes
    beta_messages, _ = history(store, "beta")
    assert shape(beta_messages)[2] == ("tool", "Error: this tool call was cancelled before it finished.", [], "toolu_c",
                                       "conversation_search", True)
    assert beta_messages[2].created_at == beta_messages[1].created_at  # dated as its call, not as the import
    assert "tool calls with no result in the file got an error result saying they were cancelled (1)" in beta.notes
    assert Agent.load("beta", store=store, read_only=True).block("team_notes").value == "Deploys happen on Tuesdays."
    assert Agent.load("alpha", store=store, read_only=True).settings.max_output_tokens == 4096


# -- edge cases ----------------------------------------------------------------------------------


def test_an_agent_with_no_history_and_no_blocks_imports_with_empty_core_blocks(store: Store, tmp_path: Path) -> None:
    [report] = import_af(store, write(tmp_path, v2(small_agent())))
    agent = Agent.load("tiny", store=store, read_only=True)
    assert [(b.label, b.value) for b in agent.blocks] == [("persona", ""), ("human", "")]
    assert (report.messages, report.in_context, agent.state.message_count) == (0, 0, 0)
    assert "the file gives the agent no memory blocks" in report.notes


def test_a_block_the_agent_names_but_the_file_lacks_is_reported(store: Store, tmp_path: Path) -> None:
    blocks = [{"id": "block-0", "label": "persona", "value": "I am tiny.", "limit": 100, "read_only": False}]
    [report] = import_af(store, write(tmp_path, v2(small_agent(block_ids=["block-0", "block-7"]), blocks=blocks)))
    assert "block block-7: the agent refers to it, but the file does not hold it" in report.not_imported
    assert Agent.load("tiny", store=store, read_only=True).block("persona").value == "I am tiny."


def test_unknown_fields_are_reported_never_dropped_silently(store: Store, tmp_path: Path) -> None:
    message = {"id": "message-0", "role": "user", "content": "hello", "mood": "cheerful",
               "created_at": "2025-11-01T00:00:00Z"}
    data = v2(small_agent(favourite_colour="teal", messages=[message], in_context_message_ids=["message-0"]),
              extras={"x": 1})
    [report] = import_af(store, write(tmp_path, data))
    assert "favourite_colour 'teal' (a field agentos does not know)" in report.not_imported
    assert "top-level field extras {x} (a field agentos does not know)" in report.not_imported
    assert "message field 'mood' (1)" in report.not_imported
    assert shape(history(store, "tiny")[0]) == [("user", "hello", [], None, None, False)]


def test_a_tool_is_never_run_whatever_its_source_does(store: Store, tmp_path: Path) -> None:
    marker = tmp_path / "ran.txt"
    source = (f"open({str(marker)!r}, 'w').write('ran')\nraise SystemExit('tool source was executed')\n"
              f"def boom():\n    open({str(marker)!r}, 'w').write('ran')\n")
    tools = [{"id": "tool-0", "name": "boom", "tool_type": "custom", "source_type": "python", "source_code": source,
              "json_schema": {"name": "boom", "parameters": {"type": "object", "properties": {}}}}]
    call = {"id": "call-1", "type": "function", "function": {"name": "boom", "arguments": "{}"}}
    messages = [{"id": "message-0", "role": "assistant", "content": [], "tool_calls": [call]},
                {"id": "message-1", "role": "tool", "tool_call_id": "call-1", "content": "done"}]
    data = v2(small_agent(tool_ids=["tool-0"], messages=messages, in_context_message_ids=["message-0", "message-1"]),
              tools=tools)
    [report] = import_af(store, write(tmp_path, data))
    assert not marker.exists()
    assert 'tool "boom": a custom tool; its source code was neither run nor imported' in report.not_imported
    agent = Agent.load("tiny", store=store, read_only=True)
    assert "boom" not in [t.name for t in agent.tools]


@pytest.mark.parametrize(("content", "expected"), [
    ('{"agents": [{"id": "agent-0", "name": "cut", "messages": [{"role": "us', "is cut short: its JSON ends before it is complete"),
    ("name: sam\nsystem: hello\n", "is not a Letta agent file: it is not valid JSON (Expecting value at line 1, column 1)."),
    ("", "is empty."),
    ("[1, 2, 3]", "holds JSON but not a Letta agent file: a list"),
    ('{"hello": "world"}', "holds JSON but not a Letta agent file: an object with keys hello, where a v2 file has"),
    ("42", "holds JSON but not a Letta agent file: a number"),
    ('"{\\"agents\\": [{\\"name\\": \\"x\\"', "is cut short"),
    ('{"agents": []}', "is a Letta agent file that holds no agents."),
    ('{"agents": [{"id": "agent-0"}]}', "is damaged: agent #1 of its agents list has no name."),
])
def test_a_bad_file_is_refused_clearly_and_writes_nothing(store: Store, tmp_path: Path, content: str, expected: str) -> None:
    path = tmp_path / "bad.af"
    path.write_text(content)
    with pytest.raises(ExportFileError) as refused:
        import_af(store, path)
    assert expected in str(refused.value) and str(path) in str(refused.value)
    nothing_written(store)


def test_a_real_file_cut_short_is_refused(store: Store, tmp_path: Path) -> None:
    text = (FIXTURES / "team_v2.af").read_text()
    path = tmp_path / "cut.af"
    path.write_text(text[: len(text) // 2])
    with pytest.raises(ExportFileError, match="is cut short"):
        import_af(store, path)
    with pytest.raises(ExportFileError, match="does not exist"):
        read_af(tmp_path / "missing.af")
    nothing_written(store)


def test_a_taken_name_is_refused_before_anything_is_written(store: Store) -> None:
    Agent.create("sam", provider=ScriptedProvider([]), store=store).close()
    with pytest.raises(AgentExistsError, match='"sam" already exists. Import it under another name with --name NEW'):
        import_af(store, FIXTURES / "memgpt_v1.af")
    Agent.create("beta", provider=ScriptedProvider([]), store=store).close()
    with pytest.raises(AgentExistsError, match='"beta" already exists'):
        import_af(store, FIXTURES / "team_v2.af", all_agents=True)
    assert sorted(store.agent_rows()) == ["beta", "sam"]  # alpha, which was free, was not created either
    assert history(store, "sam")[0] == []
    assert import_af(store, FIXTURES / "memgpt_v1.af", name="sam2")[0].name == "sam2"


def test_a_failure_part_way_deletes_every_agent_the_import_created(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []

    def fail_second(self: Agent, messages: Any, in_context: int = 0) -> None:
        calls.append(self.name)
        if len(calls) == 2:
            raise StorageError("disk full")
        return original(self, messages, in_context)

    original = Agent.add_history
    monkeypatch.setattr(Agent, "add_history", fail_second)
    with pytest.raises(StorageError, match="disk full"):
        import_af(store, FIXTURES / "team_v2.af", all_agents=True)
    assert calls == ["alpha", "beta"] and store.agent_rows() == {}


def test_a_model_with_no_agentos_equivalent_takes_the_default_or_says_how_to_choose(
        store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, v2(small_agent(llm_config={"model": "gemini-2.0-flash", "model_endpoint_type": "google_ai",
                                                      "context_window": 100000})))
    with pytest.raises(ConfigError, match=r"\(google_ai/gemini-2.0-flash\) has no agentos equivalent.*pass --model SPEC"):
        import_af(store, path)
    nothing_written(store)
    monkeypatch.setenv("AGENTOS_MODEL", "ollama/llama3.1")
    [report] = import_af(store, path)
    assert report.model == "ollama/llama3.1"
    assert report.notes[0].startswith("model ollama/llama3.1 (the default ($AGENTOS_MODEL): google_ai/gemini-2.0-flash "
                                      "has no agentos equivalent)")
    [chosen] = import_af(store, path, name="other", model="anthropic/claude-sonnet-4-5")
    assert Agent.load("other", store=store, read_only=True).model == "anthropic/claude-sonnet-4-5"
    assert chosen.notes[0] == "model anthropic/claude-sonnet-4-5 (given on import)"


@pytest.mark.parametrize(("llm", "spec"), [
    ({"model": "gpt-4o", "model_endpoint_type": "openai", "model_endpoint": "https://api.openai.com/v1"}, "openai/gpt-4o"),
    ({"model": "qwen2.5", "model_endpoint_type": "ollama", "model_endpoint": "http://gpu-box:11434"},
     "ollama/qwen2.5@http://gpu-box:11434/v1"),
    ({"model": "local", "model_endpoint_type": "openai", "model_endpoint": "http://10.0.0.5:8000/v1"},
     "openai-compatible/local@http://10.0.0.5:8000/v1"),
    ({"model": "llama-3.3-70b", "model_endpoint_type": "groq", "model_endpoint": "https://api.groq.com/openai/v1"},
     "openai-compatible/llama-3.3-70b@https://api.groq.com/openai/v1"),
    ({"model": "m", "model_endpoint_type": "lmstudio", "model_endpoint": "http://localhost:1234"}, "lmstudio/m"),
])
def test_llm_config_maps_to_a_model_spec(store: Store, tmp_path: Path, llm: dict[str, Any], spec: str) -> None:
    path = write(tmp_path, v2(small_agent(llm_config={**llm, "context_window": 8000})))
    if "@" in spec:  # a server not on this machine would get the user's key: only the user's own --model may say so
        with pytest.raises(AgentOSError, match=f"names the model '{re.escape(spec)}'.*--model '{re.escape(spec)}'"):
            import_af(store, path)
        nothing_written(store)
        [report] = import_af(store, path, model=spec)
    else:
        [report] = import_af(store, path)
    assert report.model == spec == Agent.load("tiny", store=store, read_only=True).model


# -- the system prompt ---------------------------------------------------------------------------


def test_a_system_prompt_setting_replaces_the_template_word_for_word() -> None:
    assert PromptRenderer(system_prompt="Be {{ brief }}.").static() == "Be {{ brief }}."  # never rendered as a template
    assert PromptRenderer().static() == PromptRenderer(system_prompt=None).static() != ""


def test_an_imported_agent_is_instructed_by_its_letta_system_prompt(store: Store) -> None:
    import_af(store, FIXTURES / "memgpt_v1.af")
    agent = Agent.load("sam", store=store, read_only=True)
    assert agent.system_prompt().startswith("You are Sam, a companion that remembers.")


# -- export --------------------------------------------------------------------------------------


def rich_agent(store: Store) -> Agent:
    """An agentos agent with a custom block, tool calls and results, a failed call, archival passages, a summary."""
    provider = ScriptedProvider([
        Step(tool_calls=[("core_memory_append", {"label": "human", "content": "Name: Ada"})]), "Nice to meet you, Ada.",
        Step(tool_calls=[("archival_insert", {"content": "Ada's cat is called Miso.", "tags": ["pets"]})]), "Saved.",
        Step(tool_calls=[("core_memory_replace", {"label": "human", "old_content": "nope", "new_content": "x"})]), "Oops.",
        *(f"reply {i}" for i in range(4)),
    ])
    agent = Agent.create("ada", provider=provider, store=store, settings=AgentSettings(max_steps=7),
                         blocks=[Block(label="projects", value="agentos", limit=900, description="What Ada builds.",
                                       read_only=True)])
    for text in ["I'm Ada", "my cat is Miso", "fix it", *(f"message {i} " + "words " * 40 for i in range(4))]:
        list(agent.turn(text))
    agent.roles.use("summary", ScriptedProvider(["Ada introduced herself and her cat Miso."]))
    agent.compact()
    return agent


def test_export_writes_a_v2_file_letta_can_read(store: Store, tmp_path: Path) -> None:
    agent = rich_agent(store)
    path = tmp_path / "ada.af"
    report = export_af(store, "ada", path)
    data = json.loads(path.read_text())
    assert V2_KEYS <= set(data) and len(data["agents"]) == 1
    [letta] = data["agents"]
    ids = [e["id"] for kind in ("agents", "blocks", "tools") for e in data[kind]] + [m["id"] for m in letta["messages"]]
    assert len(ids) == len(set(ids)) and all(i.rsplit("-", 1)[1].isdigit() for i in ids)  # Letta's id format
    assert {b["id"] for b in data["blocks"]} == set(letta["block_ids"])
    assert {t["id"] for t in data["tools"]} == set(letta["tool_ids"])
    messages = {m["id"]: m for m in letta["messages"]}
    assert set(letta["in_context_message_ids"]) <= set(messages)
    first = messages[letta["in_context_message_ids"][0]]
    assert first["role"] == "system" and first["content"][0]["text"].startswith(agent.prompts.static() + "\n\n<memory_blocks>")
    failed = next(m for m in letta["messages"] if m["role"] == "tool" and '"Failed"' in m["content"][0]["text"])
    assert failed["tool_returns"][0]["status"] == "error" and failed["tool_returns"][0]["tool_call_id"] == failed["tool_call_id"]
    assert json.loads(failed["tool_returns"][0]["func_response"])["message"].startswith("Error")
    summary = messages[letta["in_context_message_ids"][1]]
    assert json.loads(summary["content"][0]["text"])["type"] == "system_alert"
    assert "Ada introduced herself and her cat Miso." in summary["content"][0]["text"]
    tools = {t["name"]: t for t in data["tools"]}
    assert set(tools) == {"core_memory_append", "core_memory_replace", "conversation_search", "archival_memory_insert",
                          "archival_memory_search"}
    assert all(t["source_code"] is None and t["tool_type"] in ("letta_core", "letta_memory_core") for t in tools.values())
    assert letta["system"] == agent.prompts.static()
    assert any("archival passage" in line for line in report.not_exported)
    assert any(line.startswith("the memory edit log (") for line in report.not_exported)
    assert report.messages == agent.state.message_count and report.in_context == len(agent.context)


def test_export_then_import_gives_back_blocks_system_prompt_and_messages(store: Store, tmp_path: Path) -> None:
    agent = rich_agent(store)
    agent.close()
    path = tmp_path / "ada.af"
    export_af(store, "ada", path)
    import_af(store, path, name="copy")
    before, after = Agent.load("ada", store=store, read_only=True), Agent.load("copy", store=store, read_only=True)
    assert before.blocks == after.blocks
    assert before.settings.system_prompt is after.settings.system_prompt is None  # agentos's own, not pinned
    assert before.prompts.static() == after.prompts.static()
    assert before.state.summary == after.state.summary != ""
    assert before.model == after.model
    (old, old_context), (new, new_context) = history(store, "ada"), history(store, "copy")
    assert shape(old) == shape(new) and [m.created_at for m in old] == [m.created_at for m in new]
    index = {m.id: i for i, m in enumerate(old)}
    new_index = {m.id: i for i, m in enumerate(new)}
    assert [index[i] for i in old_context] == [new_index[i] for i in new_context]


def test_a_letta_agent_survives_import_export_import(store: Store, tmp_path: Path) -> None:
    import_af(store, FIXTURES / "memgpt_v1.af")
    export_af(store, "sam", tmp_path / "sam.af")
    [again] = import_af(store, tmp_path / "sam.af", name="sam-again")
    first, second = Agent.load("sam", store=store, read_only=True), Agent.load("sam-again", store=store, read_only=True)
    assert first.blocks == second.blocks and first.settings.system_prompt == second.settings.system_prompt
    assert first.state.summary == second.state.summary and first.model == second.model == again.model
    assert first.settings.context_window == second.settings.context_window == 8192
    (a, a_context), (b, b_context) = history(store, "sam"), history(store, "sam-again")
    assert shape(a) == shape(b) and len(a_context) == len(b_context) == 4


@pytest.mark.parametrize(("spec", "endpoint_type", "model", "endpoint"), [
    ("openai/gpt-4.1-mini", "openai", "gpt-4.1-mini", "https://api.openai.com/v1"),
    ("anthropic/claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5", "https://api.anthropic.com/v1"),
    ("ollama/llama3.1", "ollama", "llama3.1", "http://localhost:11434"),
    ("openai-compatible/qwen@http://10.0.0.5:8000/v1", "openai", "qwen", "http://10.0.0.5:8000/v1"),
])
def test_export_describes_the_model_in_llm_config_and_it_maps_back(
        store: Store, tmp_path: Path, spec: str, endpoint_type: str, model: str, endpoint: str) -> None:
    Agent.create("m", model=spec, provider=ScriptedProvider([]), store=store,
                 settings=AgentSettings(context_window=30_000, max_output_tokens=2_000)).close()
    export_af(store, "m", tmp_path / "m.af")
    data = json.loads((tmp_path / "m.af").read_text())
    llm = data["agents"][0]["llm_config"]
    assert (llm["model_endpoint_type"], llm["model"], llm["model_endpoint"]) == (endpoint_type, model, endpoint)
    assert (llm["context_window"], llm["max_tokens"]) == (30_000, 2_000)
    data["agents"][0]["metadata"] = None  # as Letta would write it back: only llm_config says what the model is
    if "@" in spec:  # a server elsewhere takes the user's own --model (see the trust test above)
        with pytest.raises(AgentOSError, match="not on this machine"):
            import_af(store, write(tmp_path, data), name="back")
        return
    [back] = import_af(store, write(tmp_path, data), name="back")
    assert back.model == spec
    settings = Agent.load("back", store=store, read_only=True).settings
    assert (settings.context_window, settings.max_output_tokens) == (30_000, 2_000)


def test_export_reports_a_model_letta_lacks(store: Store, tmp_path: Path) -> None:
    Agent.create("demo", model="scripted/demo", store=store).close()
    report = export_af(store, "demo", tmp_path / "demo.af")
    assert any(line.startswith("model scripted/demo: Letta has no such model") for line in report.not_exported)
    [back] = import_af(store, tmp_path / "demo.af", name="demo2")
    assert back.model == "scripted/demo"  # agentos's exact spec travels in the agent's metadata


def test_import_report_lines_name_the_agent_and_what_was_left_out() -> None:
    report = AfImportReport(name="sam", source="Letta v1 file, agent sam", path=Path("x/sam.af"), model="ollama/m",
                            blocks=2, messages=3, in_context=1, notes=["a note"], not_imported=['tool "t": why'])
    assert report.lines() == ['Imported agent "sam" from sam.af (Letta v1 file, agent sam): 2 blocks, 3 messages, '
                              "1 in context", "  a note", '  not imported: tool "t": why']
