"""The dependency direction cli -> flows -> tasks -> runtime -> components, and one kind of thing per folder.

Checked on the import statements: a package never imports one above it (the
layers inside ``components`` are ``tests/unit/test_import_graph.py``'s). Flows
sequence stages and never reach into component internals: besides tasks, the
runtime and other flows they may import only the settings, profile loading and
the catalog of registries they hand to the settings. Each folder holds one kind of module: every module of ``tasks/``
defines Prefect tasks, every module of ``flows/`` defines flows (or is a plan of
which flows run: ``PLANS``), and ``runtime/`` and ``cli/`` define neither.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

FORBIDDEN = {
    "components": {"prefect", "mlflow", "runtime", "tasks", "flows", "cli"},
    "runtime": {"tasks", "flows", "cli"},
    "tasks": {"flows", "cli"},
    "flows": {"cli"},
}
PLANS = {"flows/commands.py", "flows/recipe_plan.py"}  # which flows run, decided from a profile


def imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


FLOW_MAY_IMPORT = {"components.settings", "components.config", "components.catalog"}  # catalog: flows/__init__


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def python_files(package: str) -> list[Path]:
    return sorted((REPO / package).rglob("*.py"))


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_respects_layering(package):
    files = python_files(package)
    assert files, f"no python files under {package}/"
    offenders = {
        str(path.relative_to(REPO)): sorted(imported_roots(path) & FORBIDDEN[package])
        for path in files
        if imported_roots(path) & FORBIDDEN[package]
    }
    assert offenders == {}


def test_checker_sees_a_violation(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import prefect\nfrom mlflow import MlflowClient\nfrom .local import x\n")
    assert imported_roots(bad) == {"prefect", "mlflow"}


def test_flows_use_only_the_public_surface_of_components():
    offenders = {}
    for path in python_files("flows"):
        inner = sorted(m for m in imported_modules(path) if m.startswith("components") and m not in FLOW_MAY_IMPORT)
        if inner:
            offenders[str(path.relative_to(REPO))] = inner
    assert offenders == {}


def test_flow_check_sees_an_internal_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from components.settings import Profile\nfrom components.data.datasets import require_rows\n")
    assert sorted(m for m in imported_modules(bad) if m not in FLOW_MAY_IMPORT) == ["components.data.datasets"]


def prefect_definitions(path: Path) -> set[str]:
    """``task`` / ``flow`` when the module defines a Prefect task / flow (decorated, or ``flow(...)(function)``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = set()
    for node in ast.walk(tree):
        decorators = node.decorator_list if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else []
        calls = [node.func.func] if isinstance(node, ast.Call) and isinstance(node.func, ast.Call) else []
        for item in [*decorators, *calls]:
            target = item.func if isinstance(item, ast.Call) else item
            if isinstance(target, ast.Name) and target.id in ("task", "flow"):
                found.add(target.id)
    return found


def modules(package: str) -> list[Path]:
    return [path for path in python_files(package) if path.name not in ("__init__.py", "__main__.py")]


def test_each_folder_holds_one_kind_of_module():
    kinds = {str(path.relative_to(REPO)): prefect_definitions(path)
             for package in ("tasks", "flows", "runtime", "cli") for path in modules(package)}
    wrong = {name: sorted(found) for name, found in kinds.items()
             if (name.startswith("tasks/") and found != {"task"})
             or (name.startswith("flows/") and name not in PLANS and "flow" not in found)
             or (name in PLANS and found)
             or (name.startswith(("runtime/", "cli/")) and found)}
    assert wrong == {}


def test_kind_check_sees_tasks_and_flows(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("from prefect import flow, task\n@task(name='x')\ndef a(): ...\nb = flow(name='y')(a)\n")
    assert prefect_definitions(source) == {"task", "flow"}
    source.write_text("def task(): ...\n")
    assert prefect_definitions(source) == set()
