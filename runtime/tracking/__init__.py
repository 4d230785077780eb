"""MLflow through an explicit run id, never the thread-local active run.

Every call names its run with a ``RunRef`` (tracking URI + run id) and goes
through ``mlflow.MlflowClient``; nothing here uses the fluent, thread-local
active run, because Prefect may run tasks on worker threads. The default store
is SQLite under ``<project>/mlruns/mlflow.db`` with artifacts beside it: MLflow
3.17 refuses the old ``file:./mlruns`` store. Metric names are checked: MLflow
rejects ``@`` and ``&`` (use ``pass_at_1``, ``slc_and_acc``).

A run without a parent (a recipe's, or a stage run alone) carries the code's
provenance: the git commit, whether the working tree had uncommitted changes,
and the versions of the libraries the stages declare (``runtime.tracking.provenance``).

The experiment is a model-training experiment: its ``mlflow.experimentKind`` tag is
``custom_model_development`` (set when it is created, and on an existing one that
lacks it). MLflow 3.17's UI takes the view from its GenAI / Model training switch
(the ``workflowType`` query parameter, else the browser's last choice, GenAI by
default), so the links printed here carry ``?workflowType=machine_learning`` and open
on the runs table. Run names tell runs apart: the profile and stage, the overrides
that changed the profile (``tracking.run_label``) and the run id's first 8
characters; the Prefect flow run that opened a run is on its tags
(``prefect.flow_run.id``/``name``/``url``, from ``prefect.runtime.flow_run``).

Nothing is left RUNNING: ``stage_run`` closes its run FINISHED, FAILED, or
KILLED when an interrupt (Ctrl-C, SIGTERM) unwinds it; this process's open runs
are listed (``open_runs``) so an interrupted CLI can close any the unwinding
did not reach; every run carries its process's ``polyreason.owner`` tag, by
which ``runtime.processes.abandoned`` marks KILLED the runs a ``kill -9`` left RUNNING.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from contextlib import contextmanager
from typing import Any, Iterable, Iterator, Mapping

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

from components.config import flatten
from components.settings import TrackingSettings, redact_credentials
from runtime.processes.children import owner_token
from runtime.tracking.provenance import provenance_tags

FORBIDDEN_METRIC_CHARS = "@&"
EXPERIMENT_KIND = ("mlflow.experimentKind", "custom_model_development")  # MLflow UI: a model-training experiment
UI_VIEW = "workflowType=machine_learning"  # MLflow 3.17's UI: open the model-training view
MAX_LABEL = 100
OWNER_TAG = "polyreason.owner"
_OPEN: dict[str, "RunRef"] = {}  # run id -> run, for runs this process has open
KILLED: list[str] = []  # ids of the runs this process closed as KILLED
MAX_PARAM_VALUE = 6000
SECRET_NAMES = ("api_key", "apikey", "token", "secret", "password", "passwd", "credentials")  # a key's last part


@dataclass(frozen=True)
class RunRef:
    """Where a run lives: serializable, safe to pass between Prefect tasks."""

    tracking_uri: str
    run_id: str
    experiment_id: str


def tracking_uri(settings: TrackingSettings, project_dir: str | Path) -> str:
    """The profile's URI, else ``MLFLOW_TRACKING_URI`` (the project's running stack sets it), else
    ``sqlite:///<project>/mlruns/mlflow.db``."""
    if settings.tracking_uri:
        return settings.tracking_uri
    if os.environ.get("MLFLOW_TRACKING_URI"):
        return os.environ["MLFLOW_TRACKING_URI"]
    store = Path(project_dir).resolve() / "mlruns"
    store.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{store / 'mlflow.db'}"


def artifact_root(settings: TrackingSettings, project_dir: str | Path) -> str | None:
    """Artifact location for new experiments (``<project>/mlruns/artifacts`` for local stores)."""
    if settings.artifact_root:
        return settings.artifact_root
    if not tracking_uri(settings, project_dir).startswith("sqlite:"):
        return None  # a tracking server chooses its own artifact store
    return (Path(project_dir).resolve() / "mlruns" / "artifacts").as_uri()


def client(uri: str):
    """An ``MlflowClient`` bound to ``uri`` for tracking and the model registry alike.

    Without ``registry_uri`` MLflow resolves the registry from its process-wide
    default (a ``mlflow.db`` in the working directory), not from the client's store.
    The import is kept local: mlflow is slow to import.
    """
    from mlflow import MlflowClient

    return MlflowClient(tracking_uri=uri, registry_uri=uri)


def ensure_experiment(uri: str, name: str, artifact_location: str | None) -> str:
    """Id of experiment ``name``, created on first use (by whichever of two concurrent runs gets there first)."""
    from mlflow.exceptions import MlflowException

    mlflow_client = client(uri)
    found = mlflow_client.get_experiment_by_name(name)
    if found is None:
        try:
            return mlflow_client.create_experiment(name, artifact_location=artifact_location,
                                                   tags=dict([EXPERIMENT_KIND]))
        except MlflowException:
            found = mlflow_client.get_experiment_by_name(name)
            if found is None:
                raise
    if EXPERIMENT_KIND[0] not in found.tags:  # made before experiments were tagged, or by another tool
        mlflow_client.set_experiment_tag(found.experiment_id, *EXPERIMENT_KIND)
    return found.experiment_id


def is_secret_key(key: str) -> bool:
    """True when a parameter's last dotted part names a secret *value* (never logged); every other key is logged.

    The last part is the secret's name (``api_key``, ``token``, ``secret``, ``password``...) or ends with
    ``_<name>`` (``hf_token``, ``openai_api_key``). A key that merely contains such a word is a setting:
    ``max_new_tokens`` counts tokens, and an ``*_env`` key (``api_key_env``) holds the *name* of the
    environment variable with the secret, never the secret itself, so it is logged.

    >>> [is_secret_key(k) for k in ("evaluation.sampling.max_new_tokens", "evaluation.model.api_key_env",
    ...                              "evaluation.model.api_key", "hub.hf_token", "db.password")]
    [False, False, True, True, True]
    """
    last = key.lower().rsplit(".", 1)[-1]
    return any(last == name or last.endswith(f"_{name}") for name in SECRET_NAMES)


def _param_entities(params: Mapping[str, Any]):
    from mlflow.entities import Param

    entities = []
    for key, value in params.items():
        if is_secret_key(key):
            continue
        text = "" if value is None else redact_credentials(str(value))
        entities.append(Param(key, text[:MAX_PARAM_VALUE]))
    return entities


def open_run(
    settings: TrackingSettings,
    project_dir: str | Path,
    run_name: str,
    params: Mapping[str, Any] | None = None,
    tags: Mapping[str, str] | None = None,
    parent: RunRef | None = None,
    settings_of: Mapping[str, Any] | None = None,
) -> RunRef:
    """Create a run (never the fluent active run), nested under ``parent`` when given.

    ``settings_of`` (dotted prefix -> settings section) are the run's settings: those that differ from their
    defaults become params and every one is in its ``settings.json`` (``runtime.tracking.run_settings``); ``params`` are
    logged as given, flattened."""
    from runtime.tracking.run_settings import SETTINGS_FILE, every_setting, run_params

    uri = tracking_uri(settings, project_dir)
    experiment_id = ensure_experiment(uri, settings.experiment, artifact_root(settings, project_dir))
    tags = {**redact_credentials(dict(tags or {})), OWNER_TAG: owner_token()}
    if parent is not None:
        tags["mlflow.parentRunId"] = parent.run_id
    mlflow_client = client(uri)
    run = mlflow_client.create_run(experiment_id, run_name=run_name, tags=tags)
    ref = RunRef(uri, run.info.run_id, experiment_id)
    mlflow_client.update_run(ref.run_id, name=redact_credentials(run_title(run_name, settings.run_label, ref.run_id)))
    _OPEN[ref.run_id] = ref
    sections = dict(settings_of or {})
    given = {**run_params(sections), **flatten(dict(params or {}))}
    log_params(ref, {**{k: v for k, v in given.items() if not k.startswith("tracking.overrides")},
                     **override_params(settings)})  # the overrides once, each its own param
    if sections:
        log_dict(ref, {key: redact_credentials(value) if isinstance(value, str) else value
                       for key, value in every_setting(sections).items() if not is_secret_key(key)}, SETTINGS_FILE)
    return ref


def override_params(settings: TrackingSettings) -> dict[str, str]:
    """Each override that changed the profile as a param of its own: ``override.<dotted key>`` = the value typed.

    >>> override_params(TrackingSettings(overrides={"evaluation.benchmarks.0.limit": "8"}))
    {'override.evaluation.benchmarks.0.limit': '8'}
    """
    return {f"override.{key}": value for key, value in settings.overrides.items()}


def run_title(name: str, label: str | None, run_id: str) -> str:
    """A run's name: what it is, what changed, and a short id.

    >>> run_title("demo-grpo", "grpo.learning_rate=5e-5", "1a2b3c4d5e6f")
    'demo-grpo · grpo.learning_rate=5e-5 · 1a2b3c4d'
    >>> run_title("demo-recipe", None, "1a2b3c4d5e6f")
    'demo-recipe · 1a2b3c4d'
    """
    if label and len(label) > MAX_LABEL:
        label = label[: MAX_LABEL - 1] + "…"
    return " · ".join(part for part in (name, label, run_id[:8]) if part)


def flow_run_tags() -> dict[str, str]:
    """The Prefect flow run this code runs in (``prefect.runtime.flow_run``): id, name and UI page; empty outside one.

    The page only where a server with a UI is configured: without one (Prefect's ephemeral in-process server)
    ``PREFECT_UI_URL`` is unset and ``flow_run.ui_url`` would read ``None/flow-runs/...``.
    """
    from prefect.runtime import flow_run
    from prefect.settings import PREFECT_UI_URL

    if not flow_run.id:
        return {}
    tags = {"prefect.flow_run.id": str(flow_run.id), "prefect.flow_run.name": str(flow_run.name or "")}
    url = flow_run.ui_url if PREFECT_UI_URL.value() else None
    return {**tags, "prefect.flow_run.url": url} if url else tags


def log_params(ref: RunRef, params: Mapping[str, Any]) -> None:
    """Log params in batches of 100 (MLflow's limit); keys naming a secret value (``is_secret_key``) are skipped."""
    entities = _param_entities(flatten(dict(params)))
    for start in range(0, len(entities), 100):
        client(ref.tracking_uri).log_batch(ref.run_id, params=entities[start : start + 100])


def check_metric_name(name: str) -> str:
    """Refuse names MLflow would reject later.

    >>> check_metric_name("evaluation/mgsm/fr/pass_at_1")
    'evaluation/mgsm/fr/pass_at_1'
    """
    bad = [c for c in FORBIDDEN_METRIC_CHARS if c in name]
    if bad:
        raise ValueError(f"metric name {name!r} contains {''.join(bad)!r}; use _at_ / _and_")
    return name


def log_metrics(ref: RunRef, metrics: Mapping[str, float | None], step: int | None = None, *,
                model_id: str | None = None, dataset: Any = None) -> int:
    """Log finite numeric metrics in batches; ``None``/NaN values are skipped. Returns the count logged.

    ``model_id``: the logged model they measure; ``dataset``: what they were measured on (a logged input's
    ``name`` and ``digest``), both kept on each metric (MLflow 3).
    """
    from mlflow.entities import Metric

    now = int(time.time() * 1000)
    on = {"model_id": model_id, "dataset_name": dataset and dataset.name, "dataset_digest": dataset and dataset.digest}
    entities = [
        Metric(check_metric_name(key), float(value), now, step or 0, **on)
        for key, value in metrics.items()
        if value is not None and not isinstance(value, bool) and math.isfinite(float(value))
    ]
    for start in range(0, len(entities), 500):
        client(ref.tracking_uri).log_batch(ref.run_id, metrics=entities[start : start + 500])
    return len(entities)


def log_metric_series(ref: RunRef, rows: Iterable[Mapping[str, Any]], step_key: str = "step") -> int:
    """Log rows like ``{"step": 3, "loss": 0.5, ...}`` as per-step metrics."""
    count = 0
    for row in rows:
        step = int(row.get(step_key, 0))
        values = {k: v for k, v in row.items() if k != step_key and isinstance(v, (int, float))}
        count += log_metrics(ref, values, step=step)
    return count


def log_artifact(ref: RunRef, path: str | Path, artifact_path: str | None = None) -> None:
    """Upload a file or a directory to the run's artifacts."""
    path = Path(path)
    mlflow_client = client(ref.tracking_uri)
    if path.is_dir():
        mlflow_client.log_artifacts(ref.run_id, str(path), artifact_path)
    else:
        mlflow_client.log_artifact(ref.run_id, str(path), artifact_path)


def log_artifact_as(ref: RunRef, path: str | Path, artifact_file: str) -> None:
    """A file under another name in the run's artifacts (uploaded from a temporary copy; the project is untouched)."""
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        target = Path(scratch) / Path(artifact_file).name
        shutil.copyfile(path, target)
        log_artifact(ref, target, str(Path(artifact_file).parent) if "/" in artifact_file else None)


def log_text(ref: RunRef, text: str, artifact_file: str) -> None:
    """A text file in the run's artifacts, written by MLflow (nothing is written into the project)."""
    client(ref.tracking_uri).log_text(ref.run_id, text, artifact_file)


def log_dict(ref: RunRef, data: Mapping[str, Any], artifact_file: str) -> None:
    """A JSON file in the run's artifacts (``MlflowClient.log_dict``)."""
    client(ref.tracking_uri).log_dict(ref.run_id, dict(data), artifact_file)


def log_table(ref: RunRef, records: list[dict[str, Any]], artifact_file: str) -> None:
    """A table shown in the MLflow UI (``MlflowClient.log_table``)."""
    import pandas as pd

    client(ref.tracking_uri).log_table(ref.run_id, pd.DataFrame.from_records(records), artifact_file)


def log_figure(ref: RunRef, figure, artifact_file: str) -> None:
    """A matplotlib figure as a PNG artifact."""
    client(ref.tracking_uri).log_figure(ref.run_id, figure, artifact_file)


def log_dataset_input(ref: RunRef, frame, name: str, source: str, context: str = "training") -> str:
    """Link a dataset (pandas) to the run as an input with its digest; returns the digest."""
    import mlflow.data
    from mlflow.entities import DatasetInput, InputTag

    dataset = mlflow.data.from_pandas(frame, source=source, name=name)
    entity = DatasetInput(dataset._to_mlflow_entity(), tags=[InputTag("mlflow.data.context", context)])
    client(ref.tracking_uri).log_inputs(ref.run_id, datasets=[entity])
    return dataset.digest


def set_tags(ref: RunRef, tags: Mapping[str, str]) -> None:
    """Tags of the run (a URL in a value shows no user or password)."""
    mlflow_client = client(ref.tracking_uri)
    for key, value in tags.items():
        mlflow_client.set_tag(ref.run_id, key, redact_credentials(value))


def finish_run(ref: RunRef, status: str = "FINISHED") -> None:
    """Close the run (``FINISHED``, ``FAILED`` or ``KILLED``)."""
    client(ref.tracking_uri).set_terminated(ref.run_id, status=status)
    _OPEN.pop(ref.run_id, None)
    if status == "KILLED":
        KILLED.append(ref.run_id)


def open_runs() -> list[RunRef]:
    """Runs this process opened and has not closed yet, innermost (latest) first."""
    return list(reversed(_OPEN.values()))


def interrupted(error: BaseException) -> bool:
    """Whether an exception ends a run from outside: Ctrl-C, SIGTERM (Prefect's ``TerminationSignal``), exit."""
    from prefect.exceptions import ExternalSignal

    return isinstance(error, (KeyboardInterrupt, SystemExit, ExternalSignal))


@contextmanager
def stage_run(settings: TrackingSettings, project_dir: str | Path, run_name: str, *, stage: str,
              params: Mapping[str, Any] | None = None, tags: Mapping[str, str] | None = None,
              parent: RunRef | None = None, settings_of: Mapping[str, Any] | None = None) -> Iterator[RunRef]:
    """A run for one stage (a child of ``parent``): FINISHED when the block ends, FAILED or KILLED when it raises.

    The runs of stages that train or generate log the machine's system metrics meanwhile (``runtime.tracking.system_metrics``).
    """
    from components.progress import report_stage, stage_label
    from runtime.flow_runs.progress import announce
    from runtime.tracking.system_metrics import MONITORED_STAGES, system_metrics

    where = {"polyreason.deployment": deployment_name()} if deployment_name() else {}
    provenance = provenance_tags() if parent is None else {}  # a top-level run says which code and libraries ran
    run = open_run(settings, project_dir, run_name, params=params, parent=parent, settings_of=settings_of,
                   tags={"polyreason.stage": stage, **where, **provenance, **flow_run_tags(), **(tags or {})})
    label = stage_label(run_name, stage)
    announce(f"{label}: started (MLflow run {run.run_id[:8]})")  # the Prefect page names the running stage
    interval = settings.system_metrics_interval_s if stage in MONITORED_STAGES else 0
    started = time.monotonic()
    try:
        with system_metrics(run.run_id, run.tracking_uri, interval):
            yield run
    except BaseException as error:
        close_after(run, error)
        raise
    finish_run(run)
    report_stage(label, time.monotonic() - started, _CACHE_HITS.pop(run.run_id, None))


def close_after(run: RunRef, error: BaseException) -> None:
    """Close ``run`` KILLED (an interrupt) or FAILED after ``error``.

    When the store cannot take that either (its server is gone, its disk is full), ``error`` still says why
    the stage ended rather than the failed close: the run stays listed in ``open_runs`` (the command's last
    line names it) and the next command in the project closes it (``runtime.processes.abandoned``).
    """
    try:
        finish_run(run, "KILLED" if interrupted(error) else "FAILED")
    except Exception:  # noqa: BLE001 - the stage's own error is raised next; this run is still listed as open
        return


_CACHE_HITS: dict[str, bool] = {}  # run id -> whether the stage reused cached artifacts (``note_cache``)


def note_cache(run: RunRef, cached: bool) -> None:
    """Remember whether the stage of ``run`` was a cache hit, for the line its end prints."""
    _CACHE_HITS[run.run_id] = cached


def deployment_name() -> str | None:
    """The deployment this flow run was started from (a stage placed on a work pool: the pool's name), else ``None``."""
    from prefect.runtime import deployment

    return deployment.name or None


def run_url(ref: RunRef) -> str:
    """Where a person opens the run: the tracking server's page, or the local store and the run id."""
    if ref.tracking_uri.startswith(("http://", "https://")):
        return f"{ref.tracking_uri.rstrip('/')}/#/experiments/{ref.experiment_id}/runs/{ref.run_id}?{UI_VIEW}"
    return f"{ref.tracking_uri} (run {ref.run_id}; open with: mlflow ui --backend-store-uri {ref.tracking_uri})"


def runs_page(server: str, experiment: str = TrackingSettings().experiment) -> str:
    """The runs table of ``experiment`` on the MLflow server at ``server`` (created, model-training kind, if new).

    A bare server URL opens MLflow 3.17's GenAI view (traces, token usage); this page opens the runs.
    """
    experiment_id = ensure_experiment(server, experiment, None)
    return f"{server.rstrip('/')}/#/experiments/{experiment_id}/runs?{UI_VIEW}"
