"""Curriculum GRPO: trl ``GRPOTrainer`` + peft LoRA with registry rewards and checkpointed curricula.

Run by the training entry point (``components.training``) from a ``TrainingJob``
of stage ``grpo``: the model (the base weights, with the SFT adapter merged in
first), the dataset (``components.training.grpo_data``) and the section.

* A fresh LoRA adapter is trained on the merged weights, so trl's PEFT reference
  (adapters disabled) is the SFT policy and a KL-triggered reference reset is
  "merge + fresh adapter" (``components.training.callbacks``).
* With ``lora: null`` every weight is trained (the papers' RL stages). trl then
  builds its own reference model with ``beta > 0``, from the path in the
  model's config, which for an SFT adapter merged in here is the base without
  it (and, under FSDP with ``fsdp_cpu_ram_efficient_loading``, zeros on every
  rank but the first); so the policy's weights, as loaded, are copied into that
  reference before training — into its shards when trl has sharded it (ZeRO-3,
  FSDP2) while the policy is still whole — and a reference reset copies them
  again. Copied before ``train``, the reference is the initial policy both in a
  run from step 0 and in a resumed one (whose checkpoint is loaded later).
* The launch's sharding takes effect on CPU processes as on GPUs
  (``components.training.distributed``), and ``result.json`` records the
  distributed type the trainer used (``distributed_type``).
* Resumes from the last complete checkpoint under ``<out>/trainer`` when
  ``resume`` is set, with the curricula and reference resets of that checkpoint.
* ``GRPOConfig`` is built from the section (``GRPOStageSettings.trl_arguments``):
  its trl keys as given, the values derived from its own fields (sampling, reward
  weights, vLLM), and where and how the trainer runs: ``use_cpu`` on CPU,
  ``bf16`` and the weights' dtype from ``components.training.precision``;
  ``report_to=[]``: metrics go to ``<out>/metrics.jsonl`` and the task logs them
  to MLflow.
* Validation curves: with ``validation.enabled`` the policy answers the held-out
  set every N steps (``components.training.validation``).
* Writes ``<out>/adapter`` (final adapter, plus curriculum/reset state),
  ``<out>/merged`` (full model, only when the reference was reset: the LoRA
  adapter alone then misses the merged updates) and ``<out>/result.json``; with
  ``lora: null``, the full model (and that state) in ``<out>/model`` instead.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from components.rewards import build_reward, reward_columns
from components.settings import GRPOStageSettings
from components.training.callbacks import (
    CurriculumCallback, MetricsJsonlCallback, ReferenceResetCallback, copy_policy_into_reference,
)  # fmt: skip
from components.training.progress import ProgressCallback
from components.training.distributed import apply_launch, distributed_type
from components.training.judge import attach_judge
from components.training.grpo_data import dataset_rows, load_rows, training_rows
from components.training.runner import (
    MarkCompleteCallback, TrainingJob, load_model, lora_config, resolve_device, resume_checkpoint, run_precision,
    start_of, trainer_runtime,
)  # fmt: skip
from components.training.precision import Precision, trainer_precision


def grpo_config(settings: GRPOStageSettings, precision: Precision, output_dir: Path, device: str) -> Any:
    """trl ``GRPOConfig`` from the section: its trl keys, the values it derives, where and how the trainer runs."""
    from trl import GRPOConfig

    return GRPOConfig(**settings.trl_arguments(trainer_runtime(precision, device, output_dir)))


def sharded_weights(trainer: Any) -> bool:
    """Whether the trainer partitions weights over its processes (FSDP, DeepSpeed ZeRO-3)."""
    if getattr(trainer, "is_fsdp_enabled", False):
        return True
    plugin = trainer.accelerator.state.deepspeed_plugin if getattr(trainer, "is_deepspeed_enabled", False) else None
    return plugin is not None and plugin.zero_stage == 3


def accelerator_sum(accelerator: Any):
    """An all-reduce (sum) of a few counts across processes; identity with one process."""

    def reduce(values):
        import torch

        if accelerator.num_processes == 1:
            return list(values)
        tensor = torch.tensor(list(values), dtype=torch.float64, device=accelerator.device)
        return accelerator.reduce(tensor, reduction="sum").tolist()

    return reduce


def build_trainer(job: TrainingJob, out_dir: Path, resume_from: str | None, abort_after: int | None):
    """The trainer with rewards, LoRA and our callbacks; also returns the callbacks that hold state."""
    from components.training.grouped_trainer import grouped_trainer

    settings, model_settings = job.grpo, job.model_settings
    device = resolve_device(model_settings)
    precision = run_precision(settings, model_settings, device)
    model, tokenizer = load_model(model_settings, device, padding_side="left", dtype=precision.weights)
    raw_rows = load_rows(job.dataset)
    languages = sorted({row["lang"] for row in dataset_rows(raw_rows, settings)})
    rewards = [build_reward(r.name, r.params, languages=languages) for r in settings.rewards]
    for reward in rewards:
        attach_judge(reward, out_dir / "judge-cache")
    columns = tuple(dict.fromkeys(c for r in settings.rewards for c in reward_columns(r.name, r.params)))
    rows = training_rows(raw_rows, settings, model_settings, tokenizer, keep=columns)
    config = grpo_config(settings, precision, out_dir / "trainer", device)
    apply_launch(config)
    trainer = grouped_trainer(settings, rows, raw_rows, out_dir, model=model, reward_funcs=rewards, args=config,
                              processing_class=tokenizer, peft_config=lora_config(settings.lora))  # LcRL hook
    if settings.lora is None and trainer.ref_model is not None:  # trl's reference is loaded from the base's path
        copy_policy_into_reference(trainer.model, trainer.ref_model)
    curricula = {r.__name__: r.curriculum for r in rewards if getattr(r, "curriculum", None) is not None}
    stateful: list[Any] = []
    if curricula:
        stateful.append(CurriculumCallback(curricula, reduce=accelerator_sum(trainer.accelerator),
                                           resume_from=resume_from))
    if settings.kl_reset.enabled:
        stateful.append(ReferenceResetCallback(settings.kl_reset.threshold, seed=settings.sampling.seed,
                                               resume_from=resume_from, reference=lambda: trainer.ref_model,
                                               sharded=sharded_weights(trainer)))
    for callback in stateful:
        trainer.add_callback(callback)
    sink = MetricsJsonlCallback(out_dir / "metrics.jsonl", providers=[c.metrics for c in stateful])
    trainer.add_callback(sink)
    trainer.add_callback(ProgressCallback("grpo"))
    if job.validation_dataset is not None:
        trainer.add_callback(validation_callback(job, tokenizer, sink, trainer))
    trainer.add_callback(MarkCompleteCallback(abort_after, job.run_key))
    return trainer, stateful


def validation_callback(job: TrainingJob, tokenizer: Any, sink: MetricsJsonlCallback, trainer: Any):
    """The validation curves of ``job.validation_dataset``, rendered like the training prompts, generated by the
    trainer's colocated vLLM when it has one (``components.training.validation``)."""
    from components.training.validation import ValidationCallback, limit_per_language

    settings = job.grpo.validation
    section = job.grpo.model_copy(update={"dataset_limit": None})  # the training set's limit is not the validation's
    rows = training_rows(load_rows(job.validation_dataset), section, job.model_settings, tokenizer)
    rows = limit_per_language(rows, settings.limit_per_language)
    if not rows:
        raise ValueError(f"{job.validation_dataset}: no validation rows")
    return ValidationCallback(rows, settings, tokenizer, write=sink.write, accelerator=trainer.accelerator,
                              trainer=trainer)


def train(job: TrainingJob, out_dir: str | Path, *, abort_after: int | None = None) -> dict:
    """Train (or resume) and write the adapter, metrics and ``result.json`` under ``out_dir``."""
    out_dir = Path(out_dir)
    checkpoint = resume_checkpoint(job.grpo, out_dir, job.run_key)
    resume_from = str(checkpoint) if checkpoint else None
    trainer, stateful = build_trainer(job, out_dir, resume_from, abort_after)
    output = trainer.train(resume_from_checkpoint=resume_from)
    full = job.grpo.lora is None
    adapter_dir, full_model_dir = (None, out_dir / "model") if full else (out_dir / "adapter", None)
    trainer.save_model(str(full_model_dir if full else adapter_dir))
    main = trainer.accelerator.is_main_process
    if main:
        for callback in stateful:
            callback.save(full_model_dir if full else adapter_dir)
    resets = next((c.resets for c in stateful if isinstance(c, ReferenceResetCallback)), 0)
    if resets and main and not full:
        full_model_dir = out_dir / "merged"  # the adapter merged into the reset reference: the full model
        trainer.model.merge_and_unload().save_pretrained(str(full_model_dir))
        trainer.processing_class.save_pretrained(str(full_model_dir))
    curricula = next((c for c in stateful if isinstance(c, CurriculumCallback)), None)
    result = {
        "adapter_dir": str(adapter_dir) if adapter_dir else None,
        "full_model_dir": str(full_model_dir) if full_model_dir else None,
        "weights": "full" if full else "adapter",
        "metrics_path": str(out_dir / "metrics.jsonl"), "trainer_dir": str(out_dir / "trainer"),
        "resumed_from": resume_from, **start_of(checkpoint), "run_key": job.run_key,
        "global_step": trainer.state.global_step,
        "max_steps": trainer.state.max_steps, "train_runtime": output.metrics.get("train_runtime"),
        "curricula": {n: c.state_dict() for n, c in curricula.curricula.items()} if curricula else {},
        "reference_resets": resets, "num_processes": trainer.accelerator.num_processes,
        "distributed_type": distributed_type(trainer.accelerator), **trainer_precision(trainer),
    }
    if main:
        (out_dir / "result.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    return result
