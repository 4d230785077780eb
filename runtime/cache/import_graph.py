"""Which project modules a module can import, read from the source (no module is imported).

The graph holds every import a module can make: statements at module level and
inside functions alike (``if TYPE_CHECKING:`` blocks left out: they never run),
plus modules named in strings (``importlib.import_module("components.…")`` and
registry tables that name modules to look a name up in). So a dependency
deferred into a function, or hidden behind a module name in a string, still
counts. ``from a.b import c`` is an edge to ``a.b.c`` when that is a module,
else to ``a.b``. Two kinds of edge are optional: importing ``a.b.c`` also
runs the packages ``a`` and ``a.b``'s ``__init__`` (``package_inits``), and a
``python -m a.b`` command runs ``a.b.__main__`` in another process
(``entry_points``). Both are code that runs, so a task's cache key follows them
(``runtime.cache.task_code``); neither is an import, so the cycle check does not (a
package that imports its own modules to re-export them is no cycle). A third is
the design's: ``type_checking`` adds the imports of ``if TYPE_CHECKING:`` blocks,
which never run but are dependencies all the same (a module that names another's
type depends on it), so the layering and cycle checks count them.

``LAYERS`` says which way the arrows go: the packages ``cli -> flows -> tasks ->
runtime -> components``, and inside ``components`` numbered layers, each module of a
group (a subpackage, or a module at the top of ``components``) at its group's layer.
A module may import its own layer and those below; ``upward_arrows`` lists the
imports that point up.

Python's ``modulefinder`` also reads imports without running them, but it does
not see modules named in strings and it walks the standard library and every
installed package; the project's own modules are all that is needed here.
"""

from __future__ import annotations

import ast
import os
from functools import lru_cache
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("components", "runtime", "tasks", "flows", "cli")


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules_of(packages: tuple[str, ...] = PACKAGES, root: Path = REPO) -> dict[str, Path]:
    """Module name -> source file, for every ``.py`` file of ``packages`` under ``root``."""
    return {module_name(path, root): path for package in packages for path in sorted((root / package).rglob("*.py"))}


COMPONENT_LAYERS: dict[str, int] = {  # group of ``components`` -> its layer (0: the bottom)
    # 0: settings, plain records and process plumbing, which nothing of ours is below
    "": 0, "settings": 0, "records": 0, "numbers": 0, "language_text": 0, "progress": 0, "quiet": 0,
    "lifeline": 0, "setting_keys": 0, "profile_yaml": 0, "scoring_input": 0,
    # 1: reading profiles, and judging a text (its language, its answer)
    "config": 1, "language": 1, "langdetect_detector": 1, "extraction": 1, "verification": 1,
    # 2: capabilities: retrieval (and its text protocol) and the generation backends
    "retrieval": 2, "generation": 2,
    # 3: metrics, which take each benchmark's scheme from their callers
    "metrics": 3,
    # 4: what is evaluated and what is rewarded: benchmarks and datasets, GRPO rewards
    "data": 4, "rewards": 4,
    # 5: the stages' work: scoring, the verifier audit, training
    "scoring": 5, "audit": 5, "training": 5,
    # 6: what is reported and planned from them
    "scoring_explain": 6, "reports": 6, "override_keys": 6, "planning": 6,
    # 7: the catalog of every registry, which the entry points hand to the settings
    "catalog": 7,
}
PACKAGE_LAYERS = {"runtime": 8, "tasks": 9, "flows": 10, "cli": 11}


def layer_of(module: str) -> int | None:
    """The layer of a project module (``None``: its group has none yet, which the layering test refuses).

    >>> layer_of("components.metrics.registry"), layer_of("components.catalog"), layer_of("flows.recipe")
    (3, 7, 10)
    """
    root, _, rest = module.partition(".")
    if root != "components":
        return PACKAGE_LAYERS.get(root)
    return COMPONENT_LAYERS.get(rest.partition(".")[0])


def upward_arrows(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """``(module, imported)`` for every import in ``graph`` that points to a higher layer."""
    return sorted((module, target) for module, targets in graph.items() for target in targets
                  if (layer_of(module) or 0) < (layer_of(target) or 0))


def _type_checking_nodes(tree: ast.Module) -> set[int]:
    blocks = [n for n in ast.walk(tree) if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test)]
    return {id(inner) for block in blocks for inner in ast.walk(block)}


def _absolute(node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    parts = package.split(".")
    return ".".join(parts[: len(parts) - node.level + 1] + [node.module or ""]).strip(".")


def named_modules(value: str, known: set[str], entry_points: bool = False) -> set[str]:
    """The modules a string names: ``components.x`` itself, and with ``entry_points`` its ``__main__`` too (what
    ``python -m components.x`` runs, in another process: code that runs, but no import)."""
    if "." not in value or value not in known:
        return set()
    return {value} | ({f"{value}.__main__"} & known if entry_points else set())


def resolved_import(node: ast.Import | ast.ImportFrom, alias: ast.alias, module: str, is_package: bool,
                    known: set[str]) -> str | None:
    """The project module one imported name stands for (``None`` for other libraries)."""
    if isinstance(node, ast.Import):
        return alias.name if alias.name in known else None
    base = _absolute(node, module if is_package else module.rpartition(".")[0])
    target = f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
    return target if target in known else None


def with_packages(target: str, known: set[str]) -> set[str]:
    """``a.b.c`` and the packages whose ``__init__`` importing it runs (``a``, ``a.b``), where they are known."""
    parts = target.split(".")
    return {".".join(parts[:end]) for end in range(1, len(parts) + 1)} & known


def imports_of(source: str, name: str, is_package: bool, known: set[str], package_inits: bool = False,
               names: bool = True, entry_points: bool = False, type_checking: bool = False) -> set[str]:
    """The modules of ``known`` that module ``name`` (its ``source``) may import (``names``: strings count;
    ``type_checking``: the imports of ``if TYPE_CHECKING:`` blocks too)."""
    tree = ast.parse(source)
    skipped = set() if type_checking else _type_checking_nodes(tree)
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found |= {t for alias in node.names if (t := resolved_import(node, alias, name, is_package, known))}
        elif names and isinstance(node, ast.Constant) and isinstance(node.value, str):
            found |= named_modules(node.value, known, entry_points)
    if package_inits:
        found = set().union(found, *(with_packages(target, known) for target in found))
    return found - {name}


def import_graph(packages: tuple[str, ...] = PACKAGES, root: Path = REPO, package_inits: bool = False,
                 names_from: Callable[[str], bool] = lambda name: True,
                 entry_points: bool = False, type_checking: bool = False) -> dict[str, set[str]]:
    """Module -> the project modules it may import (see the module docstring); the strings of a module count
    when ``names_from(module)``; ``entry_points``: a ``python -m`` name reaches the package's ``__main__``;
    ``type_checking``: imports under ``if TYPE_CHECKING:`` count (the design's dependencies)."""
    return graph_of(modules_of(packages, root), package_inits, names_from, entry_points, type_checking)


def graph_of(modules: dict[str, Path], package_inits: bool = False, names_from: Callable[[str], bool] = lambda name: True,
             entry_points: bool = False, type_checking: bool = False) -> dict[str, set[str]]:
    """``import_graph`` over given modules (name -> source file)."""
    known = frozenset(modules)
    return {name: set(_imports_of_file(str(path), *file_stamp(path), name, known, package_inits, names_from(name),
                                       entry_points, type_checking))
            for name, path in modules.items()}


def file_stamp(path: Path) -> tuple[int, int]:
    """Size and modification time: a file is read again when either changes."""
    stat = os.stat(path)
    return stat.st_size, stat.st_mtime_ns


@lru_cache(maxsize=8192)
def _imports_of_file(path: str, size: int, mtime_ns: int, name: str, known: frozenset[str], package_inits: bool,
                     names: bool, entry_points: bool, type_checking: bool) -> frozenset[str]:
    source = Path(path).read_text(encoding="utf-8")
    return frozenset(imports_of(source, name, Path(path).name == "__init__.py", set(known), package_inits, names,
                                entry_points, type_checking))


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

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


def reachable(graph: dict[str, set[str]], starts: set[str]) -> set[str]:
    """``starts`` and every module they can reach in ``graph``."""
    seen, todo = set(), list(starts)
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo.extend(graph.get(node, ()))
    return seen
