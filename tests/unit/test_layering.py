"""The dependency direction flows -> tasks -> components, checked on the import statements.

Flows sequence stages and never reach into component internals: besides tasks and
other flows they may import only the settings, profile loading, and the scoring
driver behind ``polyreason score``/``verify`` (which runs no stage).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

FORBIDDEN = {
    "components": {"prefect", "mlflow", "tasks", "flows"},
    "tasks": {"flows"},
}


def imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


FLOW_MAY_IMPORT = {"components.settings", "components.config", "components.scoring"}


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
