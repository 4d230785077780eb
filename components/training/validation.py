"""Validation curves during GRPO: the policy answers a held-out set every N steps (AdaMame figure 3).

AdaMame evaluates its policy on a held-out validation set every two training
batches and plots validation accuracy beside the share of rollouts reasoning in
the query language, on "a held-out validation set of 1K instances (250 per
language)" — five languages at 250 are 1,250, so the two numbers disagree; the
AdaMame profiles hold out 250 per language (the per-language figure the curves
are read by) and validate on all of them. ``ValidationCallback`` does the same
inside the trainer process:

* at ``on_step_end`` of every ``every_n_steps``-th optimizer step (and at
  ``on_train_begin`` of a fresh run when ``before_training``, as verl's
  ``val_before_train``), the current policy generates for the validation prompts,
  each process a shard, gathered on the main process. With trl's colocated vLLM
  (``use_vllm``, ``vllm_mode: colocate``: the profile's generator) the policy's
  weights are first synced into that engine (trl's own ``sync_weights``, which
  merges a LoRA adapter; trl then skips its sync at the next generation of the same
  step) and the engine generates, as the GRPO rollouts are generated; otherwise
  the trained model itself generates with ``model.generate`` (the transformers
  backend's batching and decoding rule) in eval mode. Greedy by default; the
  engine generates from token ids as ``components.generation.vllm_backend`` does,
  so both answer a prompt alike;
* the rows are scored like an evaluation (``components.scoring``: the
  validation verifier, LCPR by AdaMame's rule) and per language plus
  ``overall`` the accuracy, LCPR and mean response length (generated tokens) go
  to ``metrics.jsonl`` through the shared sink as ``validation/<metric>/<lang>``
  at the step, which the GRPO log task turns into ``grpo/validation/...`` curves;
  accuracy and LCPR come with their standard error and n as
  ``validation/<metric>_stderr/<lang>`` and ``validation/<metric>_n/<lang>`` (the
  evaluation's cluster bootstrap over problems, ``components.metrics.bootstrap``; n
  the problems judged), so a curve's wiggle can be told from a trend: at 50
  problems per language an accuracy of 0.5 has a standard error near 0.07.

The prompts are the training renderer's (``components.training.grpo_data``),
so validation sees what the policy trains on. trl's vLLM in server mode or with
its sleep mode is not used (the server is sized for rollouts, the sleeping engine
holds no weights between generations): there transformers generates, slower —
``polyreason plan`` shows the validation's generations either way.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from components.training.callbacks import _Callback

if TYPE_CHECKING:
    from components.settings import GRPOValidationSettings

METRICS = ("accuracy", "lcpr")


def limit_per_language(rows: list[dict], limit: int | None) -> list[dict]:
    """The first ``limit`` rows of each language, in file order (all when ``None``).

    >>> [r["id"] for r in limit_per_language([{"id": i, "lang": l} for i, l in enumerate("ffjf")], 2)]
    [0, 1, 2]
    """
    if limit is None:
        return list(rows)
    seen: dict[str, int] = defaultdict(int)
    kept = []
    for row in rows:
        seen[row["lang"]] += 1
        if seen[row["lang"]] <= limit:
            kept.append(row)
    return kept


def validation_metrics(rows: list[dict], completions: list[list[Any]], verifier: str,
                       extraction: str = "strict") -> dict[str, float]:
    """``validation/<metric>/<lang>`` (and ``/overall``): accuracy, LCPR (each with ``_stderr`` and ``_n``)
    and mean response length in tokens."""
    from components.metrics.aggregate import COUNT, STDERR
    from components.scoring import score_rows
    from components.settings import ScoringSettings

    samples = [{"id": row["id"], "lang": row["lang"], "gold": row["gold"], "completion": c.text,
                "sample_index": index, "num_tokens": c.num_tokens}
               for row, outputs in zip(rows, completions) for index, c in enumerate(outputs)]
    scored = score_rows(samples, ScoringSettings(verifier=verifier, lcpr_rule="adamame", extraction=extraction))
    out: dict[str, float] = {}
    for lang, cell in scored["aggregate"].items():
        for name in METRICS:
            for key in (name, name + STDERR, name + COUNT):
                if cell.get(key) is not None and cell.get(name) is not None:
                    out[f"validation/{key}/{lang}"] = float(cell[key])
    lengths: dict[str, list[int]] = defaultdict(list)
    for sample in samples:
        lengths[sample["lang"]].append(sample["num_tokens"])
        lengths["overall"].append(sample["num_tokens"])
    out.update({f"validation/response_length/{lang}": sum(v) / len(v) for lang, v in lengths.items()})
    return out


class _PolicyGenerator:
    """The transformers backend's batched generation on a model already in memory (the policy)."""

    def __init__(self, model: Any, tokenizer: Any) -> None:
        from components.generation.transformers_backend import TransformersGenerator
        from components.settings import ModelSettings

        class Loaded(TransformersGenerator):
            def load(self) -> None:  # the policy is already loaded, on its device
                return None

        self.generator = Loaded(ModelSettings(model="policy"), Path("."), progress=False)
        self.generator._model, self.generator._tokenizer = model, tokenizer
        self.generator._device = str(next(model.parameters()).device)

    def generate(self, prompts: list[str], sampling: Any) -> list[list[Any]]:
        return self.generator.generate(prompts, sampling) if prompts else []


class _EnginePolicyGenerator:
    """trl's colocated vLLM engine with the policy's current weights (synced once per step)."""

    def __init__(self, trainer: Any) -> None:
        from components.generation.vllm_backend import VLLMGenerator
        from components.settings import ModelSettings

        class Loaded(VLLMGenerator):
            def load(self) -> None:  # trl's engine, already built
                return None

        self.trainer = trainer
        self.generator = Loaded(ModelSettings(model="policy", backend="vllm"), Path("."), progress=False)
        self.generator._llm = trainer.vllm_generation.llm

    def sync(self, step: int) -> None:
        """The policy's weights into the engine (every process: a sharded model's gather is collective)."""
        if getattr(self.trainer, "_last_loaded_step", None) != step:
            self.trainer.vllm_generation.sync_weights()
            self.trainer._last_loaded_step = step

    def generate(self, prompts: list[str], sampling: Any) -> list[list[Any]]:
        return self.generator.generate(prompts, sampling) if prompts else []


def uses_engine(trainer: Any) -> bool:
    """Whether validation generates with the trainer's vLLM: trl's colocated engine, awake between generations."""
    generation = getattr(trainer, "vllm_generation", None) if getattr(trainer, "use_vllm", False) else None
    return (generation is not None and getattr(generation, "mode", None) == "colocate"
            and not getattr(generation, "enable_sleep_mode", False))


class ValidationCallback(_Callback):
    """Generates and scores the validation rows at its steps; the main process writes the curves."""

    def __init__(self, rows: list[dict], settings: "GRPOValidationSettings", tokenizer: Any, *,
                 write: Callable[[int, dict[str, float]], None], accelerator: Any = None,
                 trainer: Any = None) -> None:
        self.rows = rows
        self.engine = _EnginePolicyGenerator(trainer) if trainer is not None and uses_engine(trainer) else None
        self.settings = settings
        self.tokenizer = tokenizer
        self.write = write
        self.accelerator = accelerator
        self.history: list[int] = []

    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
        if self.settings.before_training and state.global_step == 0:
            self.validate(model, 0, state.is_world_process_zero)

    def on_step_end(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
        if state.global_step % self.settings.every_n_steps == 0:
            self.validate(model, state.global_step, state.is_world_process_zero)

    def validate(self, model: Any, step: int, main: bool) -> None:
        """One validation pass at ``step`` (every process generates its shard; the main one writes)."""
        rank, world = (self.accelerator.process_index, self.accelerator.num_processes) if self.accelerator else (0, 1)
        mine = self.rows[rank::world]
        prompts = [r["prompt"] for r in mine]
        if self.engine is not None:
            self.engine.sync(step)
            outputs = self.engine.generate(prompts, self.settings.sampling)
        else:
            training = model.training
            model.eval()
            try:
                outputs = _PolicyGenerator(model, self.tokenizer).generate(prompts, self.settings.sampling)
            finally:
                model.train(training)
        pairs = list(zip(mine, outputs))
        if world > 1:
            from accelerate.utils import gather_object

            pairs = gather_object(pairs)
        self.history.append(step)
        if main:
            self.write(step, validation_metrics([p[0] for p in pairs], [p[1] for p in pairs],
                                                self.settings.verifier, self.settings.extraction))
