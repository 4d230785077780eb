"""Prefect tasks over the MLflow model registry: register the recipe's final model, and the nightly look-ups.

* ``register_task`` registers a model with its card, tags and alias; re-running a
  recipe whose weights did not change moves the alias to the existing version
  instead of adding a copy (versions carry the digest of their weights); the recipe's
  run lists the registered logged model among its outputs (``link_models_task``: the
  stages' models too).
* ``merged_model_task`` (cached) merges an adapter into its base weights, for
  profiles that register a merged copy too.
* ``nightly_references_task`` / ``link_evaluation_task``: which versions a nightly
  run re-evaluates, and the tag that leads from a version to its dated run.

The MLflow calls themselves are in ``runtime.tracking.registry``.
"""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from components.config import fingerprint
from components.settings import RegistrySettings
from runtime import tracking
from runtime.tracking import registry
from runtime.cache.policy import CACHED, cache_policy
from runtime.outputs import ModelRef, RegisteredModel
from runtime.project import Project
from runtime.tracking import RunRef


@task(name="register-model", cache_policy=NO_CACHE)
def register_task(run: RunRef, settings: RegistrySettings, name: str, base_model: str, final: ModelRef,
                  weights_kind: str, tags: dict[str, str], project: Project,
                  trained_model: str | None = None) -> RegisteredModel:
    """Register the final model (a new version, or the alias moved to an identical one) and return its reference.

    ``trained_model``: the logged model of the stage that trained these weights (the one evaluated); the version
    registers it (``runtime.tracking.registry.register_model``), so its page leads to the evaluations' metrics."""
    from components.generation.base import adapter_digest

    weights = final.model.adapter if weights_kind == "adapter" else final.model.model
    digest = adapter_digest(weights) if weights_kind == "adapter" else final.fingerprint
    existing = registry.version_with_tag(run.tracking_uri, name, "polyreason.weights_digest", digest)
    if existing is not None:
        tracking.client(run.tracking_uri).set_registered_model_alias(name, settings.alias, existing)
        return RegisteredModel(name=name, version=int(existing), alias=settings.alias,
                               uri=f"{registry.PREFIX}{name}/{existing}", reused=True)
    card = {"base": base_model, "tag": final.tag, "parent_run_id": run.run_id}

    def copy(out: Path) -> dict:
        registry.write_model_dir(out / "model", weights, weights_kind, card)
        return {"kind": weights_kind}

    model_dir = Path(project.produce("registry", digest, "model", copy).path)
    all_tags = {**tags, "polyreason.base_model": base_model, "polyreason.weights_digest": digest,
                "polyreason.parent_run_id": run.run_id, "polyreason.kind": weights_kind}
    registered = registry.register_model(run, name, settings.alias, model_dir, all_tags, evaluated=trained_model)
    tracking.set_tags(run, {"polyreason.registered": registered.uri})
    return registered


def link_run_models(run: RunRef, model_ids: list[str | None]) -> None:
    """The logged models as outputs of ``run`` (the recipe's run lists what its stages trained and registered);
    one already among them is left as it is (MLflow refuses the same output twice)."""
    from mlflow.entities import LoggedModelOutput

    client = tracking.client(run.tracking_uri)
    outputs = client.get_run(run.run_id).outputs
    present = {o.model_id for o in (outputs.model_outputs if outputs else [])}
    found = [LoggedModelOutput(model_id, 0) for model_id in dict.fromkeys(model_ids)
             if model_id and model_id not in present]
    if found:
        client.log_outputs(run.run_id, found)


@task(name="link-models", cache_policy=NO_CACHE)
def link_models_task(run: RunRef, model_ids: list[str | None]) -> None:
    """Name the stages' logged models (the trained adapters, the evaluated model) as outputs of the recipe's run."""
    link_run_models(run, model_ids)


@task(name="merge-for-registry", cache_policy=cache_policy("adapters"), **CACHED)
def merged_model_task(final: ModelRef, project: Project) -> ModelRef:
    """The final model with its adapter merged into the base weights (for ``registry.merged``)."""
    from components.training.adapters import merge_adapter

    def merge(out: Path) -> dict:
        merge_adapter(final.model.model, final.model.adapter, out / "model")
        return {}

    out = project.produce("merged", final.fingerprint, "model", merge).path
    merged = final.model.model_copy(update={"model": out, "adapter": None})
    return ModelRef(tag=f"{final.tag}-merged", model=merged, fingerprint=fingerprint([final.fingerprint, "merged"]))


@task(name="link-registered-evaluation", cache_policy=NO_CACHE)
def link_registered_evaluation_task(parent: RunRef, run_id: str, uri: str) -> None:
    """Tag an evaluation run with the registered version it evaluated (``polyreason compare models:/…`` finds it)."""
    tracking.set_tags(RunRef(parent.tracking_uri, run_id, parent.experiment_id), {"polyreason.registered": uri})


@task(name="nightly-versions", cache_policy=NO_CACHE)
def nightly_references_task(tracking_uri: str, names: list[str], alias: str | None, latest: int) -> list[str]:
    """The registered versions to re-evaluate tonight (read from the registry now, never cached)."""
    return registry.nightly_references(tracking_uri, names, alias, latest)


@task(name="link-evaluation", cache_policy=NO_CACHE)
def link_evaluation_task(tracking_uri: str, reference: str, run_id: str, day: str) -> None:
    """Tag the model version with its dated evaluation run."""
    registry.link_evaluation(tracking_uri, reference, run_id, day)
