"""A trainer's optimizer steps before it runs, computed by the code that computes them when it trains.

Nothing here re-derives trl's or transformers' arithmetic; each number comes from
the library function the trainer itself calls, on stand-ins for what does not
exist yet (the rows, the trainer, the processes):

* the batch geometry: trl's config (``GRPOConfig`` / ``SFTConfig``) built as the
  trainer process builds it, its ``__post_init__`` resolving
  ``generation_batch_size`` and ``steps_per_generation`` from
  ``per_device_train_batch_size`` × processes × ``gradient_accumulation_steps``;
  the number of processes is the one the stage's launch starts
  (``components.planning.launch``: a multi-node pool's nodes × processes per node, else
  the accelerate config's machines × processes per machine), and the config is a
  device-free copy (``world_size`` answered, nothing set up);
* GRPO's counts read off that config: completions per generation
  (``generation_batch_size``), per optimizer step (``per_device_train_batch_size`` ×
  ``world_size`` × ``gradient_accumulation_steps``, what one step's micro-batches over
  all processes hold) and generation rounds (trl generates anew when its micro-step
  counter reaches a multiple of ``steps_per_generation`` × ``num_iterations``, so a run
  of ``m`` micro-steps generates ``ceil(m / that)`` times);
* the sampler's length: GRPO's is trl's ``RepeatSampler`` (each prompt
  ``num_generations`` times, generation batches of whole prompts, a last
  incomplete one dropped, each repeated ``num_iterations`` × ``steps_per_generation``
  times), over coupled units when LcRL couples languages (as the coupled trainer
  does); SFT's is one pass over the rows;
* the loader: torch's ``BatchSampler`` with the trainer's per-process batch,
  sharded over processes by accelerate's ``BatchSamplerShard`` (what
  ``Accelerator.prepare`` does);
* the steps: transformers' ``Trainer.set_initial_training_values`` (update steps
  per epoch, then ``max_steps`` or ``ceil(epochs × steps per epoch)``), called on
  a stand-in trainer answering the three questions it asks; the warm-up:
  ``TrainingArguments.get_warmup_steps``, the number the scheduler receives.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from components.settings.trainer import VALIDATION_RUNTIME, TrainerSettings, trl_config_class


@dataclass(frozen=True)
class TrainerSteps:
    """What a trainer section does with ``rows`` rows on ``processes`` processes."""

    rows: int
    processes: int
    per_device: int
    accumulation: int
    steps_per_epoch: int
    total_steps: int
    epochs: int
    by_max_steps: bool
    warmup_steps: int
    generation_batch_size: int | None = None  # GRPO: completions per generation
    steps_per_generation: int | None = None  # GRPO: micro-steps served by one generation
    generations: int | None = None  # GRPO: generation rounds in the run
    completions_per_step: int | None = None  # GRPO: completions in one optimizer step


class _TrainerView:
    """What ``Trainer.set_initial_training_values`` asks of the trainer, answered before one exists."""

    def __init__(self, total_batch: int) -> None:
        self.total_batch = total_batch

    def get_total_train_batch_size(self, args: Any) -> int:
        return self.total_batch

    def get_sp_size(self) -> int:
        return 1  # no sequence parallelism in polyreason's launch configs

    def num_examples(self, loader: Any) -> int:
        return len(loader.dataset)


class _Loader:
    """A data loader's two observable sizes: its dataset's rows and its batches per process."""

    def __init__(self, rows: int, batches: int) -> None:
        self.dataset, self.batches = range(rows), batches

    def __len__(self) -> int:
        return self.batches


def launched_processes(accelerate_config: str | None) -> int:
    """The processes the stage's accelerate config launches on all its machines (``nodes.accelerate_world``;
    1 without one: plain ``python -m``). A multi-node pool's launch: ``components.planning.launch``."""
    from components.planning.memory import accelerate_yaml
    from components.training.multinode import accelerate_world

    if accelerate_config is None:
        return 1
    machines, per_machine = accelerate_world(accelerate_yaml(accelerate_config))
    return machines * per_machine


@lru_cache(maxsize=16)
def _planning_class(name: str, processes: int) -> type:
    """trl's config ``name`` as ``processes`` processes would build it, with no device or process group set up."""
    import torch

    from functools import cached_property

    class Planning(trl_config_class(name)):  # type: ignore[misc, valid-type]
        @cached_property
        def _setup_devices(self) -> Any:
            self.distributed_state, self._n_gpu = None, 0
            return torch.device("cpu")

        @property
        def world_size(self) -> int:
            return processes

    Planning.__name__ = Planning.__qualname__ = name
    return Planning


def trl_config(section: TrainerSettings, processes: int) -> Any:
    """The section's trl config as its trainer would build it on ``processes`` processes (trl's errors raised)."""
    section.require_trl_checked()
    arguments = {**section.trl_options, **section.trl_derived(), **VALIDATION_RUNTIME}
    return _planning_class(section.TRL_CONFIG, processes)(**arguments)


def loader_batches(samples: int, batch_size: int, processes: int, args: Any) -> int:
    """Batches per process of a loader over ``samples`` indices, as accelerate shards it."""
    from accelerate.data_loader import BatchSamplerShard
    from torch.utils.data import BatchSampler

    batches = BatchSampler(range(samples), batch_size, drop_last=args.dataloader_drop_last)
    accelerator = args.accelerator_config
    return len(BatchSamplerShard(batches, num_processes=processes, process_index=0,
                                 split_batches=accelerator.split_batches, even_batches=accelerator.even_batches))


def count_steps(args: Any, rows: int, batches: int, processes: int) -> tuple[int, int, int]:
    """``(steps per epoch, total steps, epochs)`` from transformers' own computation."""
    from transformers import Trainer

    total_batch = args.per_device_train_batch_size * args.gradient_accumulation_steps * processes
    values = Trainer.set_initial_training_values(_TrainerView(total_batch), args, _Loader(rows, batches))
    epochs, per_epoch, max_steps = values[0], values[1], values[6]
    return int(per_epoch), int(max_steps), int(epochs)


def grpo_steps(section: Any, rows: int, processes: int, languages_per_unit: int = 1) -> TrainerSteps:
    """GRPO's steps over ``rows`` prompts; ``languages_per_unit`` > 1: LcRL's coupled groups of that many rows."""
    from trl.trainer.utils import RepeatSampler

    args = trl_config(section, processes)
    generations, spg = args.generation_batch_size, args.steps_per_generation
    repeat = args.num_iterations * spg
    unit = languages_per_unit * args.num_generations
    if languages_per_unit == 1:
        samples = len(RepeatSampler(range(rows), mini_repeat_count=args.num_generations,
                                    batch_size=generations // args.num_generations, repeat_count=repeat))
    else:
        units = rows // languages_per_unit
        samples = len(RepeatSampler(range(units), mini_repeat_count=1, batch_size=generations // unit,
                                    repeat_count=repeat)) * unit
    batches = loader_batches(samples, args.per_device_train_batch_size * spg, processes, args)
    per_epoch, total, epochs = _steps_or_none(args, rows, batches, processes)
    micro_steps = total * args.gradient_accumulation_steps
    return TrainerSteps(rows=rows, processes=processes, per_device=args.per_device_train_batch_size,
                        accumulation=args.gradient_accumulation_steps, steps_per_epoch=per_epoch, total_steps=total,
                        epochs=epochs, by_max_steps=args.max_steps > 0, warmup_steps=args.get_warmup_steps(total),
                        generation_batch_size=generations, steps_per_generation=spg,
                        generations=-(-micro_steps // repeat) if total else 0,
                        completions_per_step=args.per_device_train_batch_size * args.world_size
                        * args.gradient_accumulation_steps)


def sft_steps(section: Any, rows: int, processes: int) -> TrainerSteps:
    """SFT's steps over ``rows`` training rows (one pass per epoch, unpacked)."""
    args = trl_config(section, processes)
    batches = loader_batches(rows, args.per_device_train_batch_size, processes, args)
    per_epoch, total, epochs = _steps_or_none(args, rows, batches, processes)
    return TrainerSteps(rows=rows, processes=processes, per_device=args.per_device_train_batch_size,
                        accumulation=args.gradient_accumulation_steps, steps_per_epoch=per_epoch, total_steps=total,
                        epochs=epochs, by_max_steps=args.max_steps > 0, warmup_steps=args.get_warmup_steps(total))


def _steps_or_none(args: Any, rows: int, batches: int, processes: int) -> tuple[int, int, int]:
    """``count_steps``, or zeros when the loader is empty and nothing bounds the run (transformers refuses it)."""
    if batches == 0 and args.max_steps <= 0:
        return 0, 0, 0
    if batches == 0:
        return 0, int(args.max_steps), 0
    return count_steps(args, rows, batches, processes)
