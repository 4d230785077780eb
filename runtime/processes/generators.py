"""One loaded generator per model per process, released before another model or a trainer needs the memory.

``generator_for`` keeps the generator of the model in use until it is released,
so the benchmarks of one evaluation share one model load (on a GPU a second
``vllm.LLM`` cannot get its memory while the first is alive). Asking for
another model releases the previous one first; an evaluation releases its
model when it ends, and training releases everything before it launches a
trainer.
"""

from __future__ import annotations

import gc
import sys
import threading
from pathlib import Path

from runtime.outputs import ModelRef

_LOADED: dict[str, object] = {}
_LOCK = threading.Lock()


def generator_for(ref: ModelRef, cache_dir: str | Path):
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
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()
