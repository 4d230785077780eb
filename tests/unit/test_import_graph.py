"""No import cycle among ``components`` modules, and the settings package imports nothing else of ours.

The graph holds every import a module can make: statements at module level and
inside functions alike (``if TYPE_CHECKING:`` blocks left out, they never run),
plus the modules the settings look registries up in by name
(``importlib.import_module("components.…")`` calls and the ``REGISTRIES``
table). So a dependency deferred into a function, or hidden behind a module
name in a string, still counts. ``from a.b import c`` is an edge to ``a.b.c``
when that is a module, else to ``a.b``.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules_of(package: str, root: Path = REPO) -> dict[str, Path]:
    return {module_name(path, root): path for path in sorted((root / package).rglob("*.py"))}


def _type_checking_nodes(tree: ast.Module) -> set[int]:
    blocks = [n for n in ast.walk(tree) if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test)]
    return {id(inner) for block in blocks for inner in ast.walk(block)}


def _absolute(node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    parts = package.split(".")
    return ".".join(parts[: len(parts) - node.level + 1] + [node.module or ""]).strip(".")


def _named_modules(tree: ast.Module, root: str) -> set[str]:
    """Module names written as strings: ``import_module("components.x")`` and registry tables."""
    return {node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith(f"{root}.")}


def imports_of(path: Path, name: str, known: set[str]) -> set[str]:
    """The modules of ``known`` that ``name`` (at ``path``) may import."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    skipped = _type_checking_nodes(tree)
    found = {target for target in _named_modules(tree, name.split('.')[0]) if target in known}
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, package)
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        found |= {target for target in targets if target in known}
    return found - {name}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

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
            component = []
            while True:
                item = stack.pop()
                on_stack.discard(item)
                component.append(item)
                if item == node:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return out


def import_graph(package: str, root: Path = REPO) -> dict[str, set[str]]:
    modules = modules_of(package, root)
    return {name: imports_of(path, name, set(modules)) for name, path in modules.items()}


def test_no_import_cycle_among_components():
    assert cycles(import_graph("components")) == []


def test_the_cycle_check_sees_a_cycle(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.b import thing\n")
    (pkg / "b.py").write_text("import pkg.c\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.a\n")
    (pkg / "c.py").write_text("def lazy():\n    from pkg import a\n")
    (pkg / "d.py").write_text("import importlib\nREG = importlib.import_module('pkg.e')\n")
    (pkg / "e.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.d\n")
    assert cycles(import_graph("pkg", tmp_path)) == [["pkg.a", "pkg.b", "pkg.c"]]
    (pkg / "e.py").write_text("import pkg.d\n")
    assert cycles(import_graph("pkg", tmp_path)) == [["pkg.a", "pkg.b", "pkg.c"], ["pkg.d", "pkg.e"]]


def test_settings_modules_import_only_settings_at_import_time():
    """Outside the settings package, a settings module only names registries, looked up when a value is checked."""
    lookups = {"components.generation", "components.verification", "components.data.benchmarks", "components.rewards",
               "components.data.rejection", "components.metrics.lcpr", "components.data.sources",
               "components.audit.stress", "components.retrieval"}
    graph = import_graph("components")
    outside = {name: sorted(t for t in targets if not t.startswith("components.settings") and t not in lookups)
               for name, targets in graph.items() if name.startswith("components.settings")}
    assert {name: found for name, found in outside.items() if found} == {}


def test_settings_package_imports_alone():
    code = ("import sys, components.settings; "
            "print(sorted(m for m in sys.modules if m.startswith('components.') and not m.startswith('components.settings')))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
