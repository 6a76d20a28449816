"""The README works as written: its set-up commands are what CI runs, every command and the Python example in it
run from a fresh data home, and every link into `docs/` resolves."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text(encoding="utf-8")
BIN = Path(sys.executable).parent
FENCE = re.compile(r"```(\w+)\n(.*?)```", re.DOTALL)


def blocks(language: str) -> list[str]:
    return [body for lang, body in FENCE.findall(README) if lang == language]


def commands(body: str) -> list[str]:
    """The command on each line, without its trailing comment."""
    lines = (re.sub(r"\s+#\s.*$", "", line).strip() for line in body.splitlines())
    return [line for line in lines if line]


def run(command: str, home: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AGENTOS_HOME": str(home), "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(["bash", "-c", command], input="Hi! My name is Ada.\n", capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=180)


def test_the_readme_fits_on_a_screen_or_two() -> None:
    assert len(README.splitlines()) <= 140  # two screens: set-up, a first session, serving, retrieval, the docs
    assert "../shared" not in README  # a fresh clone has no such folder


def test_the_set_up_commands_are_the_ones_ci_runs(agentos_home: Path, tmp_path: Path) -> None:
    product, suite = (commands(body)[0] for body in blocks("bash")[:2])
    assert suite in (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert (BIN / "agentos").exists(), "the agentos command is not installed next to this Python"
    start = product.split(" && ")[-1]
    assert start == ".venv/bin/agentos demo"
    done = run(start.replace(".venv/bin/", ""), agentos_home, tmp_path)  # no terminal here: the demo's line REPL
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "Ada" in done.stdout


def test_every_command_in_the_readme_runs_from_a_fresh_home(agentos_home: Path, tmp_path: Path,
                                                            allow_real_providers: None) -> None:
    """Offline and with no API key: creating an agent on a hosted model calls no model."""
    tried = [line for body in blocks("bash")[2:] for line in commands(body)]
    assert len(tried) >= 8
    for command in tried:
        done = run(command, agentos_home, tmp_path)
        assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
        assert "Traceback" not in done.stderr, command
    assert (tmp_path / "sam.agentos").exists()


def test_the_python_example_runs(agentos_home: Path, tmp_path: Path) -> None:
    (example,) = blocks("python")
    script = tmp_path / "example.py"
    script.write_text(example, encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          env={**os.environ, "AGENTOS_HOME": str(agentos_home)})
    assert done.returncode == 0, done.stderr
    assert "TurnFinished" in done.stdout or "Ada" in done.stdout


def test_every_link_to_a_file_resolves() -> None:
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    for page in pages:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+://", target) or target.startswith("#"):
                continue
            assert (page.parent / target.split("#")[0]).exists(), f"{page.name} links to {target}, which is missing"


def test_the_serve_commands_work_as_written(agentos_home: Path, tmp_path: Path) -> None:
    """The "Serve" block: the server starts, the agent is made over HTTP, and the streamed turn finishes."""
    from tests.processes import free_port, wait_for_port

    (body,) = blocks("shell")
    start, *calls = commands(body)
    assert start == "agentos serve &"
    port = free_port()
    env = {**os.environ, "AGENTOS_HOME": str(agentos_home), "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    server = subprocess.Popen([str(BIN / "agentos"), "serve", "--port", str(port)], env=env, cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_port(port, server)
        made, streamed = (run(call.replace("8283", str(port)), agentos_home, tmp_path) for call in calls)
        assert made.returncode == 0 and '"name":"web"' in made.stdout, made
        assert streamed.returncode == 0 and "event: turn_finished" in streamed.stdout, streamed
        assert "Ada" in streamed.stdout  # the demo model's reply to the turn
    finally:
        server.terminate()
        assert server.wait(30) == 0
