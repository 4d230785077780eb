"""No arrow back up the layers, no import cycle anywhere in the project, and settings import nothing else of ours.

The graph is ``runtime.cache.import_graph``'s: every import a module can make, at module
level and inside functions, plus modules named in strings (``import_module`` calls,
``python -m`` commands), and here the imports of ``if TYPE_CHECKING:`` blocks too: they
never run, but a module that names another's types depends on it, so a circle through
them is a circle of the design. So a dependency deferred into a function, hidden behind
a module name in a string or kept to type checking still counts. The layers are
``runtime.cache.import_graph.LAYERS``: every module has one, and no import points up.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from runtime.cache.import_graph import (
    PACKAGES, _absolute, cycles, import_graph, layer_of, modules_of, named_modules, reachable, upward_arrows,
)  # fmt: skip

REPO = Path(__file__).resolve().parents[2]


def design_graph(root: Path = REPO) -> dict[str, set[str]]:
    """Every import of the project's modules, ``if TYPE_CHECKING:`` blocks included."""
    return import_graph(PACKAGES, root, type_checking=True)


def test_no_import_cycle_in_the_project():
    graph = design_graph()
    assert {name.split(".")[0] for name in graph} == set(PACKAGES)
    assert cycles(graph) == []


def test_every_module_has_a_layer_and_no_import_points_up():
    graph = design_graph()
    assert sorted(name for name in graph if layer_of(name) is None) == []
    assert upward_arrows(graph) == []


def test_the_layering_check_sees_an_arrow_back_up_and_a_circle_through_type_checking(tmp_path):
    """The arrow metrics -> data the metric table once had (QA benchmark names), and the circle metric -> sample ->
    qa -> metric it had through a type-checking import."""
    assert upward_arrows({"components.metrics.registry": {"components.data.benchmarks_qa", "components.metrics.qa"},
                          "components.data.traces": {"components.metrics.lcpr"}}) == [
        ("components.metrics.registry", "components.data.benchmarks_qa")]
    pkg = tmp_path / "components" / "metrics"
    pkg.mkdir(parents=True)
    for name in ("components/__init__.py", "components/metrics/__init__.py"):
        (tmp_path / name).write_text("")
    (pkg / "metric.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                   "    from components.metrics.sample import Sample\n")
    (pkg / "sample.py").write_text("from components.metrics.qa import extract_answer\n")
    (pkg / "qa.py").write_text("def table():\n    from components.metrics.metric import RowField\n")
    assert cycles(import_graph(("components",), tmp_path)) == []  # what runs has no circle
    assert cycles(import_graph(("components",), tmp_path, type_checking=True)) == [
        ["components.metrics.metric", "components.metrics.qa", "components.metrics.sample"]]


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


def test_settings_import_nothing_else_of_ours():
    """Not inside functions, not under TYPE_CHECKING, not by a module name in a string: the registries a profile's
    names are checked against are handed to the settings (``components.settings.registries``)."""
    graph = import_graph(("components",), type_checking=True)
    outside = {name: sorted(t for t in graph[name] if not t.startswith("components.settings"))
               for name in settings_modules()}
    assert {name: found for name, found in outside.items() if found} == {}


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


def test_no_task_reaches_the_catalog_of_every_registry():
    """A task's cache key covers the modules it reaches (``runtime.cache.task_code``): one reaching the catalog would be
    re-run after an edit to any registry."""
    graph = import_graph(PACKAGES, package_inits=True, entry_points=True)
    tasks = {name for name in graph if name.startswith(("tasks.", "runtime.", "components."))} - {"components.catalog"}
    assert "components.catalog" not in reachable(graph, tasks)
