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

from pathlib import Path

from prefect import flow

from components.config import flatten
from components.settings import Profile, ProfileError
from flows.runtime import prepared, require
from tasks import tracking
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
from tasks.caching import ArtifactRef
from tasks.outputs import EvaluationOutputs
from tasks.tracking import RunRef


def audited_generations(profile: Profile, evaluation: EvaluationOutputs | None, project: Path) -> ArtifactRef:
    """The audited rows: the configured file, else the generations of the evaluation handed in."""
    if profile.audit.generations:
        return file_ref(profile.audit.generations)
    if evaluation is None:
        raise ProfileError(f"profile {profile.name!r}: audit.generations is unset and no evaluation was run to audit")
    refs = [file_ref(bench.generations.path) for bench in evaluation.benchmarks.values()]
    return combine_generations_task(refs, str(project))


def number_only_generations(profile: Profile, evaluation: EvaluationOutputs | None, generations: ArtifactRef,
                            project: Path) -> ArtifactRef | None:
    """Rows of the number-only interface: configured, generated with the evaluated model, or none."""
    settings = profile.audit
    if not settings.probe:
        return None
    if settings.number_only_generations:
        return file_ref(settings.number_only_generations)
    if evaluation is None:
        return None
    return number_only_generation_task(generations, evaluation.model.model, profile.evaluation.sampling,
                                       str(project))


@flow(name="polyreason-audit", persist_result=True)
def audit_flow(profile: Profile, evaluation: EvaluationOutputs | None = None, parent: RunRef | None = None) -> dict:
    """Run every audit step on the profile's generations (or the evaluation's); returns a summary of the figures."""
    profile, project = prepared(profile)
    settings = require(profile, "audit")
    with tracking.stage_run(profile.tracking, project, f"{profile.name}-audit", stage="audit",
                            params=flatten(settings, "audit."), parent=parent) as run:
        generations = audited_generations(profile, evaluation, project)
        table = stress_table_ref(settings.stress_table)
        stress = stress_task(table, [settings.reference, *settings.proxies], settings.stress_languages,
                             settings.stress_golds, str(project))
        judged = judge_task(generations, settings.proxies, settings.reference, str(project))
        diagnostics = diagnostics_task(judged, settings.proxies, str(project))
        number_only = number_only_generations(profile, evaluation, generations, project)
        probe = None
        if number_only is not None:
            judged_number_only = judge_task(number_only, settings.proxies, settings.reference, str(project))
            probe = probe_task(judged, judged_number_only, settings.proxies, str(project))
        selection = selection_task(judged, str(project)) if settings.selection else None
        guard = guard_task(generations, settings.guard_verifier, settings.guard_metric, settings.warn_vlb,
                           settings.fail_vlb, settings.reference)
        figure = figure_task(diagnostics, stress, selection, str(project))
        results = [ref for ref in (stress, judged, diagnostics, probe, selection, guard) if ref is not None]
        logged = log_audit_task(run, results, figure)
    return {
        "run_id": run.run_id, "tracking_uri": run.tracking_uri, "generations": generations.path,
        "number_only_generations": number_only.path if number_only else None, "metrics_logged": logged,
        "errors": judged.summary["errors"], "errors_file": judged.summary["errors_file"],
        "stress": stress.summary["summary"], "vlb": diagnostics.summary["vlb"],
        "accuracy": diagnostics.summary["accuracy"],
        "probe": {k: probe.summary[k] for k in ("accuracy_gap", "verifiers")} if probe else None,
        "selection": selection.summary["report"] if selection else None,
        "guard": {k: guard.summary[k] for k in ("verifier", "metric", "vlb", "status")},
        "figure": figure.path,
    }
