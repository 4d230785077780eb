"""``polyreason compare``: evaluations side by side in one MLflow run (table with deltas, Pareto plot).

Items are evaluation runs, a recipe's parent run, or registered versions
(``models:/NAME/VERSION``, ``models:/NAME@ALIAS``); ``baseline`` is the label of the
row the deltas are taken against (default: the first).
"""

from __future__ import annotations

from prefect import flow

from components.settings import TrackingSettings
from flows.runtime import prepared_project
from tasks import tracking
from tasks.compare import gather_task, log_comparison_task, render_task


@flow(name="polyreason-compare")
def compare_flow(items: list[str], baseline: str | None = None, tracking_settings: TrackingSettings | None = None,
                 project_dir: str = ".") -> dict:
    """Compare the evaluations of ``items`` per language and log the result to a new comparison run."""
    settings, project = tracking_settings or TrackingSettings(), prepared_project(project_dir)
    tables = gather_task(tracking.tracking_uri(settings, project), items)
    baseline = baseline or next(iter(tables))
    with tracking.stage_run(settings, project, "comparison", stage="comparison",
                            tags={"polyreason.compared": ",".join(items), "polyreason.baseline": baseline}) as run:
        comparison = render_task(tables, baseline, str(project))
        log_comparison_task(run, comparison)
    return {"run_id": run.run_id, "run_url": tracking.run_url(run), "models": list(tables), "baseline": baseline,
            "table": (comparison.path + "/comparison.txt")}
