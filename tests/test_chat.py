"""The line REPL: each reply on its own line (piped input too), and readline editing with a persistent history."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agentos import Agent
from agentos.chat import HISTORY_LENGTH, Repl, history_path, setup_line_editing
from agentos.errors import ServerError
from agentos.events import Event, StepSaved, TextDelta, UsageReported
from agentos.memory.facts.tier import FactTier
from agentos.messages import Usage
from agentos.providers import ScriptedProvider, Step
from tests.processes import agentos
from tests.test_cli import run_cli


def piped(out: io.StringIO, *lines: str) -> Callable[[str], str]:
    """A `read` that behaves like `input()` on piped stdin: it writes the prompt, not the line, then EOF."""
    queue = iter(lines)

    def read(prompt: str) -> str:
        out.write(prompt)
        try:
            return next(queue)
        except StopIteration:
            raise EOFError from None

    return read


def chat(provider: ScriptedProvider, *lines: str) -> list[str]:
    """The REPL's output lines for `lines` typed to a new agent "sam" on `provider`."""
    out = io.StringIO()
    assert Repl(Agent.create("sam", provider=provider), read=piped(out, *lines), out=out).run() == 0
    return out.getvalue().splitlines()


def test_each_reply_ends_its_own_line() -> None:
    printed = chat(ScriptedProvider(["Hello there.", "Hello again."], chunk_size=4), "hi", "hi again")
    assert printed[1:] == ["you> sam> Hello there.", "you> sam> Hello again.", "you> "]


def test_a_turn_that_stops_right_after_its_text_still_ends_the_line(monkeypatch: pytest.MonkeyPatch) -> None:
    agent = Agent.create("sam", provider=ScriptedProvider([]))

    def text_only(text: str) -> Iterator[Event]:
        yield TextDelta(text="Hello")
        yield TextDelta(text=" there.")

    monkeypatch.setattr(agent, "turn", text_only)
    out = io.StringIO()
    assert Repl(agent, read=piped(out, "hi", "hi again"), out=out).run() == 0
    assert out.getvalue().splitlines()[1:] == ["you> sam> Hello there.", "you> sam> Hello there.", "you> "]


def test_usage_reported_before_the_replys_last_text_leaves_the_reply_on_one_line(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenAI-compatible servers (and llama.cpp, Ollama) send the usage before the last of the text."""
    agent = Agent.create("sam", provider=ScriptedProvider([]))

    def usage_midway(text: str) -> Iterator[Event]:
        yield TextDelta(text="Hello f")
        yield UsageReported(usage=Usage(input_tokens=10, output_tokens=4))
        yield TextDelta(text="rom the mock.")
        yield StepSaved(rev=1, message_ids=[])

    monkeypatch.setattr(agent, "turn", usage_midway)
    out = io.StringIO()
    assert Repl(agent, read=piped(out, "hi"), out=out).run() == 0
    assert out.getvalue().splitlines()[1:] == ["you> sam> Hello from the mock.", "you> "]


def test_a_reply_cut_by_a_failure_still_ends_its_line() -> None:
    class Cut(ScriptedProvider):
        """Streams a little text, then the connection fails."""

        def stream(self, request):  # type: ignore[no-untyped-def]
            yield from list(super().stream(request))[:1]
            raise ServerError("connection lost")

    printed = chat(Cut([Step("Half a reply")]), "hi")
    assert printed[1] == "you> sam> Half a reply"
    assert printed[2].startswith("  ! the reply was cut off") and printed[3].startswith("error: connection lost")


def test_piped_chat_puts_each_turn_on_its_own_lines() -> None:
    assert run_cli("new", "tom", "--model", "scripted/demo").returncode == 0
    done = run_cli("chat", "tom", stdin="my name is Ada\nwhat is my name?\n")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    start = lines.index("you> my name is Ada")  # what was read is echoed after the prompt, and the reply starts a line
    assert "tom> Nice to meet you, Ada! I've saved your name to my memory." in lines[start + 1:]
    asked = lines.index("you> what is my name?")
    assert lines[asked + 1] == "tom> Your name is Ada." and start < asked
    assert lines[-1] == "you> "  # the last reply ended its line; EOF then ends the prompt's


def test_a_repl_given_its_own_read_leaves_line_editing_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(path: Path | None = None) -> Callable[[], None]:
        raise AssertionError("line editing was set up for a test's read function")

    monkeypatch.setattr("agentos.chat.setup_line_editing", refuse)
    assert chat(ScriptedProvider(["ok"]), "hi")[1] == "you> sam> ok"


@pytest.fixture
def readline() -> Iterator[object]:
    """The stdlib readline module with an empty history, emptied again afterwards; skipped where there is none."""
    module = pytest.importorskip("readline")
    module.clear_history()
    yield module
    module.clear_history()


def history(readline: object) -> list[str]:
    """The lines now in readline's history."""
    length = readline.get_current_history_length()  # type: ignore[attr-defined]
    return [readline.get_history_item(i) for i in range(1, length + 1)]  # type: ignore[attr-defined]


def test_history_is_saved_at_exit_and_loaded_next_time(readline: object, agentos_home: Path) -> None:
    path = history_path()
    assert path == agentos_home / "repl_history"
    save = setup_line_editing(path)  # a first session: no file yet, no error
    assert history(readline) == []
    for line in ("hello", "/memory"):
        readline.add_history(line)  # type: ignore[attr-defined]
    save()
    assert path.exists()
    readline.clear_history()  # type: ignore[attr-defined]
    setup_line_editing(path)
    assert history(readline) == ["hello", "/memory"]


def test_history_keeps_the_newest_lines(readline: object, tmp_path: Path) -> None:
    path = tmp_path / "repl_history"
    path.write_text("".join(f"line {i}\n" for i in range(HISTORY_LENGTH + 500)))
    save = setup_line_editing(path)
    readline.add_history("newest")  # type: ignore[attr-defined]
    save()
    kept = path.read_text().splitlines()
    assert len(kept) == HISTORY_LENGTH and kept[-1] == "newest" and kept[0] == "line 501"


def test_a_history_that_cannot_be_read_or_written_is_no_error(readline: object, tmp_path: Path) -> None:
    unusable = tmp_path / "a-folder"
    unusable.mkdir()
    save = setup_line_editing(unusable)  # a folder: neither readable nor writable as a file
    readline.add_history("hi")  # type: ignore[attr-defined]
    save()
    assert unusable.is_dir() and history(readline) == ["hi"]


def test_without_readline_there_is_no_line_editing_and_no_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr("agentos.chat._readline", lambda: None)
    save = setup_line_editing(tmp_path / "repl_history")
    save()
    assert not (tmp_path / "repl_history").exists()


# -- fact memory: what consolidation did, printed between turns ------------------------------------------------------

def facts_chat(fact_model: ScriptedProvider, monkeypatch: pytest.MonkeyPatch, *lines: str) -> list[str]:
    """The REPL's output for `lines` typed to a new agent "sam" that consolidates facts after every turn, asking
    `fact_model`; each turn waits for its consolidation, so that what it made is there by the next prompt."""
    from agentos.agent.state import AgentSettings
    from agentos.memory.facts.settings import FactSettings

    agent = Agent.create("sam", provider=ScriptedProvider(["Noted."] * len(lines)),
                         settings=AgentSettings(facts=FactSettings(mode="turn")))
    agent.roles.use("facts", fact_model)
    turn = agent.turn

    def turn_then_consolidation(text: str) -> Iterator[Event]:
        yield from turn(text)
        assert agent.tier(FactTier).consolidator.wait_idle(60.0)

    monkeypatch.setattr(agent, "turn", turn_then_consolidation)
    out = io.StringIO()
    assert Repl(agent, read=piped(out, *lines), out=out).run() == 0
    return out.getvalue().splitlines()


def record_facts(*texts: str) -> Step:
    return Step(tool_calls=[("record_facts", {"facts": [{"text": t, "confidence": 0.9} for t in texts]})])


def test_new_facts_are_printed_after_the_reply_and_before_the_next_prompt(monkeypatch: pytest.MonkeyPatch) -> None:
    printed = facts_chat(ScriptedProvider([record_facts("Ada likes green tea", "Ada lives in Berlin")]), monkeypatch,
                         "I like green tea and live in Berlin")
    assert printed[1:] == ["you> sam> Noted.", "[facts] + Ada likes green tea", "[facts] + Ada lives in Berlin",
                           "you> "]


def test_a_consolidation_notice_is_printed_as_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    printed = facts_chat(ScriptedProvider(lambda request: "I would rather not say."), monkeypatch, "hello there", "hi")
    assert printed[1] == "you> sam> Noted."
    assert printed[2].startswith("[facts] warning: fact consolidation skipped 2 message(s): ")
    assert printed[3] == "you> sam> Noted." and printed[4].startswith("[facts] warning: ") and printed[5:] == ["you> "]


def test_nothing_is_printed_for_facts_when_consolidation_made_none(monkeypatch: pytest.MonkeyPatch) -> None:
    printed = facts_chat(ScriptedProvider([record_facts(), record_facts()]), monkeypatch, "ok", "fine")
    assert printed[1:] == ["you> sam> Noted.", "you> sam> Noted.", "you> "]


def test_fact_lines_show_each_change_and_notice() -> None:
    from agentos.events import FactsChanged, FactsNotice
    from agentos.presenter import fact_lines

    events = [FactsChanged(changes=["+ Ada likes tea", "~ Ada lives in Berlin"], count=2),
              FactsNotice(text="fact consolidation failed: boom", level="error")]
    assert fact_lines(events) == ["[facts] + Ada likes tea", "[facts] ~ Ada lives in Berlin",
                                  "[facts] error: fact consolidation failed: boom"]


class ClosesAfter(io.StringIO):
    """An output whose reader goes away once it has read `text` (`agentos chat sam | head -c N`)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.until = text

    def write(self, text: str) -> int:
        if self.until in self.getvalue():
            raise BrokenPipeError(32, "Broken pipe")
        return super().write(text)


def test_a_reader_that_goes_away_cuts_no_turn_short_and_no_more_lines_are_read() -> None:
    agent = Agent.create("sam", provider=ScriptedProvider(["Hello there, nice to meet you.", "never asked"],
                                                          chunk_size=3))
    out = ClosesAfter("sam> Hel")  # the pipe closes as the reply streams
    assert Repl(agent, read=piped(out, "hi", "and again"), out=out).run() == 0
    saved = Agent.load("sam", read_only=True)
    assert [m.content for m in saved.context][-2:] == ["hi", "Hello there, nice to meet you."]
    assert len(saved.restore_points()) == 2  # its creation and the turn
    saved.close()


def test_the_tui_without_a_terminal_chats_in_the_line_repl_instead_of_hanging(agentos_home: Path) -> None:
    assert agentos(agentos_home, "new", "sam", "--model", "scripted/demo").returncode == 0
    done = agentos(agentos_home, "tui", "sam", stdin="My name is Ada.\n", timeout=60)
    assert done.returncode == 0, done.stderr
    assert 'agentos tui needs a terminal, and this is not one (input or output is piped); chatting with "sam"' \
        in done.stderr
    assert "you> My name is Ada.\n" in done.stdout and "sam> Nice to meet you, Ada!" in done.stdout
