"""MLflow 3 logged models and datasets of a run: what a stage trained, what an evaluation measured, on what.

MLflow 3 gives a model its own entity (a *logged model*: ``create_logged_model``, with
the run that produced it as ``source_run_id``, params, tags and its own artifacts) and lets
a metric name the model and the dataset it measures (``model_id``, ``dataset_name``,
``dataset_digest`` on each metric of ``log_batch``). So:

* each saved checkpoint of a training run and its final adapter is a logged model whose
  artifacts are the adapter's files (never the optimizer state: the cost is the adapter's
  size), with ``step`` as a param; the run names them as its outputs (``log_outputs``);
* the GRPO model relative to the base (the SFT and GRPO adapters as one) is a logged model
  too, the one its evaluation measures; a model that has no weights of ours (a base model,
  a hub id) is a logged model that only describes the reference;
* a stage whose training was a cache hit logs no model again: the logged models of the run that
  did the work (its ``source_run_id``) become outputs of the new run too (``log_outputs`` links an
  existing logged model to another run; no file is copied), and the run names that source run
  with a link (``link_source_models``); a reference model (no weights of ours) is logged once
  per fingerprint and found again after (``reference_model``);
* a benchmark is an MLflow dataset (``mlflow.data.from_pandas``: source, digest, rows)
  logged as an input of the evaluation run, and the run's metrics carry its name and digest.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

from runtime import tracking
from runtime.tracking import RunRef

MODEL_PREFIX = "models:/"


@dataclass(frozen=True)
class DatasetRef:
    """An MLflow dataset logged as a run input: what a metric names to say what it was measured on."""

    name: str
    digest: str


def log_model(run: RunRef, name: str, *, kind: str, step: int | None = None, files: Iterable[Path] = (),
              directory: Path | None = None, params: Mapping[str, object] | None = None,
              tags: Mapping[str, str] | None = None, output: bool = True) -> str:
    """A READY logged model of ``run`` holding ``files`` (or the whole ``directory``); returns its id.

    ``kind`` is MLflow's ``model_type`` (``sft-checkpoint``, ``grpo-model``, ``base-reference`` …); with
    ``output`` the run lists the model among its outputs at ``step``. Params that are ``None`` are left out.
    """
    from mlflow.entities import LoggedModelOutput

    client = tracking.client(run.tracking_uri)
    described = {key: value for key, value in {"step": step, **(params or {})}.items() if value is not None}
    logged = client.create_logged_model(run.experiment_id, name=name, source_run_id=run.run_id, model_type=kind,
                                        params={key: str(value) for key, value in described.items()},
                                        tags={"polyreason.kind": kind, **(tags or {})})
    if directory is not None:
        client.log_model_artifacts(logged.model_id, str(directory))
    files = list(files)
    if files:
        with tempfile.TemporaryDirectory() as scratch:  # only these files: a checkpoint also holds optimizer state
            for path in files:
                linked(path, Path(scratch) / path.name)
            client.log_model_artifacts(logged.model_id, scratch)
    client.finalize_logged_model(logged.model_id, "READY")
    if output:
        client.log_outputs(run.run_id, [LoggedModelOutput(logged.model_id, step or 0)])
    return logged.model_id


def linked(source: Path, target: Path) -> None:
    """``target`` as a hard link to ``source`` (a copy across filesystems)."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def log_model_input(run: RunRef, model_id: str) -> None:
    """Name ``model_id`` as an input of ``run`` (the model an evaluation measured)."""
    from mlflow.entities import LoggedModelInput

    tracking.client(run.tracking_uri).log_inputs(run.run_id, models=[LoggedModelInput(model_id)])


def registered_model_id(tracking_uri: str, reference: str) -> str | None:
    """The logged model behind a registered version ``models:/NAME/VERSION`` (``None`` for a version registered
    without one). MLflow's SQL registry stores no model id (``ModelVersion.model_id`` reads ``None`` from it): the
    version's source names it on a tracking server (``models:/m-…``), its ``polyreason.model_id`` tag everywhere."""
    from runtime.tracking.registry import MODEL_TAG, parse_reference

    name, _, version = parse_reference(reference)
    found = tracking.client(tracking_uri).get_model_version(name, version)
    source = found.source or ""
    from_source = source.removeprefix(MODEL_PREFIX) if source.startswith(f"{MODEL_PREFIX}m-") else None
    return found.model_id or from_source or found.tags.get(MODEL_TAG) or None


def log_dataset(run: RunRef, rows: list[dict], name: str, source: str, context: str) -> DatasetRef:
    """``rows`` as an MLflow dataset input of ``run`` (its digest and row count computed by MLflow)."""
    import pandas as pd

    frame = pd.DataFrame.from_records(rows)
    return DatasetRef(name=name, digest=tracking.log_dataset_input(run, frame, name, source, context=context))


def source_models(tracking_uri: str, source_run_id: str) -> list:
    """The READY logged models produced by run ``source_run_id`` (MLflow's ``source_run_id``), oldest first."""
    client = tracking.client(tracking_uri)
    try:
        experiment_id = client.get_run(source_run_id).info.experiment_id
    except Exception:  # noqa: BLE001 - a source run of another store (or deleted): nothing to link
        return []
    found = client.search_logged_models([experiment_id], filter_string=f"source_run_id = '{source_run_id}'")
    return sorted((m for m in found if str(m.status) in ("READY", "LoggedModelStatus.READY")),
                  key=lambda m: m.creation_timestamp)


def link_source_models(run: RunRef, source_run_id: str | None) -> dict[str, str]:
    """On a cache hit: the source run's logged models as outputs of ``run`` (linked, not copied), and tags leading
    to the source run; returns ``model_type -> model id`` (the last of each type). Empty when there are none
    (then the caller logs its models itself)."""
    from mlflow.entities import LoggedModelOutput

    models = source_models(run.tracking_uri, source_run_id) if source_run_id else []
    if not models:
        return {}
    client = tracking.client(run.tracking_uri)
    client.log_outputs(run.run_id, [LoggedModelOutput(m.model_id, int(m.params.get("step", 0) or 0))
                                    for m in models])
    source = client.get_run(source_run_id)
    url = tracking.run_url(RunRef(run.tracking_uri, source_run_id, source.info.experiment_id))
    link = f"[{source.info.run_name}]({url})" if url.startswith("http") else f"{source.info.run_name} ({url})"
    tracking.set_tags(run, {"polyreason.cache.source_run_url": url,
                            "polyreason.cache.source_models": " ".join(MODEL_PREFIX + m.model_id for m in models),
                            "mlflow.note.content": f"Cache hit: the work (and its {len(models)} logged model(s)) "
                                                   f"was done by run {link}; nothing was trained or copied again."})
    for model in models:
        if "step" in model.params and model.model_type and model.model_type.endswith("-checkpoint"):
            tracking.set_tags(run, {f"polyreason.checkpoint.{model.params['step']}": MODEL_PREFIX + model.model_id})
    return {m.model_type: m.model_id for m in models}


def reference_model(run: RunRef, name: str, kind: str, fingerprint: str, params: Mapping[str, object],
                    tags: Mapping[str, str]) -> str:
    """The logged model describing a reference (no weights uploaded) with this ``fingerprint``: the one an earlier
    run logged in this experiment, else a new one."""
    client = tracking.client(run.tracking_uri)
    found = client.search_logged_models([run.experiment_id], filter_string=(
        f"params.fingerprint = '{fingerprint}' AND name = '{name}'"), max_results=1)
    if found:
        return found[0].model_id
    return log_model(run, name, kind=kind, output=False, params={**params, "fingerprint": fingerprint}, tags=tags)
