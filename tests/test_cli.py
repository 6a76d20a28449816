"""The CLI: each subcommand, clear one-line errors, and a fast --help."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

import agentos
from agentos import Agent
from agentos.agent.agent import list_agents
from agentos.chat import Repl
from agentos.cli import main
from agentos.providers import ScriptedProvider, Step
from tests.helpers import typed
from tests.memory_helpers import archival

REPO = Path(__file__).resolve().parent.parent


def run_cli(*args: str, stdin: str = "", env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "agentos.cli", *args], input=stdin, capture_output=True, text=True,
        cwd=REPO, env={**os.environ, **(env or {})}, timeout=120,
    )


def test_help_imports_no_heavy_modules() -> None:
    code = "import sys, agentos.cli; agentos.cli.build_parser(); print(sorted(m for m in ('lancedb', 'pyarrow', 'openai', 'anthropic', 'textual', 'pydantic') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert done.stdout.strip() == "[]"


def test_new_list_show_delete(capsys: pytest.CaptureFixture, tmp_path: Path) -> None:
    persona = tmp_path / "persona.txt"
    persona.write_text("I am a ship's cat.\n")
    assert main(["new", "tom", "--model", "scripted/demo", "--persona", f"@{persona}", "--human", "Name: Ada"]) == 0
    assert 'Created agent "tom" (scripted/demo)' in capsys.readouterr().out
    assert main(["list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["NAME", "MODEL", "MESSAGES", "LAST", "ACTIVE"]
    assert out[1].split()[:3] == ["tom", "scripted/demo", "0"]
    assert main(["show", "tom"]) == 0
    shown = capsys.readouterr().out
    assert "[persona] 18/5000 chars\n  I am a ship's cat." in shown
    assert "[human] 9/5000 chars\n  Name: Ada" in shown
    assert "0 messages in context, 0 in recall memory" in shown
    assert main(["delete", "tom", "--yes"]) == 0
    assert main(["list"]) == 0
    assert "No agents yet" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["show", "ghost"], 'error: no agent named "ghost". Existing agents: none yet. Create one with: agentos new ghost'),
        (["chat", "ghost"], 'error: no agent named "ghost".'),
        (["new", "bad name", "--model", "scripted/demo"], "error: invalid agent name 'bad name'"),
        (["new", "x", "--model", "nonsense"], 'error: model spec "nonsense" must look like family/model'),
        (["new", "x", "--model", "scripted/demo", "--persona", "@/no/such/file"], "error: cannot read /no/such/file"),
        (["new", "x"], "error: no model is configured: set AGENTOS_MODEL"),
        (["delete", "ghost"], 'error: no agent named "ghost". Existing agents: none yet.'),
    ],
)
def test_errors_are_one_clear_line_and_nonzero(args: list[str], message: str) -> None:
    done = run_cli(*args)
    assert done.returncode == 1
    assert done.stderr.startswith(message)
    assert len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr


def test_chat_streams_shows_tools_and_memory_and_resumes() -> None:
    assert run_cli("new", "tom", "--model", "scripted/demo").returncode == 0
    done = run_cli("chat", "tom", stdin="my name is Ada\n/memory\n/help\n/bogus\n/exit\n")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "→ core_memory_replace(" in out
    assert "✎ memory [human]" in out and "Name: Ada" in out
    assert "tom> Nice to meet you, Ada! I've saved your name to my memory." in out
    assert "[human] 9/5000 chars\n  Name: Ada" in out
    assert "/memory     show the agent's core memory blocks" in out
    assert "unknown command /bogus" in out
    again = run_cli("chat", "tom", stdin="what is my name?\n")  # EOF leaves
    assert "tom> Your name is Ada." in again.stdout


def test_new_with_a_prompt_directory(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "system.j2").write_text("You are Pirate Bot.")
    assert main(["new", "tom", "--model", "scripted/demo", "--prompt-dir", str(tmp_path)]) == 0
    agent = Agent.load("tom")
    assert agent.system_prompt().startswith("You are Pirate Bot.\n\n<memory_blocks>")


def test_delete_asks_first(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    Agent.create("tom", provider=ScriptedProvider([]))
    monkeypatch.setattr(sys, "stdin", io.StringIO())
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    assert main(["delete", "tom"]) == 1
    assert [s.name for s in list_agents()] == ["tom"]
    monkeypatch.setattr("builtins.input", lambda prompt: "y")
    assert main(["delete", "tom"]) == 0
    assert list_agents() == []


def test_ctrl_c_during_a_reply_cancels_the_turn_and_keeps_the_agent() -> None:
    provider = ScriptedProvider([Step("a long reply " * 20), "second"])
    agent = Agent.create("tom", provider=provider)
    read = typed("first", "again")

    class Interrupting(io.StringIO):
        """Simulates Ctrl-C arriving while the first reply streams."""

        def __init__(self) -> None:
            super().__init__()
            self.deltas = 0

        def write(self, text: str) -> int:
            if text.startswith("a long") and self.deltas == 0:
                self.deltas += 1
                raise KeyboardInterrupt
            return super().write(text)

    out = Interrupting()
    assert Repl(agent, read=read, out=out).run() == 0
    printed = out.getvalue()
    assert "(cancelled; the agent is saved and ready)" in printed
    assert "tom> second" in printed
    reloaded = Agent.load("tom", provider=ScriptedProvider([]))
    assert [m.content for m in reloaded.context] == ["first", "again", "second"]


def test_demo_command_creates_then_resumes() -> None:
    first = run_cli("demo", stdin="call me Bo\n/exit\n")
    assert 'Created the offline demo agent "demo"' in first.stdout
    second = run_cli("demo", stdin="what's my name?\n")
    assert "Created" not in second.stdout
    assert "demo> Your name is Bo." in second.stdout


def test_new_with_an_embedder_searches_by_meaning_too(capsys: pytest.CaptureFixture) -> None:
    from agentos.agent.agent import Agent

    assert main(["new", "tom", "--model", "scripted/demo", "--embedder", "hash:64"]) == 0
    assert "memory is searched by keywords and meaning (hash-64)" in capsys.readouterr().out
    agent = Agent.load("tom")
    assert agent.state.settings.embedder == "hash:64"
    assert archival(agent).embedder.dim == 64
    assert main(["archival", "tom", "add", "Ada's cat is called Pixel"]) == 0
    assert main(["archival", "tom", "search", "cat"]) == 0
    assert "Pixel" in capsys.readouterr().out
    done = run_cli("new", "sam", "--model", "scripted/demo", "--embedder", "magic")
    assert done.returncode == 1 and done.stderr.startswith("error: unknown embedder 'magic'")
    assert main(["list"]) == 0
    assert "sam" not in capsys.readouterr().out  # nothing was created


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out == f"agentos {agentos.__version__}\n"


@pytest.mark.usefixtures("allow_real_providers")
def test_demo_refuses_an_agent_that_is_not_a_demo(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["new", "x5", "--model", "openai-compatible/m@http://127.0.0.1:9/v1"]) == 0
    capsys.readouterr()
    assert main(["demo", "x5"]) == 1
    assert capsys.readouterr().err == (
        'error: "x5" is not a demo agent: it uses openai-compatible/m@http://127.0.0.1:9/v1. Chat with it with: '
        "agentos chat x5, or give the demo another name: agentos demo NAME\n")


def test_an_invalid_agentos_model_is_named_as_the_source(monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("AGENTOS_MODEL", "bogus")
    assert main(["new", "y"]) == 1
    assert capsys.readouterr().err.startswith(
        'error: the model spec from $AGENTOS_MODEL is not valid: model spec "bogus" must look like family/model.')


def test_deleting_an_unknown_agent_says_so_without_asking(capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("builtins.input", lambda prompt: pytest.fail(f"asked: {prompt}"))
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    assert main(["delete", "nosuch"]) == 1
    assert capsys.readouterr().err.startswith('error: no agent named "nosuch".')
