"""The model-resolution task shared by every stage that loads a model."""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from components.settings import ModelSettings


@task(name="resolve-model", cache_policy=NO_CACHE)
def resolve_model_task(model: ModelSettings, cache_dir: str) -> dict:
    """Where the model is (converting the embedded GGUF once) and its identity for cache keys.

    Never cached: the fingerprint must reflect the weights on disk right now.
    """
    from components.generation.base import EMBEDDED_PREFIX, model_fingerprint, resolve_model
    from components.generation.embedded import ensure_embedded_model

    if model.model.startswith(EMBEDDED_PREFIX):
        ensure_embedded_model(Path(cache_dir))
    resolved = resolve_model(model, Path(cache_dir))
    return {"path": resolved.path, "fingerprint": model_fingerprint(model, resolved.path if resolved.local else None)}
