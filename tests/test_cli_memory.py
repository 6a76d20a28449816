"""`agentos archival|recall|reindex` through the real argument parser."""

from __future__ import annotations

import re

import pytest

from agentos.cli import main
from tests.memory_helpers import day, make_agent, say


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_archival_commands(capsys: pytest.CaptureFixture[str]) -> None:
    make_agent("bob", embedder="none").close()
    code, out, _ = run(capsys, "archival", "bob", "add", "Bob's dog is Rex.", "--tags", "pets,dogs")
    assert code == 0 and "Stored 1 passage" in out
    code, out, _ = run(capsys, "archival", "bob", "add", "Bob's dog is Rex.")
    assert code == 0 and "Already stored" in out
    code, out, _ = run(capsys, "archival", "bob", "search", "dog", "--tags", "pets")
    assert "Rex" in out and "of 1 " in out
    code, out, _ = run(capsys, "archival", "bob", "list", "--since", "2000-01-01")
    passage_id = re.search(r"id (arch-\w+)", out).group(1)  # type: ignore[union-attr]
    code, out, _ = run(capsys, "show", "bob")
    assert "Passages in archival memory: 1" in out
    code, out, _ = run(capsys, "archival", "bob", "delete", passage_id)
    assert code == 0 and "0 passage(s) left" in out
    code, _, err = run(capsys, "archival", "bob", "delete", passage_id)
    assert code == 1 and "no archival passage" in err
    code, _, err = run(capsys, "archival", "bob", "search", "x", "--since", "soon")
    assert code == 1 and "not a date" in err


def test_recall_search_command(capsys: pytest.CaptureFixture[str]) -> None:
    agent = make_agent("ann", embedder="none")
    say(agent, "user", "we talked about sailing", when=day(2))
    say(agent, "user", "and about skiing", when=day(20))
    agent.close()
    code, out, _ = run(capsys, "recall", "ann", "search", "sailing")
    assert code == 0 and "sailing" in out and "user" in out
    code, out, _ = run(capsys, "recall", "ann", "search", "", "--since", "2024-01-10", "--until", "2024-01-31")
    assert "skiing" in out and "sailing" not in out
    code, _, err = run(capsys, "recall", "ann", "search", "")
    assert code == 1 and "query" in err


def test_reindex_command_shows_progress(capsys: pytest.CaptureFixture[str]) -> None:
    agent = make_agent("cy", embedder="none")
    say(agent, "user", "remember the harbour")
    agent.close()
    run(capsys, "archival", "cy", "add", "harbour notes")
    code, out, err = run(capsys, "reindex", "cy", "--embedder", "hash:32")
    assert code == 0 and "Re-embedded with hash:32: 1 recall, 1 archival." in out
    assert "archival passages: 1/1 done" in err  # not a terminal: a line per part, no bar redrawn with \r
    code, _, err = run(capsys, "reindex", "cy", "--embedder", "bogus")
    assert code == 1 and "unknown embedder" in err


@pytest.mark.parametrize(("flag", "value"), [("--until", "9999-12-31"), ("--since", "0999-01-01"), ("--since", "0001-01-01")])
def test_the_ends_of_the_calendar_are_valid_bounds(capsys: pytest.CaptureFixture[str], flag: str, value: str) -> None:
    agent = make_agent("ann", embedder="none")
    say(agent, "user", "we talked about sailing", when=day(2))
    agent.close()
    for command in ("recall", "archival"):
        code, out, err = run(capsys, command, "ann", "search", "sailing" if command == "recall" else "", flag, value)
        assert code == 0 and err == "", err
    assert "sailing" in run(capsys, "recall", "ann", "search", "", flag, value)[1]


def test_date_errors_name_the_flags(capsys: pytest.CaptureFixture[str]) -> None:
    make_agent("ann", embedder="none").close()
    code, _, err = run(capsys, "recall", "ann", "search", "", "--since", "2024-02-01", "--until", "2024-01-01")
    assert code == 1 and err == "error: --since is after --until.\n"
    code, _, err = run(capsys, "recall", "ann", "search", "", "--until", "9999-12-31T23:00-05:00")
    assert code == 1 and err == ("error: --until '9999-12-31T23:00-05:00' is out of range: use a date between "
                                 "0001-01-02 and 9999-12-30.\n")
