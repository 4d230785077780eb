"""Caching that tells the truth: a task's key is what decides its output, and nothing else.

Prefect's ``TASK_SOURCE`` hashes only the task function's body and its
``DEFAULT`` policy includes the flow-run id, which defeats reuse across runs.
The key here is:

* the task's inputs, with each settings section reduced to its cache view
  (``components.settings.cache_view``: the fields a section declares
  ``OPERATIONAL`` — a timeout, a thread count — are left out, every other field
  counts) and upstream ``ArtifactRef``s entering by path and content fingerprint;
* the files and hub repositories those inputs name, by content and by commit
  (``runtime.cache.file_inputs``: a benchmark directory, an exemplar file, a word list,
  an accelerate config; ``runtime.cache.hub_revisions``: a hub model or dataset);
* the code the task runs, found from its source (``runtime.cache.task_code``): its own
  function and helpers, the source of every project module they can reach, and
  the versions of the libraries its stages declare. Editing a scorer re-scores
  while generation stays cached; upgrading math-verify re-scores too.

Results persist in the project-local store (``PREFECT_RESULTS_LOCAL_STORAGE_PATH``);
outputs go to content-addressed directories ``artifacts/<stage>/<fp[:12]>/``.

A stored result is only as good as the files it points at: another run, a
person or a full disk may have changed them since. ``CheckedArtifacts`` wraps
the key: before Prefect looks the key up, every ``ArtifactRef`` inside the
stored result is checked against its directory's manifest (rows, sha256;
``runtime.artifacts.problem``). A result whose files do not hold what it recorded
is expired (Prefect's record expiration, so the lookup misses), the reason is
logged, and the task runs again.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from prefect.cache_policies import CachePolicy
from pydantic import BaseModel

from components.settings import StrictSettings, cache_view
from runtime.artifacts import ArtifactRef, log, problem
from runtime.cache.file_inputs import settings_files
from runtime.cache.hub_revisions import revisions
from runtime.cache.task_code import TaskCode, task_code

CACHED = {"persist_result": True, "cache_expiration": None}


def canonical_input(value: Any) -> Any:
    """A task input as JSON data: settings by their cache view, artifacts by identity, dataclasses field by field."""
    if isinstance(value, StrictSettings):
        return cache_view(value)
    if isinstance(value, ArtifactRef):  # content identity; the summary is derived from it
        return {"path": value.path, "fingerprint": value.fingerprint}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: canonical_input(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [canonical_input(item) for item in value]
    if isinstance(value, dict):
        return {str(key): canonical_input(item) for key, item in value.items()}
    if isinstance(value, BaseModel):  # e.g. a job that carries settings: field by field, so they keep their view
        return {name: canonical_input(value.__dict__[name]) for name in type(value).model_fields}
    return value


def inputs_key(inputs: dict[str, Any]) -> str:
    """sha256 of the canonical inputs (key order does not matter)."""
    payload = json.dumps(canonical_input(inputs), sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def inputs_read(inputs: dict[str, Any]) -> dict[str, dict[str, str]]:
    """What the inputs name outside themselves: files by content (``runtime.cache.file_inputs``), hub repositories by
    commit (``runtime.cache.hub_revisions``)."""
    return {"files": settings_files(inputs), "revisions": revisions(inputs)}


READ_BY_TASK: dict[str, dict[str, dict[str, str]]] = {}  # task name -> files and revisions its keys covered
# since its stage's run last recorded them (``runtime.cache.report.record_task_code`` takes them out)


def remember_read(task_name: str, read: dict[str, dict[str, str]]) -> None:
    """Keep what a key of ``task_name`` covered in this process, for the stage's run (``runtime.cache.report``)."""
    kept = READ_BY_TASK.setdefault(task_name, {"files": {}, "revisions": {}})
    for part, values in read.items():
        kept[part].update(values)


@dataclass
class SettingsInputs(CachePolicy):
    """Cache-key part: the task's inputs, settings by their cache view, and the files and hub commits they name."""

    def compute_key(self, task_ctx, inputs: dict[str, Any], flow_parameters: dict[str, Any], **kwargs: Any) -> str:
        read = inputs_read(inputs or {})
        remember_read(getattr(getattr(task_ctx, "task", None), "name", "task"), read)
        return inputs_key({"inputs": inputs or {}, "read": read})


@dataclass
class TaskCodeKey(CachePolicy):
    """Cache-key part: the code the task runs and the library versions of its stages (``runtime.cache.task_code``)."""

    stages: tuple[str, ...] = field(default_factory=tuple)

    def compute_key(self, task_ctx, inputs: dict[str, Any], flow_parameters: dict[str, Any], **kwargs: Any) -> str:
        return task_code(task_ctx.task.fn, self.stages).digest


@dataclass
class CheckedArtifacts(CachePolicy):
    """The key of ``inner``; a stored result under it whose artifacts changed is expired before the lookup."""

    inner: CachePolicy | None = None

    def compute_key(self, task_ctx, inputs: dict[str, Any], flow_parameters: dict[str, Any], **kwargs: Any) -> str:
        key = self.inner.compute_key(task_ctx, inputs, flow_parameters, **kwargs)
        if key:
            expire_if_stale(key, getattr(getattr(task_ctx, "task", None), "name", "task"))
        return key


def code_of(task) -> TaskCode:
    """The code ingredients of a cached task's key: what ``TaskCodeKey`` hashes (``runtime.cache.task_code``)."""
    inner = getattr(task.cache_policy, "inner", None)
    parts = getattr(inner, "policies", [])
    stages = next((part.stages for part in parts if isinstance(part, TaskCodeKey)), None)
    if stages is None:
        raise ValueError(f"task {task.name!r} has no cache_policy(...) key")
    return task_code(task.fn, stages)


def cache_policy(*stages: str) -> CachePolicy:
    """Task inputs (settings by their cache view) + the code the task runs + the library versions of ``stages``
    (for ``generation``, also the vLLM of each ``server_python`` the inputs' models are served with,
    ``runtime.cache.server_libraries``); a stored result is reused only while its artifacts are whole."""
    from runtime.cache.server_libraries import ServerLibrariesKey

    inner = SettingsInputs() + TaskCodeKey(stages=tuple(stages))
    if "generation" in stages:
        inner = inner + ServerLibrariesKey()
    return CheckedArtifacts(inner=inner)


def artifact_refs(value: Any) -> list[ArtifactRef]:
    """Every ``ArtifactRef`` inside a task result (lists, dicts, dataclasses, pydantic models)."""
    if isinstance(value, ArtifactRef):
        return [value]
    if isinstance(value, (list, tuple)):
        return [ref for item in value for ref in artifact_refs(item)]
    if isinstance(value, dict):
        return [ref for item in value.values() for ref in artifact_refs(item)]
    if isinstance(value, BaseModel):
        return [ref for name in type(value).model_fields for ref in artifact_refs(getattr(value, name))]
    return []


def expire_if_stale(key: str, task_name: str) -> str | None:
    """Expire the stored result under ``key`` when an artifact it points at changed; returns the reason."""
    from prefect.results import get_result_store

    store = get_result_store()
    if not store.exists(key):
        return None
    try:
        record = store.read(key)
    except Exception:  # noqa: BLE001 - an unreadable record is Prefect's to report when it reads it
        return None
    reasons = [found for ref in artifact_refs(record.result) if (found := problem(ref))]
    if not reasons:
        return None
    log(f"cached result of task {task_name!r} not reused: {reasons[0]}; running it again", warning=True)
    past = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=1)
    store.write(record.result, key=key, expiration=past)
    return reasons[0]
