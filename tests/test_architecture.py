"""The layering holds: no import cycles between agentos's parts, the core never imports the TUI, only
storage and memory touch LanceDB, and nothing outside agent/ changes an agent's state."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "check_architecture.py"
spec = importlib.util.spec_from_file_location("check_architecture", SCRIPT)
architecture = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
spec.loader.exec_module(architecture)  # type: ignore[union-attr]


def test_the_package_keeps_its_layering() -> None:
    assert architecture.check() == []


def test_the_checker_sees_state_changes_and_cycles() -> None:
    code = "agent.state.message_count = 3\nagent.state.append(m)\nagent.state.blocks()\nx = agent.state.rev\n"
    assert architecture.state_changes(ast.parse(code)) == [
        (1, "assigns agent.state.message_count"), (2, "calls agent.state.append()")]
    graph = {"agentos.a": {"agentos.b"}, "agentos.b": {"agentos.c"}, "agentos.c": {"agentos.a"}, "agentos.d": set()}
    assert architecture.cycles(graph) == [["agentos.a", "agentos.b", "agentos.c", "agentos.a"]]
