"""Models for every stage: a model's settings resolved into a ``ModelRef`` (where it is, what it is).

* ``resolve_model_task`` turns a model's settings into a ``ModelRef``: a
  ``models:/NAME@ALIAS`` or ``models:/NAME/VERSION`` reference is downloaded from
  the registry once (its card says the base and the adapter or merged weights),
  the embedded Gemma is converted once, and the fingerprint covers settings,
  weight files and adapter content. Never cached: it must see the files on disk now.
"""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from components.settings import ModelSettings
from runtime.outputs import ModelRef
from runtime.project import Project


def registered_model(model: ModelSettings, tracking_uri: str | None, cache_dir: Path) -> tuple[ModelSettings, str]:
    """Settings of the registered version ``model.model`` names, with local weights, and its ``models:/`` URI."""
    from runtime.tracking.registry import resolve_registered

    if not tracking_uri:
        raise ValueError(f"{model.model}: a registry reference needs a tracking URI (the profile's tracking section)")
    card = resolve_registered(tracking_uri, model.model, cache_dir)
    if card["kind"] == "adapter":
        return model.model_copy(update={"model": card["base"], "adapter": card["path"]}), card["uri"]
    return model.model_copy(update={"model": card["path"], "adapter": None}), card["uri"]


@task(name="resolve-model", cache_policy=NO_CACHE)
def resolve_model_task(model: ModelSettings, project: Project, tag: str = "base",
                       tracking_uri: str | None = None) -> ModelRef:
    """Where the model is (registry downloads and the embedded conversion done once) and its identity."""
    from components.generation.base import EMBEDDED_PREFIX, model_fingerprint, resolve_model
    from components.generation.embedded import ensure_embedded_model

    registered = None
    if model.model.startswith("models:/") and model.backend != "openai":  # a server knows its own model names
        model, registered = registered_model(model, tracking_uri, project.cache_dir)
    if model.model.startswith(EMBEDDED_PREFIX):
        ensure_embedded_model(project.cache_dir)
    resolved = resolve_model(model, project.cache_dir)
    local = model.model_copy(update={"model": resolved.path}) if resolved.local and not resolved.gguf_file else model
    fingerprint = model_fingerprint(model, resolved.path if resolved.local else None)
    return ModelRef(tag=tag, model=local, fingerprint=fingerprint, registered=registered)

