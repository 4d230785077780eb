"""What a stage's MLflow run says about its cache: hit or miss, who produced the artifacts, and why.

* ``polyreason.cache``: ``hit`` when every cached task of the stage was reused,
  else ``miss``. A stage that ran writes ``produced_by.json`` (its run) into each
  artifact directory it created, beside the manifest (directory bookkeeping, no
  product: ``runtime.artifacts.BOOKKEEPING``); a stage whose tasks were all
  reused reads it back, so its run points at the run that did the work
  (``polyreason.cache.source_run``, its page in ``polyreason.cache.source_run_url`` and the run's
  description) instead of doing it again.
* The ingredients of each task's key besides its inputs (``runtime.cache.task_code``):
  ``cache_key/<task>.json`` holds the sha256 of every project module the task
  reaches, the digest of its own code and the versions of its stage's
  libraries, and the tag ``polyreason.cache.code.<task>`` the digest of them
  all. Two runs of one profile whose tags differ ran different code; the files
  say which module or library changed. The files the task's inputs named
  (``files``: path -> sha256) and the hub commits they resolved to
  (``revisions``, also the tags ``revision.model.<repo>`` /
  ``revision.dataset.<repo>``) are recorded beside them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

from runtime.artifacts import PRODUCED_BY, write_atomic, writing
from runtime.cache.policy import READ_BY_TASK, code_of
from runtime.cache.hub_revisions import revision_tags
from runtime.tracking import RunRef, log_dict, note_cache, set_tags


def record_task_code(run: RunRef, tasks: Iterable) -> dict[str, str]:
    """Log the key ingredients of each cached task (see the module docstring); returns the tags set."""
    tags = {}
    for task in tasks:
        code = code_of(task)
        read = READ_BY_TASK.pop(task.name, {"files": {}, "revisions": {}})  # this stage's keys, not the next's
        files = {path: value[:12] for path, value in read["files"].items()}
        log_dict(run, {"task": task.name, **code.summary(), "files": files, "revisions": read["revisions"]},
                 f"cache_key/{task.name}.json")
        tags[f"polyreason.cache.code.{task.name}"] = code.digest[:12]
        tags.update(revision_tags(read["revisions"]))
    set_tags(run, tags)
    return tags


def source_tags(run: RunRef, source_run_id: str) -> dict[str, str]:
    """The tags that lead from a cache hit's run to the run that did the work: its id, its page and, unless the
    run has a description already, one saying so (``mlflow.note.content``, shown on the run's overview)."""
    from runtime import tracking

    source = tracking.client(run.tracking_uri).get_run(source_run_id)
    url = tracking.run_url(RunRef(run.tracking_uri, source_run_id, source.info.experiment_id))
    tags = {"polyreason.cache.source_run": source_run_id, "polyreason.cache.source_run_url": url}
    if "mlflow.note.content" not in tracking.client(run.tracking_uri).get_run(run.run_id).data.tags:
        link = f"[{source.info.run_name}]({url})" if url.startswith("http") else f"{source.info.run_name} ({url})"
        tags["mlflow.note.content"] = f"Cache hit: the work was done by run {link}."
    return tags


def produced_by(directory: str | Path) -> str | None:
    """The run that produced ``directory`` (its ``produced_by.json``), ``None`` when it does not say."""
    path = Path(directory) / PRODUCED_BY
    return json.loads(path.read_text(encoding="utf-8")).get("run_id") if path.is_file() else None


def mark_cache(run: RunRef, artifact_dirs: Iterable[str | Path], cached: bool, tasks: Iterable = ()) -> dict[str, str]:
    """Tag whether a stage reused cached artifacts and which run produced them; record its tasks' key ingredients."""
    dirs = [Path(d) for d in artifact_dirs]
    tags = {"polyreason.cache": "hit" if cached else "miss"}
    if cached:
        sources = [json.loads((d / PRODUCED_BY).read_text(encoding="utf-8")) for d in dirs if (d / PRODUCED_BY).is_file()]
        if sources:
            tags.update(source_tags(run, sources[0]["run_id"]))
    else:
        for directory in dirs:
            if directory.is_dir() and not (directory / PRODUCED_BY).is_file():
                with writing(directory):
                    write_atomic(directory / PRODUCED_BY, json.dumps({"run_id": run.run_id}))
    set_tags(run, tags)
    note_cache(run, cached)
    return {**tags, **record_task_code(run, tasks)}
