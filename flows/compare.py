"""``polyreason compare``: evaluations side by side in one MLflow run (table with deltas, Pareto plot).

Items are evaluation runs, a recipe's parent run, or registered versions
(``models:/NAME/VERSION``, ``models:/NAME@ALIAS``); ``baseline`` is the label of the
row the deltas are taken against (default: the first), or ``previous`` (each model
against the one listed before it). With ``paper`` (a paper table
file) the runs are also held against the paper's rows (``components.reports.paper_comparison``):
measured against printed, the difference and the measured value's 95% interval, the
rows no run measures listed as missing.
"""

from __future__ import annotations

from prefect import flow

from components.settings import TrackingSettings
from runtime import tracking
from runtime.flow_runs.prefect_artifacts import publish_stage_run
from runtime.outputs import ComparisonOutputs
from runtime.project import prepared_project
from tasks.compare import (
    gather_measurements_task, gather_task, log_comparison_task, log_paper_task, paper_task, render_task,
)  # fmt: skip


@flow(name="polyreason-compare")
def compare_flow(items: list[str], baseline: str | None = None, tracking_settings: TrackingSettings | None = None,
                 project_dir: str = ".", paper: str | None = None) -> ComparisonOutputs:
    """Compare the evaluations of ``items`` per language (and against ``paper``'s table) in a new comparison run."""
    settings, project = tracking_settings or TrackingSettings(), prepared_project(project_dir)
    uri = tracking.tracking_uri(settings, project)
    evaluations = gather_task(uri, items, project)
    baseline = baseline or next(iter(evaluations.tables))
    with tracking.stage_run(settings, project, "comparison", stage="comparison",
                            tags={"polyreason.compared": ",".join(items), "polyreason.baseline": baseline}) as run:
        comparison = render_task(evaluations, baseline, project)
        log_comparison_task(run, comparison)
        held = paper_task(gather_measurements_task(uri, items), paper, project) if paper else None
        if held is not None:
            log_paper_task(run, held)
    publish_stage_run(run, project, "comparison")
    return ComparisonOutputs(run_id=run.run_id, run_url=tracking.run_url(run), models=list(evaluations.tables),
                             baseline=baseline, table=comparison.path + "/comparison.txt",
                             rows=comparison.path + "/comparison.json",
                             paper_table=held and held.path + "/paper.txt", paper_rows=held and held.path + "/paper.json")
