"""The evaluations' generations fanned out: every model's benchmarks (or language shards) as independent tasks.

``evaluation_fanout_flow(profile, models)`` prepares each model's benchmarks
(the cached load and prompt tasks the evaluation itself runs), cuts what is still
to generate into tasks (``tasks.fanout.plan_units_task``) and submits them to the
task runner ``execution.runner`` names — threads on one node, each task on its
slot of the node's GPUs; Ray (``prefect-ray``) or Dask (``prefect-dask``) on a
cluster, each task asking for its GPUs — and waits for all of them. The
evaluations that follow (``flows.evaluation``, one per model, as without
fan-out) find every prompt in the journals: they publish the same files, cache
them under the same keys and log the same MLflow runs, and the comparison
waits for them all.
"""

from __future__ import annotations

from prefect import flow

from components.settings import ExecutionSettings, Profile
from flows.evaluation import prepare_benchmark
from runtime.flow_runs.names import stage_run_name
from runtime import tracking
from runtime.outputs import GenerationUnit, ModelRef, UnitResult
from runtime.project import Project, prepared, require
from runtime.flow_runs.task_runners import task_resources, task_runner
from tasks.fanout import generate_unit_task, plan_units_task
from tasks.models import resolve_model_task


@flow(name="polyreason-generation-tasks")
def generation_tasks_flow(units: list[GenerationUnit], execution: ExecutionSettings,
                          project: Project) -> list[UnitResult]:
    """Submit every unit to this flow's task runner (chosen by the caller) and wait for all of them."""
    with task_resources(execution):
        futures = [generate_unit_task.submit(unit, execution, project) for unit in units]
    return [future.result() for future in futures]


@flow(name="polyreason-evaluation-fanout", flow_run_name=stage_run_name("evaluation-fanout"), persist_result=True)
def evaluation_fanout_flow(profile: Profile, models: list[ModelRef] | None = None) -> list[UnitResult]:
    """Generate what ``models``' evaluations still need (default: the section's own model), as tasks on
    ``profile.execution``'s runner."""
    profile, project = prepared(profile)
    section, execution = require(profile, "evaluation"), profile.execution
    models = models or [resolve_model_task(section.model, project, "base", tracking.tracking_uri(profile.tracking,
                                                                                                 project))]
    benchmarks = [[prepare_benchmark(bench, section, model) for bench in section.benchmarks] for model in models]
    units = plan_units_task(models, benchmarks, execution, project)
    if not units:
        return []
    return generation_tasks_flow.with_options(task_runner=task_runner(execution))(units, execution, project)
