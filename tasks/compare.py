"""Prefect tasks of ``polyreason compare``: gather evaluations from MLflow, render and log the comparison.

What can be compared, each read back from the tracking store:

* an evaluation run (its ``evaluation/<benchmark>/<lang>/<metric>`` metrics; labelled
  by its model tag);
* a recipe's parent run (each of its evaluation children: base, SFT, GRPO);
* a registered version ``models:/NAME/VERSION`` or ``models:/NAME@ALIAS`` (its
  newest evaluation run, a nightly one or the recipe's).

Every evaluation run logs the same metric names, so MLflow's own compare view
lines the runs up too; this adds the per-language table with deltas to a chosen
baseline and the Pareto plot of accuracy against LCPR.
"""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from components.comparison import language_tables
from components.config import fingerprint
from tasks import tracking
from tasks.caching import ArtifactRef, artifact_dir, file_fingerprint
from tasks.tracking import RunRef

def _label(run) -> str:
    return run.data.tags.get("polyreason.model_tag") or run.info.run_name or run.info.run_id[:8]


def _registered_run(client, item: str) -> tuple[str, object]:
    """The newest evaluation run of a registered version, labelled ``NAME-vVERSION``."""
    from tasks.registry import parse_reference

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


@task(name="gather-evaluations", cache_policy=NO_CACHE)
def gather_task(tracking_uri: str, items: list[str]) -> dict[str, dict[str, list[dict]]]:
    """Label -> benchmark -> language rows, for every evaluation the items stand for (in order)."""
    client = tracking.client(tracking_uri)
    tables: dict[str, dict[str, list[dict]]] = {}
    for item in items:
        for label, run in labelled_runs(client, item):
            tables[label if label not in tables else f"{label}-{run.info.run_id[:6]}"] = \
                language_tables(run.data.metrics)
    return tables


@task(name="render-comparison", cache_policy=NO_CACHE)
def render_task(tables: dict[str, dict[str, list[dict]]], baseline: str, project_dir: str) -> ArtifactRef:
    """The comparison table (JSON and text) and a Pareto plot per benchmark, in a content-addressed folder."""
    from components.comparison import write_comparison

    out = artifact_dir(project_dir, "comparison", fingerprint([tables, baseline]))
    rows = write_comparison(tables, baseline, out)
    return ArtifactRef(str(out), file_fingerprint(out / "comparison.json"), {"rows": rows})


@task(name="log-comparison", cache_policy=NO_CACHE)
def log_comparison_task(run: RunRef, comparison: ArtifactRef) -> int:
    """The models' per-language metrics and deltas (``evaluation/<model>/<benchmark>/<lang>/<metric>``), the
    table and the plots, to ``run`` (a recipe's parent run or a comparison run)."""
    from components.comparison import comparison_metrics

    rows = comparison.summary["rows"]
    count = tracking.log_metrics(run, comparison_metrics(rows))
    tracking.log_table(run, rows, "comparison/languages.json")
    tracking.log_artifact(run, Path(comparison.path), "comparison")
    return count
