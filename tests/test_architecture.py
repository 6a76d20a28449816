"""The architecture checker (scripts/check_architecture.py) finds what breaks its rules, on small trees written to a
temp dir; and the repository itself keeps them (run alone: `pytest tests/test_architecture.py -k repository`)."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "check_architecture.py"
spec = importlib.util.spec_from_file_location("check_architecture", SCRIPT)
architecture = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
sys.modules["check_architecture"] = architecture  # dataclasses look their module up there
spec.loader.exec_module(architecture)  # type: ignore[union-attr]
Problem = architecture.Problem


def tree(root: Path, files: dict[str, str]) -> Path:
    """Writes `files` (path under root -> source) with an empty __init__.py in every package, and returns root."""
    for name, source in files.items():
        path = root / name
        for package in [path.parent, *path.parent.parents]:
            if package == root:
                break
            package.mkdir(parents=True, exist_ok=True)
            (package / "__init__.py").touch()
        path.write_text(source, encoding="utf-8")
    return root


def problems(root: Path, rule: str) -> list[str]:
    return [problem.text for problem in architecture.check(root) if problem.rule == rule]


def test_a_cycle_through_an_import_inside_a_function_is_found(tmp_path: Path) -> None:
    root = tree(tmp_path, {
        "agentos/providers/a.py": "from agentos.providers.b import run\n",
        "agentos/providers/b.py": "def run():\n    from agentos.providers import a\n    return a\n",
    })
    assert problems(root, "import cycle") == ["agentos.providers.a -> agentos.providers.b -> agentos.providers.a"]


def test_imports_under_type_checking_make_no_cycle_but_still_count_for_the_layers(tmp_path: Path) -> None:
    root = tree(tmp_path, {
        "agentos/memory/tier.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from agentos.agent.agent import Agent\n",
        "agentos/agent/agent.py": "from agentos.memory.tier import Tier\n",
    })
    assert problems(root, "import cycle") == []
    assert problems(root, "layer") == [
        "agentos/memory/tier.py:3: agentos.memory.tier (L4 memory) imports agentos.agent.agent (L5 agent) (under TYPE_CHECKING)"]


def test_relative_imports_are_resolved_for_cycles(tmp_path: Path) -> None:
    root = tree(tmp_path, {
        "agentos/storage/__init__.py": "from .store import Store\n",
        "agentos/storage/store.py": "from . import rows\n",
        "agentos/storage/rows.py": "from agentos.storage import Store\n",
    })
    assert problems(root, "import cycle") == ["agentos.storage -> agentos.storage.store -> agentos.storage.rows -> agentos.storage"]


def test_each_cycle_is_named_once_shortest_first() -> None:
    graph = {"agentos.a": {"agentos.b"}, "agentos.b": {"agentos.c", "agentos.a"}, "agentos.c": {"agentos.a"},
             "agentos.d": {"agentos.a"}}
    assert architecture.cycles(graph) == [["agentos.a", "agentos.b", "agentos.a"],
                                          ["agentos.a", "agentos.b", "agentos.c", "agentos.a"]]
    assert architecture.cycles({"agentos.a": {"agentos.b"}, "agentos.b": set()}) == []


def test_a_module_importing_a_higher_layer_is_found(tmp_path: Path) -> None:
    root = tree(tmp_path, {
        "agentos/storage/db.py": "import agentos.errors\nfrom agentos.providers.base import Provider\nfrom agentos.agent import state\n",
        "agentos/errors.py": "",
        "agentos/providers/base.py": "",
        "agentos/agent/state.py": "",
    })
    assert problems(root, "layer") == [
        "agentos/storage/db.py:3: agentos.storage.db (L2 storage and embedders) imports agentos.agent.state (L5 agent)"]


def test_the_longest_name_in_the_table_places_a_module() -> None:
    assert architecture.layer_label(architecture.layer_of("agentos.eval.locomo")) == "L6 portable and eval"
    assert architecture.layer_label(architecture.layer_of("agentos.eval.__main__")) == "L7 front ends"
    assert architecture.layer_label(architecture.layer_of("agentos")) == "L8 front door"  # the package root only
    assert architecture.layer_of("agentos.version") == 0
    assert architecture.layer_of("agentos.cli.facts_text") == architecture.layer_of("agentos.chat")
    assert architecture.layer_of("agentos.textual") is None  # `text` covers agentos.text.*, not agentos.textual


def test_a_module_the_table_does_not_place_is_found(tmp_path: Path) -> None:
    root = tree(tmp_path, {"agentos/widgets.py": "", "agentos/memory/tier.py": ""})
    assert problems(root, "unplaced module") == ["agentos/widgets.py: agentos.widgets is in no layer; place it in LAYERS"]


def test_an_agentos_module_imported_inside_a_function_is_found(tmp_path: Path) -> None:
    root = tree(tmp_path, {
        "agentos/agent/loop.py": (
            "import importlib\n"
            "def run():\n"
            "    from agentos.agent.context import repair\n"
            "    from . import state\n"
            "    import json\n"
            "    return importlib.import_module('agentos.agent.context')\n"
            "class Loop:\n"
            "    def step(self):\n"
            "        import agentos.errors\n"
            "def late():\n"
            "    from agentos.agent.gone import thing\n"
        ),
        "agentos/agent/context.py": "", "agentos/agent/state.py": "", "agentos/errors.py": "",
    })
    assert problems(root, "deferred import") == [
        "agentos/agent/loop.py:3: imports agentos.agent.context inside a function; only heavy optional packages may be imported there",
        "agentos/agent/loop.py:4: imports agentos.agent.state inside a function; only heavy optional packages may be imported there",
        "agentos/agent/loop.py:5: imports json inside a function; only heavy optional packages may be imported there",
        "agentos/agent/loop.py:9: imports agentos.errors inside a function; only heavy optional packages may be imported there",
        "agentos/agent/loop.py:11: imports agentos.agent.gone inside a function; only heavy optional packages may be imported there",
    ]


def test_a_modules_own_getattr_may_hand_out_names_lazily_but_a_classs_may_not(tmp_path: Path) -> None:
    root = tree(tmp_path, {
        "agentos/__init__.py": "def __getattr__(name):\n    from agentos.agent.agent import Agent\n    return Agent\n",
        "agentos/agent/agent.py": "", "agentos/errors.py": "",
        "agentos/agent/proxy.py": "class Proxy:\n    def __getattr__(self, name):\n        import agentos.errors\n",
    })
    assert problems(root, "deferred import") == [
        "agentos/agent/proxy.py:3: imports agentos.errors inside a function; only heavy optional packages may be imported there"]
    assert problems(root, "layer") == []  # the front door sits above everything it hands out


def test_heavy_optional_packages_may_be_imported_inside_a_function(tmp_path: Path) -> None:
    root = tree(tmp_path, {
        "agentos/storage/db.py": "def connect(uri):\n    import lancedb\n    from lancedb.index import FTS\n    return lancedb.connect(uri)\n",
        "agentos/providers/openai_provider.py": "def client():\n    import openai\n    from tiktoken import get_encoding\n",
        "agentos/chat.py": "def history():\n    import readline\n",
        "agentos/memory/tier.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import json\n",
    })
    assert architecture.check(root) == []


def test_modules_over_the_line_limit_are_listed(tmp_path: Path) -> None:
    limit = architecture.MAX_LINES
    root = tree(tmp_path, {"agentos/memory/big.py": "x = 1\n" * (limit + 1), "agentos/memory/fits.py": "x = 1\n" * limit})
    assert problems(root, "module size") == [f"agentos/memory/big.py: {limit + 1} lines, over {limit}"]


def test_the_tui_and_lancedb_rules_still_hold(tmp_path: Path) -> None:
    root = tree(tmp_path, {
        "agentos/agent/agent.py": "import lancedb\nfrom agentos.tui.app import App\n",
        "agentos/tui/app.py": "import textual\n",
        "agentos/storage/db.py": "import lancedb\n",
    })
    assert problems(root, "tui") == ["agentos/agent/agent.py: imports agentos.tui.app, but only the TUI (and the CLI's tui command) may"]
    assert problems(root, "lancedb") == [
        "agentos/agent/agent.py: imports lancedb, but only agentos.storage, agentos.memory and agentos.retrieval may"]


def test_the_checker_sees_state_changes(tmp_path: Path) -> None:
    code = "agent.state.message_count = 3\nagent.state.append(m)\nagent.state.blocks()\nx = agent.state.rev\n"
    assert architecture.state_changes(ast.parse(code)) == [
        (1, "assigns agent.state.message_count"), (2, "calls agent.state.append()")]
    root = tree(tmp_path, {"agentos/agent/agent.py": code, "agentos/cli.py": code, "benchmarks/run.py": code})
    assert problems(root, "agent state") == [
        "agentos/cli.py:1: assigns agent.state.message_count; only agentos.agent changes agent state",
        "agentos/cli.py:2: calls agent.state.append(); only agentos.agent changes agent state",
        "benchmarks/run.py:1: assigns agent.state.message_count; only agentos.agent changes agent state",
        "benchmarks/run.py:2: calls agent.state.append(); only agentos.agent changes agent state",
    ]


def test_the_report_groups_problems_by_rule() -> None:
    found = [Problem("module size", "a.py: 401 lines"), Problem("import cycle", "x -> y -> x"), Problem("module size", "b.py")]
    assert architecture.report(found) == "import cycle: 1\n  x -> y -> x\nmodule size: 2\n  a.py: 401 lines\n  b.py"


def test_the_repository_passes_the_checker() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout
