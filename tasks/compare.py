"""Prefect tasks of ``polyreason compare``: gather evaluations from MLflow, render and log the comparison.

What can be compared, each read back from the tracking store:

* an evaluation run (its ``evaluation/<benchmark>/<lang>/<metric>`` metrics; labelled
  by its model tag);
* a recipe's parent run (each of its evaluation children: base, SFT, GRPO);
* a registered version ``models:/NAME/VERSION`` or ``models:/NAME@ALIAS`` (its
  newest evaluation run, a nightly one or the recipe's).

Every evaluation run logs the same metric names, so MLflow's own compare view
lines the runs up too; this adds the per-language table with deltas to a chosen
baseline and the Pareto plot of accuracy against LCPR. Each run's joined generations
table (the scored rows) is downloaded beside the comparison, so every delta gets its
paired interval over the problems both runs answered (``components.reports.comparison``).
"""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel

from components.reports.comparison import language_tables
from runtime import tracking
from runtime.artifacts import ArtifactRef, file_fingerprint
from runtime.project import Made, Project
from runtime.tracking import RunRef

def _label(run) -> str:
    return run.data.tags.get("polyreason.model_tag") or run.info.run_name or run.info.run_id[:8]


def _registered_run(client, item: str) -> tuple[str, object]:
    """The newest evaluation run of a registered version, labelled ``NAME-vVERSION``."""
    from runtime.tracking.registry import parse_reference

    name, alias, version = parse_reference(item)
    version = version or client.get_model_version_by_alias(name, alias).version
    experiments = [e.experiment_id for e in client.search_experiments()]
    found = client.search_runs(experiments, f"tags.`polyreason.registered` = 'models:/{name}/{version}' and "
                               "tags.`polyreason.stage` = 'evaluation'", order_by=["attributes.start_time DESC"],
                               max_results=1)
    if not found:
        raise ValueError(f"{item}: no evaluation run of models:/{name}/{version} (run polyreason evaluate or the "
                         "nightly evaluation first)")
    return f"{name}-v{version}", found[0]


def labelled_runs(client, item: str) -> list[tuple[str, object]]:
    """``(label, evaluation run)`` for each evaluation an item stands for (see the module docstring)."""
    if item.startswith("models:/"):
        return [_registered_run(client, item)]
    run = client.get_run(item)
    if run.data.tags.get("polyreason.stage") == "recipe":
        children = client.search_runs([run.info.experiment_id], f"tags.mlflow.parentRunId = '{item}' and "
                                      "tags.`polyreason.stage` = 'evaluation'", order_by=["attributes.start_time ASC"])
        return [(_label(child), child) for child in children]
    return [(_label(run), run)]


class Evaluations(BaseModel):
    """What ``gather_task`` found: label -> benchmark -> language rows, and -> the scored rows' local file."""

    tables: dict[str, dict[str, list[dict]]]
    scored: dict[str, dict[str, str]]


def scored_files(client, run_id: str, benchmarks: list[str], project: Project) -> dict[str, str]:
    """Download each benchmark's joined generations table of a run (a run without one is compared unpaired)."""
    from components.reports.benchmark import generations_file

    wanted = {bench: f"evaluation/{bench}/{generations_file(bench)}" for bench in benchmarks}
    present = {bench: path for bench, path in wanted.items()
               if any(entry.path == path for entry in client.list_artifacts(run_id, f"evaluation/{bench}"))}
    if not present:
        return {}

    def download(out: Path) -> dict:
        local = {bench: client.download_artifacts(run_id, path, str(out)) for bench, path in present.items()}
        return {"run_id": run_id, "files": {bench: str(Path(path).relative_to(out)) for bench, path in local.items()}}

    rows = project.produce("comparison-rows", run_id, ".", download)
    return {bench: str(Path(rows.path) / name) for bench, name in rows.summary["files"].items()}


@task(name="gather-evaluations", cache_policy=NO_CACHE)
def gather_task(tracking_uri: str, items: list[str], project: Project) -> Evaluations:
    """Every evaluation the items stand for (in order): its language rows and its scored rows."""
    client = tracking.client(tracking_uri)
    tables: dict[str, dict[str, list[dict]]] = {}
    scored: dict[str, dict[str, str]] = {}
    for item in items:
        for label, run in labelled_runs(client, item):
            headline = run.data.params.get("evaluation.scoring.headline", "accuracy")
            label = label if label not in tables else f"{label}-{run.info.run_id[:6]}"
            tables[label] = language_tables(run.data.metrics, headline)
            scored[label] = scored_files(client, run.info.run_id, list(tables[label]), project)
    return Evaluations(tables=tables, scored=scored)


@task(name="render-comparison", cache_policy=NO_CACHE)
def render_task(evaluations: Evaluations, baseline: str, project: Project) -> ArtifactRef:
    """The comparison table (JSON and text) and a Pareto plot per benchmark, in a content-addressed folder."""
    from components.reports.comparison import write_comparison

    def render(out: Path) -> Made:
        rows = write_comparison(evaluations.tables, baseline, out, evaluations.scored)
        return Made(summary={"rows": rows}, fingerprint=file_fingerprint(out / "comparison.json"))

    return project.produce("comparison", [evaluations.tables, evaluations.scored, baseline], ".", render)


@task(name="log-comparison", cache_policy=NO_CACHE)
def log_comparison_task(run: RunRef, comparison: ArtifactRef) -> int:
    """The models' per-language metrics and deltas (``evaluation/<model>/<benchmark>/<lang>/<metric>``), the
    table (``comparison/``) and the plots (top level: MLflow's compare view shows only top-level files common to the
    runs), to ``run`` (a recipe's parent run or a comparison run); the headline's values under the keys of the
    charts MLflow shows first, not also under their cells' keys (``logged_comparison``)."""
    from components.reports.comparison import comparison_metrics
    from components.reports.comparison_headline import logged_comparison

    rows = comparison.summary["rows"]
    count = tracking.log_metrics(run, logged_comparison(rows, comparison_metrics(rows)))
    tracking.log_table(run, rows, "comparison/languages.json")
    for path in sorted(Path(comparison.path).iterdir()):  # the plots at the top, where MLflow's compare view looks
        if path.is_file() and not path.name.startswith("."):
            tracking.log_artifact(run, path, None if path.suffix == ".png" else "comparison")
    return count


# ---------------------------------------------------------------- a registered version against its last evaluation


@task(name="previous-evaluation", cache_policy=NO_CACHE)
def previous_evaluation_task(tracking_uri: str, reference: str) -> dict | None:
    """The newest evaluation of the registered version ``reference`` so far (its last nightly, else the recipe's
    evaluation of the weights it registered): ``run_id`` and ``label`` (``nightly <date>`` or ``recipe``); ``None``
    when the version was never evaluated."""
    client = tracking.client(tracking_uri)
    experiments = [e.experiment_id for e in client.search_experiments()]
    found = client.search_runs(experiments, f"tags.`polyreason.registered` = '{reference}' and "
                               "tags.`polyreason.stage` = 'evaluation'", order_by=["attributes.start_time DESC"],
                               max_results=1)
    if not found:
        return None
    day = found[0].data.tags.get("polyreason.nightly")
    return {"run_id": found[0].info.run_id, "label": f"nightly {day}" if day else "recipe"}


@task(name="compare-to-previous", cache_policy=NO_CACHE)
def previous_comparison_task(tracking_uri: str, previous: dict | None, run_id: str, project: Project) -> ArtifactRef:
    """This evaluation of a version against ``previous`` (``previous_evaluation_task``; ``None``: alone): every
    metric with its interval and n, each delta with its paired interval over the problems both runs were judged on."""
    client = tracking.client(tracking_uri)
    labels = {**({f"previous ({previous['label']})": previous["run_id"]} if previous else {}), "this run": run_id}
    tables, scored = {}, {}
    for label, identifier in labels.items():
        run = client.get_run(identifier)
        tables[label] = language_tables(run.data.metrics, run.data.params.get("evaluation.scoring.headline",
                                                                              "accuracy"))
        scored[label] = scored_files(client, identifier, list(tables[label]), project)
    return render_task.fn(Evaluations(tables=tables, scored=scored), next(iter(labels)), project)


# ---------------------------------------------------------------- held against the paper's table

PAPER_STAGES = ("evaluation", "audit")


def measuring_runs(client, item: str) -> list:
    """The runs an item offers to a paper table: a recipe's evaluation and audit children, else the run itself."""
    if item.startswith("models:/"):
        return [_registered_run(client, item)[1]]
    run = client.get_run(item)
    if run.data.tags.get("polyreason.stage") != "recipe":
        return [run]
    children = client.search_runs([run.info.experiment_id], f"tags.mlflow.parentRunId = '{item}'",
                                  order_by=["attributes.start_time ASC"])
    return [child for child in children if child.data.tags.get("polyreason.stage") in PAPER_STAGES]


def measurement(client, run) -> dict:
    """What a run measures for a paper table: its role, label, settings (with its recipe's) and metrics."""
    tags = run.data.tags
    parent = client.get_run(tags["mlflow.parentRunId"]) if tags.get("mlflow.parentRunId") else None
    in_recipe = parent is not None and parent.data.tags.get("polyreason.stage") == "recipe"
    if tags.get("polyreason.stage") == "audit":
        role = "audit"
    else:
        role = tags.get("polyreason.model_tag", "evaluation") if in_recipe else "evaluation"
    params = {**(parent.data.params if in_recipe else {}), **run.data.params}
    return {"role": role, "label": "audit" if role == "audit" else _label(run), "run_id": run.info.run_id,
            "params": params, "metrics": dict(run.data.metrics)}


@task(name="gather-measurements", cache_policy=NO_CACHE)
def gather_measurements_task(tracking_uri: str, items: list[str]) -> list[dict]:
    """Every run the items offer to a paper table (``components.reports.paper_comparison.Measurement`` fields)."""
    client = tracking.client(tracking_uri)
    return [measurement(client, run) for item in items for run in measuring_runs(client, item)]


@task(name="compare-paper", cache_policy=NO_CACHE)
def paper_task(measurements: list[dict], table: str, project: Project) -> ArtifactRef:
    """Measured against the paper's table (``paper.json``, ``paper.txt``) in a content-addressed folder."""
    from components.reports.paper_comparison import Measurement, paper_entries, paper_report
    from components.reports.paper_tables import load_table, table_title

    entries = paper_entries(load_table(table), [Measurement(**m) for m in measurements])

    def render(out: Path) -> Made:
        data, text = paper_report(entries, f"{table_title(table)} ({table})")
        (out / "paper.json").write_text(data, encoding="utf-8")
        (out / "paper.txt").write_text(text, encoding="utf-8")
        return Made(summary={"entries": entries, "table": table}, fingerprint=file_fingerprint(out / "paper.json"))

    return project.produce("paper-comparison", [entries, table], ".", render)


@task(name="log-paper", cache_policy=NO_CACHE)
def log_paper_task(run: RunRef, paper: ArtifactRef) -> None:
    """The paper comparison's files to ``run`` under ``comparison/paper``."""
    tracking.log_artifact(run, Path(paper.path), "comparison/paper")
