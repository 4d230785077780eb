"""Prefect tasks of the reward-audit stage: thin adapters over ``components.audit.steps``.

Each task takes settings values and upstream ``ArtifactRef``s, calls one step,
and returns an ``ArtifactRef`` whose summary carries the step's MLflow figures,
so a cached task still reports. Cache keys: task inputs (upstream fingerprints
included) + the source of the audit, verification and number components;
outputs go to content-addressed ``artifacts/audit/<step>/<fp[:12]>/`` folders,
each written under its lock and published with its checksum (``tasks.artifacts``).
Only ``log_audit_task`` talks to MLflow (explicit run id, never cached).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from prefect import task
from prefect.cache_policies import NO_CACHE

from components.audit import steps
from components.config import fingerprint
from components.settings import ModelSettings, SamplingSettings
from tasks import tracking
from tasks.artifacts import writing
from tasks.caching import CACHED, ArtifactRef, artifact_dir, component_cache_policy, file_fingerprint

FIGURE = "fnr_by_language.png"  # what components.audit.steps.figure_step draws
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


def _step(out: Path, product: str, run: Callable[[], dict], fingerprint_of: str | None = None) -> ArtifactRef:
    """Run one step into ``out`` under its write lock (or reuse its finished ``product``); the product's ref.

    ``fingerprint_of``: the ref's fingerprint when it is not the product file's checksum.
    """
    with writing(out) as slot:
        if (done := slot.reuse(out / product)) is not None:
            return done
        return slot.publish(out / product, run(), fingerprint=fingerprint_of)


@task(cache_policy=POLICY, **CACHED)
def stress_task(table: ArtifactRef, verifiers: list[str], languages: list[str], golds: list[str] | None,
                project_dir: str) -> ArtifactRef:
    out = _out(project_dir, "stress", table.fingerprint, verifiers, languages, golds)
    return _step(out, "stress.json", lambda: steps.stress_step(out, verifiers=verifiers, languages=languages,
                                                               golds=golds, table_path=table.path))


@task(cache_policy=POLICY, **CACHED)
def judge_task(generations: ArtifactRef, proxies: list[str], reference: str, project_dir: str) -> ArtifactRef:
    out = _out(project_dir, "judgements", generations.fingerprint, proxies, reference)
    return _step(out, "judgements.jsonl", lambda: steps.judge_generations(generations.path, out, proxies=proxies,
                                                                          reference=reference))


@task(cache_policy=POLICY, **CACHED)
def diagnostics_task(judgements: ArtifactRef, proxies: list[str], project_dir: str) -> ArtifactRef:
    out = _out(project_dir, "diagnostics", judgements.fingerprint, proxies)
    return _step(out, "diagnostics.json", lambda: steps.diagnostics_step(judgements.path, out, proxies=proxies),
                 judgements.fingerprint)


@task(cache_policy=POLICY, **CACHED)
def number_only_generation_task(generations: ArtifactRef, model: ModelSettings, sampling: SamplingSettings,
                                project_dir: str) -> ArtifactRef:
    out = _out(project_dir, "number_only", generations.fingerprint, model, sampling)
    return _step(out, "generations.jsonl", lambda: steps.number_only_generations(
        generations.path, out / "generations.jsonl", model=model, sampling=sampling,
        cache_dir=Path(project_dir) / ".cache"))


@task(cache_policy=POLICY, **CACHED)
def probe_task(standard: ArtifactRef, number_only: ArtifactRef, proxies: list[str], project_dir: str) -> ArtifactRef:
    out = _out(project_dir, "probe", standard.fingerprint, number_only.fingerprint, proxies)
    return _step(out, "probe.json", lambda: steps.probe_step(standard.path, number_only.path, out, proxies=proxies),
                 fingerprint([standard.fingerprint, number_only.fingerprint]))


@task(cache_policy=POLICY, **CACHED)
def selection_task(judgements: ArtifactRef, project_dir: str) -> ArtifactRef:
    out = _out(project_dir, "selection", judgements.fingerprint)
    return _step(out, "selection.json", lambda: steps.selection_step(judgements.path, out), judgements.fingerprint)


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
    return _step(out, FIGURE, lambda: steps.figure_step(diagnostics.summary, stress.summary if stress else None,
                                                        selection.summary if selection else None, out))


@task(cache_policy=POLICY, **CACHED)
def combine_generations_task(generations: list[ArtifactRef], project_dir: str) -> ArtifactRef:
    if len(generations) == 1:
        return generations[0]
    out = _out(project_dir, "generations", [ref.fingerprint for ref in generations])
    return _step(out, "generations.jsonl",
                 lambda: steps.concat_generations([ref.path for ref in generations], out / "generations.jsonl"))


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
