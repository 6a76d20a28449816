"""`agentos users`: a key is printed once and stored only as a salted hash; list, rotate and remove, with what each
says; and the loopback rule of `agentos serve`, which users lift."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

import pytest

from agentos.cli import main
from agentos.errors import ConfigError
from agentos.server.config import require_loopback
from agentos.server.users import Users

Capture = pytest.CaptureFixture[str]
REPO = Path(__file__).resolve().parent.parent


def run(capsys: Capture, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def add(capsys: Capture, name: str, *more: str) -> str:
    code, out, err = run(capsys, "users", "add", name, *more)
    assert code == 0, err
    return out.strip()


def test_add_prints_the_key_once_and_stores_only_a_salted_hash(capsys: Capture, agentos_home: Path) -> None:
    code, out, err = run(capsys, "users", "add", "ada")
    key = out.strip()
    assert code == 0 and out == key + "\n" and key.startswith("aos_") and len(key) == 4 + 43  # stdout: the key alone
    user = Users().find("ada")
    assert err.splitlines() == [
        f'Added user "ada" ({user.id}); their agents: {agentos_home / "db" / "users" / user.id}. Their API key '
        "follows; it is shown this once and cannot be shown again (only replaced, with `agentos users rotate ada`):",
        "Requests to `agentos serve` send it as the header `Authorization: Bearer KEY`.",
        "This is the first user: from now on `agentos serve` asks every request for a key, and may listen beyond "
        "loopback. The CLI's agents are served only to a user added with --cli-agents.",
    ]
    stored = (agentos_home / "users.json").read_text()
    assert key not in stored and key[4:] not in stored and key[4:20] not in stored
    assert '"salt"' in stored and '"key_hash"' in stored
    assert stat.S_IMODE((agentos_home / "users.json").stat().st_mode) == 0o600
    assert Users().check(key) == user and Users().check(key + "x") is None and Users().check("") is None

    second = add(capsys, "bob")
    assert second != key and Users().check(second) == Users().find("bob")
    assert "This is the first user" not in capsys.readouterr().err
    salts = {u.salt for u in Users().all()}
    assert len(salts) == 2  # each key hashed under a salt of its own


def test_list_rotate_and_the_refusals(capsys: Capture) -> None:
    assert run(capsys, "users", "list") == (0, "No users: `agentos serve` serves the one local user (the CLI's agents) "
                                               "with no key, on loopback only. Add one with: agentos users add NAME\n", "")
    old = add(capsys, "ada")
    add(capsys, "bo", "--cli-agents")
    code, out, _ = run(capsys, "users", "list")
    ada, bo = Users().find("ada"), Users().find("bo")
    assert code == 0 and out.splitlines() == [
        f"NAME  {'ID':<20}  {'CREATED':<25}  AGENTS",
        f"ada   {ada.id:<20}  {ada.created_at:<25}  their own",
        f"bo    {bo.id:<20}  {bo.created_at:<25}  the CLI's",
    ]
    assert old not in out

    assert run(capsys, "users", "add", "ada") == (1, "", 'error: a user named "ada" already exists. Pick another name, '
                                                         "or give them a new key with: agentos users rotate ada\n")
    assert run(capsys, "users", "add", "two words")[2] == (
        "error: invalid user name 'two words': use 1-64 letters, digits, '.', '_' or '-', starting with a letter or "
        "digit.\n")
    assert run(capsys, "users", "add", "cy", "--cli-agents")[2] == (
        'error: user "bo" owns the CLI\'s agents already; only one user can.\n')
    assert run(capsys, "users", "rotate", "zed")[2] == (
        'error: no user named "zed". Users: ada, bo. Add one with: agentos users add zed\n')

    code, out, err = run(capsys, "users", "rotate", "ada")
    new = out.strip()
    assert code == 0 and new.startswith("aos_") and new != old
    assert err.splitlines()[0] == ('New key for user "ada"; their old key no longer works. Their API key follows; it is '
                                   "shown this once and cannot be shown again (only replaced, with `agentos users "
                                   "rotate ada`):")
    assert Users().check(old) is None and Users().check(new) == Users().find("ada")
    assert Users().find("ada").id == ada.id  # the same user, with the same agents


def test_remove_asks_first_and_says_what_happens_to_the_agents(capsys: Capture, monkeypatch: pytest.MonkeyPatch,
                                                                agentos_home: Path) -> None:
    key = add(capsys, "ada")
    add(capsys, "bo", "--cli-agents")
    ada = Users().find("ada")
    assert run(capsys, "users", "remove", "ada") == (
        1, "", 'error: refusing to remove user "ada" without confirmation; pass --yes.\n')  # stdin is no terminal

    asked: list[str] = []
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    monkeypatch.setattr("builtins.input", lambda question: asked.append(question) or "n")
    assert run(capsys, "users", "remove", "ada") == (1, "Not removed.\n", "")
    where = agentos_home / "db" / "users" / ada.id
    assert asked == [f'Remove user "ada"? Their key stops working at once; their agents stay on disk ({where}) but '
                     f"are no longer served. [y/N] "]
    assert Users().check(key) == ada

    monkeypatch.setattr("builtins.input", lambda question: "y")
    assert run(capsys, "users", "remove", "ada") == (
        0, f'Removed user "ada": their key no longer works. Their agents were not deleted: they stay on disk in '
           f"{where}, served to no one.\n", "")
    assert Users().check(key) is None and [u.name for u in Users().all()] == ["bo"]
    assert run(capsys, "users", "remove", "bo", "--yes")[1] == (
        'Removed user "bo": their key no longer works. Their agents were not deleted: they stay the CLI\'s.\n')


def test_serve_listens_beyond_loopback_only_with_users(capsys: Capture) -> None:
    for host in ("127.0.0.1", "::1", "localhost", "127.0.0.2"):
        require_loopback(host)
    with pytest.raises(ConfigError, match="refusing to listen on 0.0.0.0: this server has no users configured"):
        require_loopback("0.0.0.0")
    code, _, err = run(capsys, "serve", "--host", "192.0.2.1")
    assert code == 1 and "Add a user first (agentos users add NAME: requests then need its key)" in err
    add(capsys, "ada")
    require_loopback("0.0.0.0")  # a key is needed now: it may listen anywhere


def test_the_users_command_imports_no_server_and_starting_the_cli_stays_light() -> None:
    code = ("import sys, agentos.cli; agentos.cli.build_parser(); import agentos.cli.users; "
            "print(sorted(m for m in ('fastapi', 'uvicorn', 'starlette', 'lancedb', 'pydantic') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert done.stdout.strip() == "[]", done.stderr
