"""No import cycle anywhere in the project, and the settings package imports nothing else of ours.

The graph is ``runtime.import_graph``'s: every import a module can make, at module
level and inside functions (``if TYPE_CHECKING:`` blocks left out: they never
run), plus modules named in strings (the ``REGISTRIES`` table, ``import_module``
calls, ``python -m`` commands). So a dependency deferred into a function, or
hidden behind a module name in a string, still counts.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from runtime.import_graph import PACKAGES, _absolute, cycles, import_graph, modules_of, named_modules, reachable

REPO = Path(__file__).resolve().parents[2]


def test_no_import_cycle_in_the_project():
    graph = import_graph(PACKAGES)
    assert {name.split(".")[0] for name in graph} == set(PACKAGES)
    assert cycles(graph) == []


def test_the_cycle_check_sees_a_cycle(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.b import thing\n")
    (pkg / "b.py").write_text("import pkg.c\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.a\n")
    (pkg / "c.py").write_text("def lazy():\n    from pkg import a\n")
    (pkg / "d.py").write_text("import importlib\nREG = importlib.import_module('pkg.e')\n")
    (pkg / "e.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.d\n")
    assert cycles(import_graph(("pkg",), tmp_path)) == [["pkg.a", "pkg.b", "pkg.c"]]
    (pkg / "e.py").write_text("import pkg.d\n")
    assert cycles(import_graph(("pkg",), tmp_path)) == [["pkg.a", "pkg.b", "pkg.c"], ["pkg.d", "pkg.e"]]


@pytest.mark.parametrize("package_inits, expected", [
    (False, {"pkg.sub.leaf"}),
    (True, {"pkg", "pkg.sub", "pkg.sub.leaf"}),  # importing pkg.sub.leaf runs both packages' __init__
])
def test_package_inits_are_edges_only_when_asked(tmp_path, package_inits, expected):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    for name in ("pkg/__init__.py", "pkg/sub/__init__.py", "pkg/sub/leaf.py"):
        (tmp_path / name).write_text("")
    (tmp_path / "pkg" / "user.py").write_text("def f():\n    from pkg.sub.leaf import x\n")
    graph = import_graph(("pkg",), tmp_path, package_inits=package_inits)
    assert graph["pkg.user"] == expected
    assert reachable(graph, {"pkg.user"}) == expected | {"pkg.user"}


def test_a_python_dash_m_string_reaches_the_package_main(tmp_path):
    (tmp_path / "pkg" / "tool").mkdir(parents=True)
    for name in ("pkg/__init__.py", "pkg/tool/__init__.py", "pkg/tool/__main__.py"):
        (tmp_path / name).write_text("")
    (tmp_path / "pkg" / "launch.py").write_text("COMMAND = ['python', '-m', 'pkg.tool']\n")
    assert import_graph(("pkg",), tmp_path)["pkg.launch"] == {"pkg.tool"}  # another process: no import
    assert import_graph(("pkg",), tmp_path, entry_points=True)["pkg.launch"] == {"pkg.tool", "pkg.tool.__main__"}
    assert import_graph(("pkg",), tmp_path, names_from=lambda name: name != "pkg.launch")["pkg.launch"] == set()


def import_time_targets(path: Path, name: str, known: set[str]) -> set[str]:
    """The modules of ``known`` that importing ``name`` imports: statements outside functions and TYPE_CHECKING."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue  # runs when called, not when imported
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            pending.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, package)
            found |= {f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names}
        pending.extend(ast.iter_child_nodes(node))
    return {target for target in found if target.split(".")[0] in PROJECT_PACKAGES} - {name}


PROJECT_PACKAGES = (*PACKAGES, "bench", "tests")


def settings_modules() -> dict[str, Path]:
    return {name: path for name, path in modules_of(("components",)).items() if name.startswith("components.settings")}


def test_settings_modules_import_only_settings_modules_when_imported():
    """Importing a settings module runs no import of another project module (functions aside)."""
    known = set(modules_of(("components",)))
    outside = {name: sorted(t for t in import_time_targets(path, name, known) if not t.startswith("components.settings"))
               for name, path in settings_modules().items()}
    assert {name: found for name, found in outside.items() if found} == {}


def test_settings_reach_other_packages_only_through_the_registries():
    """Every other package a settings module may import (in functions, or by name) is a module ``REGISTRIES``
    names, and only ``components.settings.base`` names modules at all."""
    from components.settings.base import REGISTRIES

    registries = {module for module, _ in REGISTRIES.values()}
    graph = import_graph(("components",))
    outside = {name: sorted(t for t in graph[name] if not t.startswith("components.settings") and t not in registries)
               for name in settings_modules()}
    assert {name: found for name, found in outside.items() if found} == {}
    known = set(modules_of(("components",)))
    naming = sorted(name for name, path in settings_modules().items()
                    if any(named_modules(node.value, known) for node in ast.walk(ast.parse(path.read_text("utf-8")))
                           if isinstance(node, ast.Constant) and isinstance(node.value, str)))
    assert naming == ["components.settings.base"]


def test_the_import_time_check_sees_an_import(tmp_path):
    pkg = tmp_path / "components"
    pkg.mkdir()
    (pkg / "leaf.py").write_text("import os\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import components.a\n"
                                 "def later():\n    import components.b\nclass C:\n    from components import d\n")
    known = {"components.a", "components.b", "components.d", "components.leaf"}
    assert import_time_targets(pkg / "leaf.py", "components.leaf", known) == {"components.d"}


def test_settings_package_imports_alone():
    """In a fresh interpreter, importing every settings module loads no other project module, nor trl or torch."""
    modules = sorted(settings_modules())
    code = (f"import sys; [__import__(m) for m in {modules!r}]; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('components', 'runtime', 'tasks', 'flows', "
            "'cli', 'trl', 'torch', 'transformers') and not m.startswith('components.settings') and m != 'components'))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
