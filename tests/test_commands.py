"""The command table: every handler it names resolves, and a command declared once there (`stats`) is offered by the
CLI, the REPL's slash commands and the TUI's palette alike."""

from __future__ import annotations

import asyncio
import io
from typing import Any

import pytest

from agentos.agent.agent import Agent
from agentos.chat import KEYS, Repl
from agentos.cli import build_parser, main
from agentos.commands.slash import help_text, run_command, slash_commands
from agentos.commands.spec import offered, walk
from agentos.commands.table import COMMANDS
from agentos.providers import ScriptedProvider, Step
from agentos.tui.app import AgentApp

ADA = Step(tool_calls=[("core_memory_append", {"label": "human", "content": "Name: Ada"})])


def agent_with_a_turn(name: str) -> Agent:
    agent = Agent.create(name, provider=ScriptedProvider([ADA, "Hello Ada."]))
    list(agent.turn("I am Ada"))
    return agent


def test_every_handler_the_table_names_resolves_to_a_function() -> None:
    handlers = [command for _, command in walk(COMMANDS) if command.handler]
    assert len(handlers) > 30
    for command in handlers:
        assert callable(command.run()), command.handler


def test_each_front_end_offers_what_the_table_says() -> None:
    assert [c.slash_name for c in slash_commands()] == ["/summarize", "/stats", "/memory", "/context", "/help",
                                                        "/exit"]
    assert {path for path, _ in offered(COMMANDS, "palette")} >= {"stats", "compact", "export", "rewind", "new"}
    parser_help = build_parser().format_help()
    assert "stats" in parser_help and "compact" in parser_help and "/context" not in parser_help
    assert "  /stats      an agent's numbers" in help_text("keys")


def test_stats_from_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    agent_with_a_turn("statcli").close()
    assert main(["stats", "statcli"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == 'Stats of "statcli" (scripted/script)'
    text = "\n".join(out)
    assert "messages            4 in all, 4 in context" in text
    assert "    [human]           46/5,000 chars" in text and "context             " in text
    assert "archival            0 passage(s)" in text and "restore points      2" in text
    assert "facts" not in text  # fact memory is not in use
    assert main(["stats", "nobody"]) == 1


def test_stats_in_the_repl() -> None:
    agent = agent_with_a_turn("statrepl")
    out = io.StringIO()
    lines = iter(["/stats"])

    def read(prompt: str) -> str:
        out.write(prompt)
        try:
            return next(lines)
        except StopIteration:
            raise EOFError from None

    assert Repl(agent, read=read, out=out).run() == 0
    printed = out.getvalue()
    assert 'Stats of "statrepl"' in printed and "restore points      2" in printed


def test_stats_while_a_reply_is_in_progress_waits() -> None:
    agent = agent_with_a_turn("statbusy")
    try:
        outcome = run_command(agent, "/stats", keys=KEYS, busy=True)
        assert outcome.lines == [("(wait for the reply, or cancel it, before /stats)", "info")]
    finally:
        agent.close()


def test_stats_from_the_tui_palette() -> None:
    agent = agent_with_a_turn("stattui")
    app = AgentApp(agent)

    async def main_() -> None:
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            commands = {c.title: c for c in app.get_system_commands(app.screen)}
            commands["Stats"].callback()
            await pilot.pause()
            shown = app.conversation.texts()[-1]
            assert shown.startswith('Stats of "stattui"') and "restore points      2" in shown

    asyncio.run(main_())
    app.close_agent()


def test_an_unknown_slash_command_lists_the_commands(tmp_path: Any) -> None:
    agent = agent_with_a_turn("statunknown")
    try:
        outcome = run_command(agent, "/bogus", keys=KEYS)
        assert outcome.lines[0][1] == "error" and "/stats" in outcome.lines[0][0]
    finally:
        agent.close()
