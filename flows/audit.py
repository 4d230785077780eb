"""The reward-audit flow: stress suite, rollout diagnostics, interface probe, selection, guard.

"Multilingual verifier bias in RLVR" (arXiv 2608.20362) as a recipe: audit a
multilingual reward per language and per answer interface before optimizing
with it. Generations come from ``audit.generations`` (JSONL/parquet) or from
the evaluation the recipe hands in (the last model it evaluated). One MLflow run
(a child of the recipe's) holds every figure (``audit/...``), the per-language
table and the FNR bar chart. ``polyreason audit PROFILE.yaml [key=value ...]``
runs it (after an evaluation of the profile's model when no file is given).
"""

from __future__ import annotations

from prefect import flow

# a placed stage's worker loads this file by its path, not as flows.<name>: importing the package hands the
# settings their registries before Prefect validates the profile parameter (flows/__init__.py)
import flows  # noqa: F401

from components.settings import Profile, ProfileError
from runtime.flow_runs.names import stage_run_name, subject
from runtime import tracking
from runtime.flow_runs.prefect_artifacts import publish_stage_run
from runtime.artifacts import ArtifactRef
from runtime.cache.report import record_task_code
from runtime.outputs import AuditOutputs, EvaluationOutputs
from runtime.project import Project, prepared, require
from runtime.tracking import RunRef
from tasks.audit import (
    combine_generations_task,
    diagnostics_task,
    figure_task,
    file_ref,
    guard_task,
    judge_task,
    log_audit_task,
    number_only_generation_task,
    probe_task,
    selection_task,
    stress_table_ref,
    stress_task,
)


def audited_generations(profile: Profile, evaluation: EvaluationOutputs | None, project: Project) -> ArtifactRef:
    """The audited rows: the configured file, else the generations of the evaluation handed in."""
    if profile.audit.generations:
        return file_ref(profile.audit.generations)
    if evaluation is None:
        raise ProfileError(f"profile {profile.name!r}: audit.generations is unset and no evaluation was run to audit")
    refs = [file_ref(bench.generations.path) for bench in evaluation.benchmarks.values()]
    return combine_generations_task(refs, project)


def number_only_generations(profile: Profile, evaluation: EvaluationOutputs | None, generations: ArtifactRef,
                            project: Project) -> ArtifactRef | None:
    """Rows of the number-only interface: configured, generated with the evaluated model, or none."""
    settings = profile.audit
    if not settings.probe:
        return None
    if settings.number_only_generations:
        return file_ref(settings.number_only_generations)
    if evaluation is None:
        return None
    return number_only_generation_task(generations, evaluation.model.model, profile.evaluation.sampling, project)


@flow(name="polyreason-audit", flow_run_name=stage_run_name("audit"), persist_result=True)
def audit_flow(profile: Profile, evaluation: EvaluationOutputs | None = None,
               parent: RunRef | None = None) -> AuditOutputs:
    """Run every audit step on the profile's generations (or the evaluation's); returns the audit's figures."""
    profile, project = prepared(profile)
    settings = require(profile, "audit")
    with tracking.stage_run(profile.tracking, project, subject("audit", profile.name), stage="audit",
                            settings_of={"audit.": settings}, parent=parent) as run:
        generations = audited_generations(profile, evaluation, project)
        table = stress_table_ref(settings.stress_table)
        stress = stress_task(table, [settings.reference, *settings.proxies], settings.stress_languages,
                             settings.stress_golds, project)
        judged = judge_task(generations, settings.proxies, settings.reference, project)
        diagnostics = diagnostics_task(judged, settings.proxies, project)
        number_only = number_only_generations(profile, evaluation, generations, project)
        probe = None
        if number_only is not None:
            judged_number_only = judge_task(number_only, settings.proxies, settings.reference, project)
            probe = probe_task(judged, judged_number_only, settings.proxies, project)
        selection = selection_task(judged, project) if settings.selection else None
        guard = guard_task(generations, settings.guard_verifier, settings.guard_metric, settings.warn_vlb,
                           settings.fail_vlb, settings.reference)
        figure = figure_task(diagnostics, stress, selection, project)
        outputs = log_audit_task(run, generations, number_only, stress, judged, diagnostics, probe, selection, guard,
                                 figure)
        record_task_code(run, [stress_task, judge_task, diagnostics_task, guard_task, figure_task]
                         + ([probe_task] if probe else []) + ([selection_task] if selection else []))
    publish_stage_run(run, project, f"{profile.name}-audit")
    return outputs
