"""The dependency direction flows -> tasks -> components, checked on the import statements."""

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
