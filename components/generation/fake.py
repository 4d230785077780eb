"""A deterministic fake backend for plumbing tests (lm-eval's ``DummyLM`` idea).

It never loads a model: each completion is derived from a hash of the prompt
and the sample index, so the same prompts always give the same rows. It counts
its calls on the instance and in ``<cache_dir>/fake-generator-calls.log`` (one
line per ``generate`` call), so a test can see that a cached re-run generated
nothing even when the generator was built in another task. ``model:
"fake:fail-batch=N"`` makes batch ``N`` raise, to test the error path.

>>> from components.settings import ModelSettings, SamplingSettings
>>> import tempfile
>>> fake = FakeGenerator(ModelSettings(backend="fake", model="fake"), tempfile.mkdtemp(), progress=False)
>>> out = fake.generate(["a", "b"], SamplingSettings(n=2))
>>> [len(samples) for samples in out], fake.calls, out == fake.generate(["a", "b"], SamplingSettings(n=2))
([2, 2], 1, True)
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from components.generation.base import Completion, GenerationStats, run_batches

if TYPE_CHECKING:  # settings are handed in; the registry stays importable by the settings' checks
    from components.settings import ModelSettings, SamplingSettings

CALL_LOG = "fake-generator-calls.log"


def fake_completion(prompt: str, sample_index: int) -> Completion:
    """The fake text for one sample: a short trace and a boxed number from a hash.

    >>> fake_completion("x", 0).text.startswith("<think>")
    True
    """
    digest = hashlib.sha256(f"{sample_index}:{prompt}".encode("utf-8")).hexdigest()
    text = f"<think>Fake reasoning {digest[:8]}.</think>The answer is \\boxed{{{int(digest[:8], 16) % 100}}}."
    return Completion(text=text, num_tokens=len(text.split()))


def fake_call_count(cache_dir: str | Path) -> int:
    """How many ``generate`` calls fake generators made with this ``cache_dir``."""
    log = Path(cache_dir) / CALL_LOG
    return len(log.read_text(encoding="utf-8").splitlines()) if log.is_file() else 0


class FakeGenerator:
    name = "fake"

    def __init__(self, model: ModelSettings, cache_dir: str | Path, *, progress: bool = False):
        self.settings = model
        self.cache_dir = Path(cache_dir)
        self.progress = progress
        self.calls = 0
        self.prompts_seen = 0
        self.stats: GenerationStats | None = None
        self.fail_batch = _fail_batch(model.model)

    def generate(self, prompts: list[str], sampling: SamplingSettings,
                 stop: Sequence[str] = ()) -> list[list[Completion]]:
        self.calls += 1
        self.prompts_seen += len(prompts)
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        with (self.cache_dir / CALL_LOG).open("a", encoding="utf-8") as log:
            log.write(f"{len(prompts)}\n")

        def batch(items: list[str], index: int) -> list[list[Completion]]:
            if index == self.fail_batch:
                raise RuntimeError(f"fake failure on batch {index}")
            return [[fake_completion(p, k) for k in range(sampling.n)] for p in items]

        results, self.stats = run_batches(prompts, sampling.batch_size, batch,
                                          model_name=self.settings.model, progress=self.progress)
        return results


def _fail_batch(model: str) -> int | None:
    marker = "fail-batch="
    if marker not in model:
        return None
    return int(model.split(marker, 1)[1].split(",")[0])


def make_fake(model: ModelSettings, cache_dir: Path) -> FakeGenerator:
    return FakeGenerator(model, cache_dir)
