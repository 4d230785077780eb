"""Prefect tasks of the recipe's own bookkeeping: the parent run's identity, the model comparison, the registry.

* The parent run carries the profile (as YAML), its digest (the fingerprint of
  what it computes) and the git commit of the code, so a run can be reproduced.
* ``comparison_task`` (cached) renders every evaluated model side by side per
  benchmark and language (``components.comparison``); ``tasks.compare.log_comparison_task``
  sends the table, the deltas to the base model and the plots to the parent run.
* ``register_task`` registers the recipe's final model in the MLflow model
  registry, with its card, tags and alias; re-running a recipe whose weights did
  not change moves the alias to the existing version instead of adding a copy.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml
from prefect import task
from prefect.cache_policies import NO_CACHE

from components.config import fingerprint
from components.settings import Profile, RegistrySettings
from tasks import tracking
from tasks.caching import CACHED, ArtifactRef, artifact_dir, component_cache_policy, file_fingerprint
from tasks.outputs import EvaluationOutputs, GRPOOutputs, ModelRef, SFTOutputs
from tasks.tracking import RunRef

REPO = Path(__file__).resolve().parents[1]


def git_commit() -> str:
    """The commit of the code that runs (``unknown`` outside a git checkout)."""
    done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else "unknown"


def recipe_tags(profile: Profile) -> dict[str, str]:
    """Tags of a recipe's parent run: profile digest, git commit, languages."""
    languages = sorted({lang for bench in (profile.evaluation.benchmarks if profile.evaluation else [])
                        for lang in bench.languages} | set(profile.data.languages if profile.data else []))
    return {"polyreason.profile_digest": fingerprint(profile)[:16], "mlflow.source.git.commit": git_commit(),
            "polyreason.languages": ",".join(languages), "polyreason.profile": profile.name}


@task(name="log-profile", cache_policy=NO_CACHE)
def log_profile_task(run: RunRef, profile: Profile, project_dir: str) -> str:
    """The validated profile as ``profile.yaml`` in the run's artifacts."""
    out = artifact_dir(project_dir, "profiles", fingerprint(profile)) / "profile.yaml"
    text = yaml.safe_dump(profile.model_dump(mode="json"), allow_unicode=True, sort_keys=False)
    if not out.exists() or out.read_text(encoding="utf-8") != text:  # same profile, same file: left untouched
        out.write_text(text, encoding="utf-8")
    tracking.log_artifact(run, out)
    return str(out)


@task(name="compare-models", cache_policy=component_cache_policy("components.comparison", "components.reporting"),
      **CACHED)
def comparison_task(evaluations: list[EvaluationOutputs], baseline: str, project_dir: str) -> ArtifactRef:
    """The comparison table (rows and text) and one accuracy-vs-LCPR plot per benchmark."""
    from components.comparison import write_comparison
    from components.reporting import read_report

    tables = {e.model.tag: {name: read_report(name, b.report.path).language_table for name, b in e.benchmarks.items()}
              for e in evaluations}
    out = artifact_dir(project_dir, "comparison", fingerprint([[e.model.tag, e.model.fingerprint,
                                                                [b.report.fingerprint for b in e.benchmarks.values()]]
                                                               for e in evaluations]))
    rows = write_comparison(tables, baseline, out)
    return ArtifactRef(str(out), file_fingerprint(out / "comparison.json"), {"rows": rows})


def headline_tags(rows: list[dict[str, Any]], model_tag: str) -> dict[str, str]:
    """Per-language headline metrics of one model as registry tags (``mgsm/fr/accuracy``)."""
    return {f"{r['benchmark']}/{r['lang']}/{metric}": f"{r[metric]:.4f}" for r in rows if r["model"] == model_tag
            for metric in ("accuracy", "lcpr") if r.get(metric) is not None}


@task(name="register-model", cache_policy=NO_CACHE)
def register_task(run: RunRef, registry: RegistrySettings, name: str, base_model: str, final: ModelRef,
                  weights_kind: str, tags: dict[str, str], project_dir: str) -> dict:
    """Register the final model (a new version, or the alias moved to an identical one) and return its reference."""
    from components.generation.base import adapter_digest
    from tasks.registry import register_model, write_model_dir

    weights = final.model.adapter if weights_kind == "adapter" else final.model.model
    digest = adapter_digest(weights) if weights_kind == "adapter" else final.fingerprint
    existing = _version_with_digest(run, name, digest)
    if existing is not None:
        tracking.client(run.tracking_uri).set_registered_model_alias(name, registry.alias, existing)
        return {"name": name, "version": int(existing), "alias": registry.alias, "uri": f"models:/{name}/{existing}",
                "reused": True}
    card = {"base": base_model, "tag": final.tag, "parent_run_id": run.run_id}
    model_dir = write_model_dir(artifact_dir(project_dir, "registry", digest) / "model", weights, weights_kind, card)
    all_tags = {**tags, "polyreason.base_model": base_model, "polyreason.weights_digest": digest,
                "polyreason.parent_run_id": run.run_id, "polyreason.kind": weights_kind}
    registered = register_model(run, name, registry.alias, model_dir, all_tags)
    tracking.set_tags(run, {"polyreason.registered": registered["uri"]})
    return {**registered, "reused": False}


def link_evaluation_run(parent: RunRef, run_id: str, uri: str) -> None:
    """Tag an evaluation run with the registered version it evaluated (``polyreason compare models:/…`` finds it)."""
    tracking.set_tags(RunRef(parent.tracking_uri, run_id, parent.experiment_id), {"polyreason.registered": uri})


def _version_with_digest(run: RunRef, name: str, digest: str) -> str | None:
    client = tracking.client(run.tracking_uri)
    if not client.search_registered_models(filter_string=f"name = '{name}'"):
        return None
    versions = client.search_model_versions(f"name = '{name}'")
    same = [v.version for v in versions if v.tags.get("polyreason.weights_digest") == digest]
    return max(same, key=int) if same else None


@task(name="merge-for-registry", cache_policy=component_cache_policy("components.training.adapters"), **CACHED)
def merged_model_task(final: ModelRef, project_dir: str) -> ModelRef:
    """The final model with its adapter merged into the base weights (for ``registry.merged``)."""
    from components.training.adapters import merge_adapter

    out = artifact_dir(project_dir, "merged", final.fingerprint) / "model"
    merge_adapter(final.model.model, final.model.adapter, out)
    merged = final.model.model_copy(update={"model": str(out), "adapter": None})
    return ModelRef(tag=f"{final.tag}-merged", model=merged, fingerprint=fingerprint([final.fingerprint, "merged"]))


STAGES = ("data", "sft", "rejection", "grpo", "evaluation", "audit", "registry")


def planned_stages(profile: Profile, stages: list[str] | None) -> list[str]:
    """The stages a recipe run executes: those asked for (all by default) whose section the profile has."""
    unknown = sorted(set(stages or ()) - set(STAGES))
    if unknown:
        raise ValueError(f"unknown recipe stages {unknown} (known: {', '.join(STAGES)})")
    present = {"data": profile.data, "sft": profile.sft, "rejection": profile.data and profile.data.rejection,
               "grpo": profile.grpo, "evaluation": profile.evaluation, "audit": profile.audit,
               "registry": profile.registry}
    return [stage for stage in STAGES if (stages is None or stage in stages) and present[stage] is not None]


@task(name="log-stages", cache_policy=NO_CACHE)
def log_stages_task(run: RunRef, runs: dict[str, str | None]) -> None:
    """The stage -> child run table of a recipe run."""
    tracking.log_table(run, [{"stage": stage, "run_id": run_id} for stage, run_id in runs.items() if run_id],
                       "recipe/stages.json")


def rejection_policy(profile: Profile, sft: SFTOutputs | None, cache_dir: str) -> ModelRef:
    """The model rejection sampling samples: ``data.rejection.policy``, else the SFT model."""
    from tasks.models import resolve_model_task, trained_model

    explicit = profile.data.rejection.policy
    if explicit is not None:
        return resolve_model_task(explicit, cache_dir, "policy")
    return resolve_model_task(trained_model(profile.sft.model, sft.base, sft.adapter, "adapter"), cache_dir, "sft")


def evaluation_models(profile: Profile, sft: SFTOutputs | None, grpo: GRPOOutputs | None,
                      cache_dir: str) -> list[ModelRef]:
    """The models a recipe evaluates, run as ``evaluation.model`` says: the base, then each trained model."""
    from tasks.models import resolve_model_task, trained_model

    run_as = profile.evaluation.model
    models = [resolve_model_task(run_as, cache_dir, "base", tracking.tracking_uri(profile.tracking,
                                                                                  profile.project_dir))]
    if sft is not None:
        models.append(resolve_model_task(trained_model(run_as, sft.base, sft.adapter, "adapter"), cache_dir, "sft"))
    if grpo is not None:
        models.append(resolve_model_task(trained_model(run_as, grpo.base, grpo.weights, grpo.kind), cache_dir, "grpo"))
    return models


def register_final(parent: RunRef, profile: Profile, sft: SFTOutputs | None, grpo: GRPOOutputs | None,
                   evaluations: list[EvaluationOutputs], comparison: ArtifactRef | None, project_dir: str) -> dict:
    """Register the recipe's final model (GRPO's, else SFT's), and its merged copy when the profile asks."""
    from tasks.models import resolve_model_task, trained_model

    registry, base_name = profile.registry, profile.sft.model.model
    kind = grpo.kind if grpo is not None else "adapter"
    final = evaluations[-1].model if evaluations else resolve_model_task(
        trained_model(profile.sft.model, sft.base, grpo.weights if grpo else sft.adapter, kind),
        str(Path(project_dir) / ".cache"), "grpo" if grpo else "sft")
    name = registry.name or profile.name
    tags = {**recipe_tags(profile), **headline_tags(comparison.summary["rows"] if comparison else [], final.tag)}
    registered = register_task(parent, registry, name, base_name, final, kind, tags, project_dir)
    if evaluations:  # the final model's evaluation is its registered version's first evaluation
        link_evaluation_run(parent, evaluations[-1].run_id, registered["uri"])
    if registry.merged and kind == "adapter":
        merged = merged_model_task(final, project_dir)
        registered["merged"] = register_task(parent, registry, f"{name}-merged", base_name, merged, "merged", tags,
                                             project_dir)
    return registered
