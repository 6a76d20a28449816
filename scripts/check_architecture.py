"""Checks the package's layering: no import cycles between its parts, and who may touch what.

    python scripts/check_architecture.py

Rules (each import counts, whether at the top of a module, inside a function or for type checking):

- no cycle among agentos's parts (each subpackage, and each top-level module, is one part);
- the core never imports the TUI: only `agentos.tui` and the CLI's `tui` command import textual or agentos.tui;
- only `storage/` and `memory/` import lancedb;
- no module outside `agent/` changes an agent's state: no assignment to `….state.X` or `….state`, and no
  call on `….state` other than its readers.
Exits 1 and lists what breaks a rule.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "agentos"
STATE_READERS = {"blocks", "block", "blocks_view", "snapshot", "last"}
TUI_IMPORTERS = {"agentos.tui", "agentos.cli"}
LANCEDB_IMPORTERS = {"agentos.storage", "agentos.memory", "agentos.retrieval"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def part(module: str) -> str:
    """The part a module belongs to: `agentos.memory.recall` -> `agentos.memory`."""
    return ".".join(module.split(".")[:2])


def imports(tree: ast.AST, module: str) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = module.split(".")[: -node.level]
                found.add(".".join([*base, node.module] if node.module else base))
            elif node.module:
                found.add(node.module)
    return found


def state_changes(tree: ast.AST) -> list[tuple[int, str]]:
    """Lines that assign to, or call a changing method on, something's `.state`."""
    problems = []

    def on_state(node: ast.AST) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "state"

    for node in ast.walk(tree):
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for target in targets:
            if on_state(target) or (isinstance(target, ast.Attribute) and on_state(target.value)):
                problems.append((node.lineno, f"assigns {ast.unparse(target)}"))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and on_state(node.func.value):
            if node.func.attr not in STATE_READERS:
                problems.append((node.lineno, f"calls {ast.unparse(node.func)}()"))
    return problems


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every elementary cycle's nodes, found by depth-first search (the graph is small)."""
    found: list[list[str]] = []
    seen: set[tuple[str, ...]] = set()

    def visit(start: str, node: str, path: list[str]) -> None:
        for nxt in sorted(graph.get(node, ())):
            if nxt == start:
                key = tuple(sorted(path))
                if key not in seen:
                    seen.add(key)
                    found.append([*path, start])
            elif nxt not in path and nxt > start:
                visit(start, nxt, [*path, nxt])

    for start in sorted(graph):
        visit(start, start, [start])
    return found


def check(extra_roots: tuple[Path, ...] = (ROOT / "benchmarks", ROOT / "examples")) -> list[str]:
    problems: list[str] = []
    graph: dict[str, set[str]] = defaultdict(set)
    for path in sorted(PACKAGE.rglob("*.py")):
        module = module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        where = path.relative_to(ROOT)
        for target in imports(tree, module):
            if target.startswith("agentos.") and part(target) != part(module):
                graph[part(module)].add(part(target))
            if (target == "textual" or target.startswith(("textual.", "agentos.tui"))) and part(module) not in TUI_IMPORTERS:
                problems.append(f"{where}: imports {target}, but only the TUI (and the CLI's tui command) may")
            if target.split(".")[0] == "lancedb" and part(module) not in LANCEDB_IMPORTERS:
                problems.append(f"{where}: imports lancedb, but only agentos.storage and agentos.memory may")
        if part(module) != "agentos.agent":
            problems += [f"{where}:{line}: {what}; only agentos.agent changes agent state" for line, what in state_changes(tree)]
    for root in extra_roots:
        for path in sorted(root.rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            problems += [f"{path.relative_to(ROOT)}:{line}: {what}; only agentos.agent changes agent state"
                         for line, what in state_changes(tree)]
    problems += ["import cycle: " + " -> ".join(cycle) for cycle in cycles(graph)]
    return problems


def main() -> int:
    problems = check()
    for problem in problems:
        print(problem)
    print(f"architecture: {len(problems)} problem(s)" if problems else "architecture: no import cycles; rules hold")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
