"""Caching that tells the truth (ARCHITECTURE.md, habit 3).

Prefect's ``TASK_SOURCE`` hashes only the task function's body and its
``DEFAULT`` policy includes the flow-run id, which defeats reuse across runs.
``ComponentSource`` adds a hash of the source files of the component modules a
task calls, so editing a scorer re-scores while generation stays cached; the
task's own inputs (settings sections, upstream ``ArtifactRef`` fingerprints)
come from Prefect's ``INPUTS``. Results persist under a project-local store.
"""

from __future__ import annotations

import hashlib
import importlib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from prefect.cache_policies import INPUTS, TASK_SOURCE, CachePolicy


@lru_cache(maxsize=None)
def module_source_hash(module_name: str) -> str:
    """sha256 of a module's source file (or every ``.py`` file of a package)."""
    module = importlib.import_module(module_name)
    path = Path(module.__file__)
    files = sorted(path.parent.rglob("*.py")) if path.name == "__init__.py" else [path]
    digest = hashlib.sha256()
    for file in files:
        digest.update(file.name.encode())
        digest.update(file.read_bytes())
    return digest.hexdigest()


@dataclass
class ComponentSource(CachePolicy):
    """Cache-key part: the source of the listed component modules."""

    modules: tuple[str, ...] = field(default_factory=tuple)

    def compute_key(self, task_ctx, inputs: dict[str, Any], flow_parameters: dict[str, Any], **kwargs: Any) -> str:
        digest = hashlib.sha256()
        for name in self.modules:
            digest.update(name.encode())
            digest.update(module_source_hash(name).encode())
        return digest.hexdigest()


def component_cache_policy(*modules: str) -> CachePolicy:
    """Task inputs + the task's own source + the source of the components it calls."""
    return INPUTS + TASK_SOURCE + ComponentSource(modules=tuple(modules))


@dataclass(frozen=True)
class ArtifactRef:
    """What a stage task returns: where its output is, its content fingerprint, a summary."""

    path: str
    fingerprint: str
    summary: dict = field(default_factory=dict)


def artifact_dir(project_dir: str | Path, stage: str, fingerprint: str) -> Path:
    """Content-addressed output directory ``<project>/artifacts/<stage>/<fp[:12]>/``."""
    path = Path(project_dir).resolve() / "artifacts" / stage / fingerprint[:12]
    path.mkdir(parents=True, exist_ok=True)
    return path


def file_fingerprint(path: str | Path) -> str:
    """sha256 of a file's bytes (for upstream artifacts in cache keys)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
