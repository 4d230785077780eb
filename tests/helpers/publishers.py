"""Who wrote what in a project's artifacts: every file belongs to a product its directory published.

``late_writes(project)`` lists what breaks the one-publisher rule: a directory
under ``artifacts/<stage>/<fp>/`` with files but no manifest (written outside the
artifact protocol), a file listed by two products, and a file that is in no
product and was not there when the directory's products were published (written
into a published directory afterwards). Locks, journals of interrupted runs and
directory bookkeeping are left out.
"""

from __future__ import annotations

import json
from pathlib import Path

from runtime.artifacts import BOOKKEEPING, MANIFEST


def artifact_dirs(project: Path) -> list[Path]:
    """Every directory holding files directly under a content-addressed ``artifacts/<stage…>/<fp>/``."""
    root = project / "artifacts"
    found = {path.parent for path in root.rglob("*") if path.is_file() and not path.name.endswith(".lock")}
    return sorted({_owner(directory, root) for directory in found})


def _owner(directory: Path, root: Path) -> Path:
    """The artifact directory a file's folder belongs to: the nearest one with a manifest, else the folder."""
    for candidate in (directory, *directory.parents):
        if candidate == root:
            break
        if (candidate / MANIFEST).is_file():
            return candidate
    return directory


def late_writes(project: Path) -> list[str]:
    """Files of ``project``'s artifacts no single product accounts for (see the module docstring)."""
    problems = []
    for directory in artifact_dirs(project):
        manifest_path = directory / MANIFEST
        if not manifest_path.is_file():
            problems.append(f"{directory}: files but no manifest (written outside the artifact protocol)")
            continue
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        owners: dict[str, list[str]] = {}
        known: set[str] = set()
        for product, entry in manifest.items():
            for name in entry["files"]:
                owners.setdefault(name, []).append(product)
            known |= set(entry.get("others", []))
        problems += [f"{directory / name}: published by {', '.join(products)}"
                     for name, products in owners.items() if len(products) > 1]
        for path in sorted(directory.rglob("*")):
            name = str(path.relative_to(directory))
            if (path.is_file() and path.name not in BOOKKEEPING and ".partial" not in path.name
                    and not path.name.startswith(".") and name not in owners and name not in known):
                problems.append(f"{path}: in no product, written after {directory} was published")
    return problems
