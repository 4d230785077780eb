"""Generation backends behind one interface (``Generator``), chosen by name in the profile.

``BACKENDS`` maps a name to a factory ``(model: ModelSettings, cache_dir: Path) -> Generator``;
heavy libraries (torch, transformers, vllm) are imported only when a backend loads.

>>> all(name in BACKENDS for name in ("transformers", "vllm", "fake"))
True
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable

from components.generation.base import (
    Completion,
    GenerationError,
    GenerationStats,
    Generator,
    ResolvedModel,
    load_tokenizer,
    model_fingerprint,
    resolve_model,
)
from components.generation.fake import make_fake
from components.generation.openai_backend import openai_backend
from components.generation.transformers_backend import make_transformers
from components.generation.vllm_backend import make_vllm
from components.generation.vllm_server import make_vllm_server

if TYPE_CHECKING:  # settings are handed in; the registry stays importable by the settings' checks
    from components.settings import ModelSettings

BACKENDS: dict[str, Callable[[ModelSettings, Path], Generator]] = {
    "transformers": make_transformers,
    "vllm": make_vllm,
    "fake": make_fake,
    "openai": openai_backend,
    "vllm-server": make_vllm_server,
}


def build_generator(model: ModelSettings, cache_dir: Path) -> Generator:
    """The backend named by ``model.backend``; ValueError lists the known names."""
    if model.backend not in BACKENDS:
        raise ValueError(f"unknown generation backend {model.backend!r} (known: {', '.join(sorted(BACKENDS))})")
    return BACKENDS[model.backend](model, Path(cache_dir))


__all__ = [
    "BACKENDS",
    "Completion",
    "GenerationError",
    "GenerationStats",
    "Generator",
    "ResolvedModel",
    "build_generator",
    "load_tokenizer",
    "model_fingerprint",
    "resolve_model",
]
