"""The package's shape, read from the source with `ast` (docs/architecture.md states the rules).

Imports counted: every `import` and `from ... import` in a module, at module level or inside a
function, because a function-level import still ties the two modules together (it only defers the
cycle to the first call). Not counted: imports under `if TYPE_CHECKING:`, which never run and only
name types for annotations.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "mcp" / "vault_index"
MAX_LINES = 500  # a module longer than this is split by concern (STYLE.md: no god files)

# Floors from the bottom up: a module may import from its own floor or any floor below it.
# Each entry is a package prefix; the longest prefix that names a module decides its floor.
FLOORS = (
    ("vault_index",),  # types, errors, config, locations
    ("vault_index.engine.files",),
    ("vault_index.engine.parsing",),
    ("vault_index.engine.stores",),
    ("vault_index.engine.embedding",),
    ("vault_index.engine",),  # the indexer composes the engine's sub-packages
    ("vault_index.services.access", "vault_index.services.vault"),
    ("vault_index.services.writes", "vault_index.services.search"),
    ("vault_index.services.graph",),
    ("vault_index.services.curation",),
    ("vault_index.services",),  # app, workspace, recall, upgrade, watch, and what the hooks decide
    # the CLI runs the bench and eval, and the bench measures the server: one floor, no cycle
    ("vault_index.surfaces", "vault_index.tooling"),
    ("vault_index.__main__",),
)


def module_name(path: Path, base: Path) -> str:
    parts = list(path.relative_to(base).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _runtime_imports(tree: ast.AST):
    """Every import node outside `if TYPE_CHECKING:` blocks, at any depth."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def import_graph(base: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (a package's name stands for its __init__)."""
    files = {module_name(p, base): p for p in sorted(base.rglob("*.py"))}
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    module = ".".join(anchor + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                # `from pkg import mod` imports the module pkg.mod; `from mod import name` imports mod
                targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in files else module for a in node.names]
            graph[name].update(t for t in targets if t in files and t != name)
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected group of modules, each as a path back to its start."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's algorithm; the package is small enough to recurse
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [_path_through(graph, group) for group in groups]


def _path_through(graph: dict[str, set[str]], group: list[str]) -> list[str]:
    """A shortest way from the group's first module back to itself, inside the group."""
    start, members = group[0], set(group)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & members):
                if w == start:
                    return paths[v] + [start]
                if w not in paths:
                    paths[w] = paths[v] + [w]
                    nxt.append(w)
        frontier = nxt
    return group


def floor_of(name: str) -> int:
    best, floor = -1, 0
    for level, prefixes in enumerate(FLOORS):
        for prefix in prefixes:
            if (name == prefix or name.startswith(prefix + ".")) and len(prefix) > best:
                best, floor = len(prefix), level
    return floor


def long_files() -> list[str]:
    found = []
    for path in sorted([*PACKAGE.rglob("*.py"), *(ROOT / "scripts").rglob("*.py")]):
        count = len(path.read_text(encoding="utf-8").splitlines())
        if count > MAX_LINES:
            found.append(f"{path.relative_to(ROOT)}: {count} lines")
    return found


def test_the_package_has_no_import_cycle():
    cycles = find_cycles(import_graph(PACKAGE.parent))
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_imports_point_down_the_floors():
    graph = import_graph(PACKAGE.parent)
    upward = [f"{a} (floor {floor_of(a)}) imports {b} (floor {floor_of(b)})"
              for a in sorted(graph) for b in sorted(graph[a]) if floor_of(b) > floor_of(a)]
    assert not upward, "imports that point up:\n" + "\n".join(upward)


def test_no_module_of_the_package_or_scripts_is_over_500_lines():
    assert not long_files(), f"over {MAX_LINES} lines (split by concern):\n" + "\n".join(long_files())


def test_the_cycle_check_names_a_cycle_it_is_shown(tmp_path):
    """The check itself: a two-module cycle through a function-level import is found and named,
    and one through `if TYPE_CHECKING:` is not (it never runs)."""
    pkg = tmp_path / "demo"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from demo import b\n")
    (pkg / "b.py").write_text("def f():\n    from demo.a import thing\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from demo.d import X\n")
    (pkg / "d.py").write_text("from demo import c\n")
    assert find_cycles(import_graph(tmp_path)) == [["demo.a", "demo.b", "demo.a"]]
