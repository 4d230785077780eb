"""Prefect tasks of the reward-audit stage: thin adapters over ``components.audit.pipeline``.

Each task takes settings values and upstream ``ArtifactRef``s, calls one step,
and returns an ``ArtifactRef`` whose summary carries the step's MLflow figures,
so a cached task still reports. Cache keys: task inputs (upstream fingerprints
included) + the source of the audit, verification and number components;
outputs go to content-addressed ``artifacts/audit/<step>/<fp[:12]>/`` folders,
each written under its lock and published with its checksum (``runtime.artifacts``).
Only ``log_audit_task`` talks to MLflow (explicit run id, never cached).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from prefect import task
from prefect.cache_policies import NO_CACHE

from components.audit import pipeline
from components.config import fingerprint
from components.settings import ModelSettings, SamplingSettings
from runtime import tracking
from runtime.artifacts import ArtifactRef, file_fingerprint
from runtime.cache.policy import CACHED, cache_policy
from runtime.outputs import AuditOutputs
from runtime.project import Made, Project

FIGURE = "fnr_by_language.png"  # what components.audit.pipeline.figure_step draws
POLICY = cache_policy("scoring", "reporting")


def file_ref(path: str | Path, summary: dict | None = None) -> ArtifactRef:
    """An existing file (a generations artifact, the stress table) as an ``ArtifactRef``."""
    return ArtifactRef(str(Path(path).resolve()), file_fingerprint(path), summary or {})


def stress_table_ref(path: str | None) -> ArtifactRef:
    """The stress table a profile names, else the packaged one."""
    from components.audit.stress import TABLE_PATH

    return file_ref(path or TABLE_PATH)


def _step(project: Project, step: str, keys: list, product: str, run: Callable[[Path], dict],
          fingerprint_of: str | None = None) -> ArtifactRef:
    """One step's ``product`` in ``artifacts/audit/<step>/``, made by ``run(directory)`` (or reused).

    ``fingerprint_of``: the ref's fingerprint when it is not the product file's checksum.
    """
    return project.produce(f"audit/{step}", [step, *keys], product,
                           lambda out: Made(summary=run(out), fingerprint=fingerprint_of))


@task(cache_policy=POLICY, **CACHED)
def stress_task(table: ArtifactRef, verifiers: list[str], languages: list[str], golds: list[str] | None,
                project: Project) -> ArtifactRef:
    return _step(project, "stress", [table.fingerprint, verifiers, languages, golds], "stress.json",
                 lambda out: pipeline.stress_step(out, verifiers=verifiers, languages=languages, golds=golds,
                                               table_path=table.path))


@task(cache_policy=POLICY, **CACHED)
def judge_task(generations: ArtifactRef, proxies: list[str], reference: str, project: Project) -> ArtifactRef:
    return _step(project, "judgements", [generations.fingerprint, proxies, reference], "judgements.jsonl",
                 lambda out: pipeline.judge_generations(generations.path, out, proxies=proxies, reference=reference))


@task(cache_policy=POLICY, **CACHED)
def diagnostics_task(judgements: ArtifactRef, proxies: list[str], project: Project) -> ArtifactRef:
    return _step(project, "diagnostics", [judgements.fingerprint, proxies], "diagnostics.json",
                 lambda out: pipeline.diagnostics_step(judgements.path, out, proxies=proxies), judgements.fingerprint)


@task(cache_policy=cache_policy("scoring", "generation"), **CACHED)
def number_only_generation_task(generations: ArtifactRef, model: ModelSettings, sampling: SamplingSettings,
                                project: Project) -> ArtifactRef:
    return _step(project, "number_only", [generations.fingerprint, model, sampling], "generations.jsonl",
                 lambda out: pipeline.number_only_generations(generations.path, out / "generations.jsonl", model=model,
                                                           sampling=sampling, cache_dir=project.cache_dir))


@task(cache_policy=POLICY, **CACHED)
def probe_task(standard: ArtifactRef, number_only: ArtifactRef, proxies: list[str], project: Project) -> ArtifactRef:
    return _step(project, "probe", [standard.fingerprint, number_only.fingerprint, proxies], "probe.json",
                 lambda out: pipeline.probe_step(standard.path, number_only.path, out, proxies=proxies),
                 fingerprint([standard.fingerprint, number_only.fingerprint]))


@task(cache_policy=POLICY, **CACHED)
def selection_task(judgements: ArtifactRef, project: Project) -> ArtifactRef:
    return _step(project, "selection", [judgements.fingerprint], "selection.json",
                 lambda out: pipeline.selection_step(judgements.path, out), judgements.fingerprint)


@task(cache_policy=POLICY, **CACHED)
def guard_task(generations: ArtifactRef, verifier: str, metric: str, warn_vlb: float, fail_vlb: float,
               reference: str) -> ArtifactRef:
    summary = pipeline.guard_step(generations.path, verifier=verifier, metric=metric, warn_vlb=warn_vlb,
                               fail_vlb=fail_vlb, reference=reference)
    return ArtifactRef(generations.path, generations.fingerprint, summary)


@task(cache_policy=POLICY, **CACHED)
def figure_task(diagnostics: ArtifactRef, stress: ArtifactRef | None, selection: ArtifactRef | None,
                project: Project) -> ArtifactRef:
    keys = [ref.fingerprint if ref else None for ref in (diagnostics, stress, selection)]
    return _step(project, "figures", keys, FIGURE,
                 lambda out: pipeline.figure_step(diagnostics.summary, stress.summary if stress else None,
                                               selection.summary if selection else None, out))


@task(cache_policy=POLICY, **CACHED)
def combine_generations_task(generations: list[ArtifactRef], project: Project) -> ArtifactRef:
    if len(generations) == 1:
        return generations[0]
    return _step(project, "generations", [[ref.fingerprint for ref in generations]], "generations.jsonl",
                 lambda out: pipeline.concat_generations([ref.path for ref in generations], out / "generations.jsonl"))


OUTPUT_FILES = {"stress.json", "diagnostics.json", "probe.json", "selection.json"}


@task(cache_policy=NO_CACHE)
def log_audit_task(run: tracking.RunRef, generations: ArtifactRef, number_only: ArtifactRef | None,
                   stress: ArtifactRef, judged: ArtifactRef, diagnostics: ArtifactRef, probe: ArtifactRef | None,
                   selection: ArtifactRef | None, guard: ArtifactRef, figure: ArtifactRef) -> AuditOutputs:
    """Every step's metrics, the per-language table, the FNR chart and the step outputs, to one run; the
    audit's figures as ``AuditOutputs``."""
    results = [ref for ref in (stress, judged, diagnostics, probe, selection, guard) if ref is not None]
    count = sum(tracking.log_metrics(run, ref.summary.get("metrics", {})) for ref in results)
    tracking.log_table(run, figure.summary["table"], "audit/per_language.json")
    tracking.log_artifact(run, figure.path, "audit")
    for ref in results:
        if Path(ref.path).name in OUTPUT_FILES:
            tracking.log_artifact(run, ref.path, "audit/outputs")
    return AuditOutputs(
        run_id=run.run_id, tracking_uri=run.tracking_uri, generations=generations.path,
        number_only_generations=number_only.path if number_only else None, metrics_logged=count,
        errors=judged.summary["errors"], errors_file=judged.summary["errors_file"], stress=stress.summary["summary"],
        vlb=diagnostics.summary["vlb"], accuracy=diagnostics.summary["accuracy"],
        probe={k: probe.summary[k] for k in ("accuracy_gap", "verifiers")} if probe else None,
        selection=selection.summary["report"] if selection else None,
        guard={k: guard.summary[k] for k in ("verifier", "metric", "vlb", "status")}, figure=figure.path)
