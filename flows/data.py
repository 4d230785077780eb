"""The data-construction flow: source -> translation -> teacher traces (or traces from a file) = the SFT set.

AdaMame §3.1 as a recipe: one MLflow run (a child of the recipe's run when one is
given), cached stage tasks, every table logged as a dataset input with its
digest, and the step summaries (counts, chrF, retention per language and per
reason) logged from the task return values, so a fully cached re-run still
reports. Low retention is reported and the flow goes on with what was kept; a
step that keeps nothing stops the flow after logging its per-language report.
The RL set is selected later, by sampling the SFT model (the rejection stage).
``polyreason data PROFILE.yaml`` runs it alone.
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow

# a placed stage's worker loads this file by its path, not as flows.<name>: importing the package hands the
# settings their registries before Prefect validates the profile parameter (flows/__init__.py)
import flows  # noqa: F401

from components.settings import Profile
from runtime.flow_runs.names import stage_run_name, subject
from runtime import tracking
from runtime.flow_runs.prefect_artifacts import publish_stage_run
from runtime.cache.report import mark_cache
from runtime.outputs import DataOutputs, StepReport
from runtime.project import Project, prepared, require, was_cached
from runtime.tracking import RunRef
from tasks.data import (
    file_identity_task, log_step_task, model_identity_task, source_task, traces_from_file_task, traces_task,
    translate_task,
)  # fmt: skip


def generated_sft_set(profile: Profile, run: RunRef, project: Project) -> tuple[dict[str, StepReport], list]:
    """Source, translation and teacher traces (cached tasks): the step reports and the task states."""
    data = profile.data
    source = source_task(data.source, file_identity_task(data.source.path), project, return_state=True)
    report = {"source": log_step_task(run, "source", source.result())}
    models = [model_identity_task(data.translation.model, project), model_identity_task(data.translation.judge, project)]
    translations = translate_task(data.translation, data.source, data.languages, data.source_language,
                                  source.result(), models, project, return_state=True)
    report["translation"] = log_step_task(run, "translation", translations.result())
    teacher = model_identity_task(data.traces.model, project)
    traces = traces_task(data.traces, data.languages, translations.result(), teacher, project, return_state=True)
    report["traces"] = log_step_task(run, "traces", traces.result())
    return report, [source, translations, traces]


def written_sft_set(profile: Profile, run: RunRef, project: Project) -> tuple[dict[str, StepReport], list]:
    """Traces written beforehand, filtered (a cached task): the step report and the task state."""
    data = profile.data
    traces = traces_from_file_task(data.traces, data.languages, file_identity_task(data.traces.from_file), project,
                                   return_state=True)
    return {"traces": log_step_task(run, "traces", traces.result())}, [traces]


@flow(name="polyreason-data", flow_run_name=stage_run_name("data"), persist_result=True)
def data_flow(profile: Profile, parent: RunRef | None = None) -> DataOutputs:
    """Build the SFT set; returns it with the step reports."""
    profile, project = prepared(profile)
    data = require(profile, "data")
    with tracking.stage_run(profile.tracking, project, subject("data", profile.name), stage="data",
                            settings_of={"data.": data}, parent=parent) as run:
        build = written_sft_set if data.traces.from_file else generated_sft_set
        report, states = build(profile, run, project)
        sft_set = states[-1].result()
        tasks = [traces_from_file_task] if data.traces.from_file else [source_task, translate_task, traces_task]
        mark_cache(run, [Path(s.result().path).parent for s in states], all(map(was_cached, states)), tasks)
    publish_stage_run(run, project, f"{profile.name}-data")
    return DataOutputs(sft_set=sft_set, report=report, run_id=run.run_id)
