"""An agent uses the tools of real MCP servers (tests/fixtures/mcp_tool_server.py, on the `mcp` SDK), over stdio and
streamable HTTP: offered to the model under namespaced names, called, their failures turned into tool errors."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentos import Agent
from agentos.cli import main
from agentos.events import Notice, ToolCallFinished
from agentos.providers import ScriptedProvider, Step
from agentos.providers.base import ModelRequest
from agentos.tools.mcp.servers import McpServerSpec
from tests.processes import free_port, wait_for_port

SERVER = str(Path(__file__).parent / "fixtures" / "mcp_tool_server.py")


def stdio(name: str = "t", **options: Any) -> McpServerSpec:
    return McpServerSpec(name=name, command=[sys.executable, SERVER], **options)


def agent_with(spec: McpServerSpec, steps: list[Any], seen: list[ModelRequest] | None = None) -> Agent:
    script = iter(steps)

    def answer(request: ModelRequest) -> Any:
        if seen is not None:
            seen.append(request)
        return next(script)

    agent = Agent.create("a", provider=ScriptedProvider(answer))
    agent.update_settings(mcp_servers=[spec])
    return agent


def run(agent: Agent, text: str = "go") -> list[Any]:
    return list(agent.turn(text))


def results(events: list[Any]) -> dict[str, ToolCallFinished]:
    return {e.name: e for e in events if isinstance(e, ToolCallFinished)}


def test_a_servers_tools_are_offered_called_and_their_results_reach_the_conversation() -> None:
    seen: list[ModelRequest] = []
    agent = agent_with(stdio(), [Step(tool_calls=[("t__echo", {"text": "hello there"}), ("t__add", {"a": 2, "b": 3})]),
                                 Step(tool_calls=[("t__picture", {})]), "done"], seen)
    events = run(agent)
    offered = {t.name for t in seen[0].tools}
    assert {"t__echo", "t__add", "t__picture", "t__big_dotted_name", "core_memory_append"} <= offered
    assert {"t__either", "t__broken"}.isdisjoint(offered)  # schemas no provider takes
    notices = [e.text for e in events if isinstance(e, Notice)]
    assert any('"either"' in n and "anyOf at the top level" in n for n in notices)
    assert any('"broken"' in n and "not valid JSON Schema" in n for n in notices)
    done = results(events)
    assert done["t__echo"].result == "echo: hello there" and done["t__add"].result == "5"
    picture = done["t__picture"].result
    assert picture.startswith("here is the chart\n[image (image/png, 72 bytes) not shown: this model is given text only]")
    assert "[resource file:///notes.txt]\nthe notes say hello" in picture
    tool_results = [m.content for m in seen[1].messages if m.role == "tool"]
    assert "echo: hello there" in tool_results and "5" in tool_results  # the model read them
    agent.close()


def test_an_error_a_hang_and_a_crash_become_tool_errors_and_the_crashed_server_is_started_again() -> None:
    # 6 s: the deadline of a call, and of starting the server again after the crash, which on two busy cores can
    # take more than 2 s
    agent = agent_with(stdio(timeout_s=6), [
        Step(tool_calls=[("t__pid", {})]), Step(tool_calls=[("t__fail", {})]), Step(tool_calls=[("t__hang", {})]),
        Step(tool_calls=[("t__crash", {})]), Step(tool_calls=[("t__pid", {})]),
        Step(tool_calls=[("t__add", {"a": 1, "b": "two"})]), "still here"])
    events = run(agent)
    calls = [e for e in events if isinstance(e, ToolCallFinished)]
    first_pid, failed, hung, crashed, second_pid, bad_args = calls
    assert failed.is_error and failed.result == 'Error: the "fail" tool of MCP server "t" failed: the disk is on fire'
    assert hung.is_error and 'MCP server "t" did not run "hang" within 6 s' in hung.result
    assert crashed.is_error and 'MCP server "t" stopped while asked to run "crash"' in crashed.result
    assert not second_pid.is_error and second_pid.result != first_pid.result  # a new process
    assert bad_args.is_error and "b: 'two' is not of type 'number'" in bad_args.result
    assert events[-1].reply.content == "still here"
    agent.close()


def test_the_sdks_own_read_timeout_reads_as_the_same_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    # the SDK's read timeout and agentos's deadline are one setting; on a busy machine the SDK's may be seen first
    import mcp

    class QuickClient(mcp.Client):  # its tool calls time out in the SDK after 0.5 s (starting it keeps 30 s)
        async def call_tool(self, *args: Any, **kwargs: Any) -> Any:
            return await super().call_tool(*args, **{**kwargs, "read_timeout_seconds": 0.5})

    monkeypatch.setattr(mcp, "Client", QuickClient)
    agent = agent_with(stdio(timeout_s=30), [Step(tool_calls=[("t__hang", {})]), Step(tool_calls=[("t__pid", {})]),
                                             "still here"])
    started = time.monotonic()
    events = run(agent)
    hung, pid = [e for e in events if isinstance(e, ToolCallFinished)]
    assert time.monotonic() - started < 20  # the SDK's 0.5 s ended the call, not agentos's 30 s
    assert hung.is_error and 'MCP server "t" did not run "hang" within 30 s' in hung.result
    assert not pid.is_error and int(pid.result) > 0  # the server still answers
    agent.close()


def test_servers_start_at_the_first_turn_and_stop_when_the_agent_closes() -> None:
    agent = agent_with(stdio(), [Step(tool_calls=[("t__pid", {})]), "ok"])
    assert agent.session.mcp is not None and not agent.session.mcp.connections  # nothing started by opening
    pid = int(results(run(agent))["t__pid"].result)
    os.kill(pid, 0)  # running
    agent.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.1)
    assert not _alive(pid)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie waiting for its parent to read it counts as gone
        return "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()
    except OSError:
        return False


def test_a_server_that_cannot_start_is_a_notice_and_the_turn_goes_on() -> None:
    agent = agent_with(McpServerSpec(name="gone", command=["/nonexistent/mcp-server"]), ["fine"])
    events = run(agent)
    notice = next(e.text for e in events if isinstance(e, Notice))
    assert notice.startswith('MCP server "gone" (/nonexistent/mcp-server) could not be started:')
    assert "Its tools are not offered" in notice
    assert events[-1].reply.content == "fine"
    agent.close()


def test_only_the_allowed_tools_are_offered_and_a_stale_entry_is_said() -> None:
    seen: list[ModelRequest] = []
    agent = agent_with(stdio(allow=["echo", "pi*", "gone"]), ["ok"], seen)
    events = run(agent)
    assert {t.name for t in seen[0].tools if t.name.startswith("t__")} == {"t__echo", "t__picture", "t__pid"}
    assert any('no tool matching "gone"' in e.text for e in events if isinstance(e, Notice))
    agent.close()


def test_environment_values_are_passed_by_name_and_a_missing_one_is_said(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOTES_TOKEN", "s3cret")
    agent = agent_with(stdio(env={"TOKEN": "NOTES_TOKEN"}), [Step(tool_calls=[("t__environment", {"name": "TOKEN"})]),
                                                              "ok"])
    assert results(run(agent))["t__environment"].result == "s3cret"
    agent.close()
    monkeypatch.delenv("NOTES_TOKEN")
    again = Agent.load("a", provider=ScriptedProvider(["ok"]))
    notice = next(e.text for e in again.turn("go") if isinstance(e, Notice))
    assert "needs the environment variable NOTES_TOKEN, which is not set" in notice
    again.close()


@pytest.fixture
def http_server() -> Iterator[str]:
    """The test server over streamable HTTP on a free loopback port, asking for header X-Token: s3cret."""
    port = free_port()
    process = subprocess.Popen([sys.executable, SERVER, "--http", str(port), "--header", "X-Token=s3cret"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_for_port(port, process)
    yield f"http://127.0.0.1:{port}/mcp"
    process.kill()
    process.wait(10)


def test_a_streamable_http_server_with_a_header_from_the_environment(http_server: str,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOTES_TOKEN", "s3cret")
    spec = McpServerSpec(name="web", url=http_server, headers={"X-Token": "${NOTES_TOKEN}"})
    agent = agent_with(spec, [Step(tool_calls=[("web__echo", {"text": "over http"})]), "ok"])
    assert results(run(agent))["web__echo"].result == "echo: over http"
    agent.close()
    monkeypatch.setenv("NOTES_TOKEN", "wrong")
    refused = Agent.load("a", provider=ScriptedProvider(["ok"]))
    notice = next(e.text for e in refused.turn("go") if isinstance(e, Notice))
    assert notice.startswith('MCP server "web" (http://127.0.0.1:') and "Its tools are not offered" in notice
    refused.close()


def test_the_cli_adds_lists_and_removes_servers_and_an_export_keeps_no_secret(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("NOTES_TOKEN", "s3cret")
    assert main(["new", "sam", "--model", "scripted/demo"]) == 0
    assert main(["mcp", "add", "sam", "t", "--stdio", f"{sys.executable} {SERVER}", "--env", "TOKEN=NOTES_TOKEN",
                 "--allow", "echo,add"]) == 0
    assert main(["mcp", "add", "sam", "web", "--url", "http://127.0.0.1:9/mcp", "--header",
                 "Authorization=Bearer ${NOTES_TOKEN}"]) == 0
    capsys.readouterr()
    assert main(["mcp", "list", "sam", "--tools"]) == 0
    out = capsys.readouterr().out
    assert f"t  stdio: {sys.executable} {SERVER}  (env TOKEN<-$NOTES_TOKEN; allow echo, add; timeout 30 s)" in out
    assert "    t__echo: Say the text back.\n    t__add: Add two numbers.\n" in out
    assert 'MCP server "web" (http://127.0.0.1:9/mcp) could not be started' in out
    exported = tmp_path / "sam.agentos"
    assert main(["export", "sam", "-o", str(exported)]) == 0
    with zipfile.ZipFile(exported) as archive:
        everything = b"".join(archive.read(n) for n in archive.namelist())
    assert b"s3cret" not in everything and b"${NOTES_TOKEN}" in everything and b"NOTES_TOKEN" in everything
    assert main(["mcp", "remove", "sam", "web"]) == 0
    assert main(["mcp", "remove", "sam", "web"]) == 1
    assert 'no MCP server named "web" (this agent has: t)' in capsys.readouterr().err
    assert main(["mcp", "add", "sam", "x", "--url", "ftp://nowhere"]) == 1
    assert "the URL must start with http:// or https://" in capsys.readouterr().err
