"""Models for every stage: resolving a model reference, and one loaded generator per model per process.

* ``resolve_model_task`` turns a model's settings into a ``ModelRef``: a
  ``models:/NAME@ALIAS`` or ``models:/NAME/VERSION`` reference is downloaded from
  the registry once (its card says the base and the adapter or merged weights),
  the embedded Gemma is converted once, and the fingerprint covers settings,
  weight files and adapter content. Never cached: it must see the files on disk now.
* ``generator_for`` keeps the generator of the model in use until it is released,
  so the benchmarks of one evaluation share one model load (on a GPU a second
  ``vllm.LLM`` cannot get its memory while the first is alive). Asking for
  another model releases the previous one first; an evaluation releases its
  model when it ends, and training tasks release everything before they launch
  a trainer.
"""

from __future__ import annotations

import gc
import threading
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from components.settings import ModelSettings
from tasks.outputs import ModelRef

_LOADED: dict[str, object] = {}
_LOCK = threading.Lock()


def registered_model(model: ModelSettings, tracking_uri: str | None, cache_dir: Path) -> tuple[ModelSettings, str]:
    """Settings of the registered version ``model.model`` names, with local weights, and its ``models:/`` URI."""
    from tasks.registry import resolve_registered

    if not tracking_uri:
        raise ValueError(f"{model.model}: a registry reference needs a tracking URI (the profile's tracking section)")
    card = resolve_registered(tracking_uri, model.model, cache_dir)
    if card["kind"] == "adapter":
        return model.model_copy(update={"model": card["base"], "adapter": card["path"]}), card["uri"]
    return model.model_copy(update={"model": card["path"], "adapter": None}), card["uri"]


@task(name="resolve-model", cache_policy=NO_CACHE)
def resolve_model_task(model: ModelSettings, cache_dir: str, tag: str = "base",
                       tracking_uri: str | None = None) -> ModelRef:
    """Where the model is (registry downloads and the embedded conversion done once) and its identity."""
    from components.generation.base import EMBEDDED_PREFIX, model_fingerprint, resolve_model
    from components.generation.embedded import ensure_embedded_model

    registered = None
    if model.model.startswith("models:/") and model.backend != "openai":  # a server knows its own model names
        model, registered = registered_model(model, tracking_uri, Path(cache_dir))
    if model.model.startswith(EMBEDDED_PREFIX):
        ensure_embedded_model(Path(cache_dir))
    resolved = resolve_model(model, Path(cache_dir))
    local = model.model_copy(update={"model": resolved.path}) if resolved.local and not resolved.gguf_file else model
    fingerprint = model_fingerprint(model, resolved.path if resolved.local else None)
    return ModelRef(tag=tag, model=local, fingerprint=fingerprint, registered=registered)


def generator_for(ref: ModelRef, cache_dir: str):
    """The generator of ``ref``, loaded once per process; another model's generator is released first."""
    from components.generation import build_generator

    with _LOCK:
        if ref.fingerprint not in _LOADED:
            _release_locked()
            _LOADED[ref.fingerprint] = build_generator(ref.model, Path(cache_dir))
        return _LOADED[ref.fingerprint]


def release_generators() -> None:
    """Drop every loaded generator and free its memory (before a trainer needs it)."""
    with _LOCK:
        _release_locked()


def _release_locked() -> None:
    for generator in _LOADED.values():
        close = getattr(generator, "close", None)
        if close is not None:
            close()
    _LOADED.clear()
    gc.collect()
    import sys

    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


def trained_model(settings: ModelSettings, base: ModelRef, weights: str, kind: str) -> ModelSettings:
    """``settings`` (how to run a model) pointed at trained weights: the base plus an adapter, or a full model."""
    if kind == "adapter":
        return settings.model_copy(update={"model": base.model.model, "adapter": weights, "gguf_file": None})
    return settings.model_copy(update={"model": weights, "adapter": None, "gguf_file": None})
