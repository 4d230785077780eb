"""Prefect tasks of the reward-audit stage: thin adapters over ``components.audit.steps``.

Each task takes settings values and upstream ``ArtifactRef``s, calls one step,
and returns an ``ArtifactRef`` whose summary carries the step's MLflow figures,
so a cached task still reports. Cache keys: task inputs (upstream fingerprints
included) + the source of the audit, verification and number components;
outputs go to content-addressed ``artifacts/audit/<step>/<fp[:12]>/`` folders.
Only ``log_audit_task`` talks to MLflow (explicit run id, never cached).
"""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from components.audit import steps
from components.config import fingerprint
from components.settings import ModelSettings, SamplingSettings
from tasks import tracking
from tasks.caching import CACHED, ArtifactRef, artifact_dir, component_cache_policy, file_fingerprint

POLICY = component_cache_policy("components.audit", "components.verification", "components.numbers")


def file_ref(path: str | Path, summary: dict | None = None) -> ArtifactRef:
    """An existing file (a generations artifact, the stress table) as an ``ArtifactRef``."""
    return ArtifactRef(str(Path(path).resolve()), file_fingerprint(path), summary or {})


def stress_table_ref(path: str | None) -> ArtifactRef:
    """The stress table a profile names, else the packaged one."""
    from components.audit.stress import TABLE_PATH

    return file_ref(path or TABLE_PATH)


def _out(project_dir: str, step: str, *keys) -> Path:
    return artifact_dir(project_dir, f"audit/{step}", fingerprint([step, *keys]))


@task(cache_policy=POLICY, **CACHED)
def stress_task(table: ArtifactRef, verifiers: list[str], languages: list[str], golds: list[str] | None,
                project_dir: str) -> ArtifactRef:
    out = _out(project_dir, "stress", table.fingerprint, verifiers, languages, golds)
    summary = steps.stress_step(out, verifiers=verifiers, languages=languages, golds=golds, table_path=table.path)
    return ArtifactRef(str(out / "stress.json"), file_fingerprint(out / "stress.json"), summary)


@task(cache_policy=POLICY, **CACHED)
def judge_task(generations: ArtifactRef, proxies: list[str], reference: str, project_dir: str) -> ArtifactRef:
    out = _out(project_dir, "judgements", generations.fingerprint, proxies, reference)
    summary = steps.judge_generations(generations.path, out, proxies=proxies, reference=reference)
    return ArtifactRef(summary["judgements"], file_fingerprint(summary["judgements"]), summary)


@task(cache_policy=POLICY, **CACHED)
def diagnostics_task(judgements: ArtifactRef, proxies: list[str], project_dir: str) -> ArtifactRef:
    out = _out(project_dir, "diagnostics", judgements.fingerprint, proxies)
    summary = steps.diagnostics_step(judgements.path, out, proxies=proxies)
    return ArtifactRef(str(out / "diagnostics.json"), judgements.fingerprint, summary)


@task(cache_policy=POLICY, **CACHED)
def number_only_generation_task(generations: ArtifactRef, model: ModelSettings, sampling: SamplingSettings,
                                project_dir: str) -> ArtifactRef:
    out = _out(project_dir, "number_only", generations.fingerprint, model, sampling)
    summary = steps.number_only_generations(generations.path, out / "generations.jsonl", model=model,
                                            sampling=sampling, cache_dir=Path(project_dir) / ".cache")
    return file_ref(summary["path"], summary)


@task(cache_policy=POLICY, **CACHED)
def probe_task(standard: ArtifactRef, number_only: ArtifactRef, proxies: list[str], project_dir: str) -> ArtifactRef:
    out = _out(project_dir, "probe", standard.fingerprint, number_only.fingerprint, proxies)
    summary = steps.probe_step(standard.path, number_only.path, out, proxies=proxies)
    return ArtifactRef(str(out / "probe.json"), fingerprint([standard.fingerprint, number_only.fingerprint]), summary)


@task(cache_policy=POLICY, **CACHED)
def selection_task(judgements: ArtifactRef, project_dir: str) -> ArtifactRef:
    out = _out(project_dir, "selection", judgements.fingerprint)
    summary = steps.selection_step(judgements.path, out)
    return ArtifactRef(str(out / "selection.json"), judgements.fingerprint, summary)


@task(cache_policy=POLICY, **CACHED)
def guard_task(generations: ArtifactRef, verifier: str, metric: str, warn_vlb: float, fail_vlb: float,
               reference: str) -> ArtifactRef:
    summary = steps.guard_step(generations.path, verifier=verifier, metric=metric, warn_vlb=warn_vlb,
                               fail_vlb=fail_vlb, reference=reference)
    return ArtifactRef(generations.path, generations.fingerprint, summary)


@task(cache_policy=POLICY, **CACHED)
def figure_task(diagnostics: ArtifactRef, stress: ArtifactRef | None, selection: ArtifactRef | None,
                project_dir: str) -> ArtifactRef:
    keys = [ref.fingerprint if ref else None for ref in (diagnostics, stress, selection)]
    out = _out(project_dir, "figures", *keys)
    summary = steps.figure_step(diagnostics.summary, stress.summary if stress else None,
                                selection.summary if selection else None, out)
    return ArtifactRef(summary["figure"], file_fingerprint(summary["figure"]), summary)


@task(cache_policy=POLICY, **CACHED)
def combine_generations_task(generations: list[ArtifactRef], project_dir: str) -> ArtifactRef:
    if len(generations) == 1:
        return generations[0]
    out = _out(project_dir, "generations", [ref.fingerprint for ref in generations]) / "generations.jsonl"
    summary = steps.concat_generations([ref.path for ref in generations], out)
    return file_ref(out, summary)


OUTPUT_FILES = {"stress.json", "diagnostics.json", "probe.json", "selection.json"}


@task(cache_policy=NO_CACHE)
def log_audit_task(run: tracking.RunRef, results: list[ArtifactRef], figure: ArtifactRef) -> int:
    """Every step's metrics, the per-language table, the FNR chart and the step outputs, to one run."""
    count = sum(tracking.log_metrics(run, ref.summary.get("metrics", {})) for ref in results)
    tracking.log_table(run, figure.summary["table"], "audit/per_language.json")
    tracking.log_artifact(run, figure.path, "audit")
    for ref in results:
        if Path(ref.path).name in OUTPUT_FILES:
            tracking.log_artifact(run, ref.path, "audit/outputs")
    return count
