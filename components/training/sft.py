"""LoRA SFT on the kept teacher triplets (AdaMame §3.2, appendix B.2), run by the training entry point.

- trl ``SFTTrainer`` + peft LoRA (AdaMame: r=8, alpha=16, all linear modules, lr
  2e-4, cosine, warm-up ratio 0.1; transformers 5 spells the ratio
  ``warmup_steps=<float in [0,1)>``), or every weight with ``lora: null`` (AdaMame
  table 5's full SFT): the full model is then saved to ``<out>/model``.
- Examples are prompt-completion pairs: the user text already carries the
  language-specific instruction (``prompt`` column). ``template="chat"``: the
  conversational form, rendered with the tokenizer's chat template by trl;
  ``"plain"``: ``prompt + "\\n\\n"`` then the completion (trl appends EOS). Loss
  is on the completion only (trl's default for prompt-completion data).
- ``SFTConfig`` is built from the section (``SFTSettings.trl_arguments``): its trl
  keys as given, and where and how the trainer runs: ``use_cpu=True`` when no
  accelerator is visible, ``bf16`` and the weights' dtype from
  ``components.training.precision`` (fp32 master weights for a full-parameter
  bf16 run); ``report_to=[]``: metrics go to ``<out>/metrics.jsonl`` through the
  shared sink. The launch's sharding takes effect on CPU processes as on GPUs
  (``components.training.distributed``); ``result.json`` records the distributed
  type the trainer used.
- Checkpoints every ``save_steps`` under ``<out>/trainer``; a restart resumes from
  the last complete one. The adapter goes to ``<out>/adapter``, the merged model
  (``merge``) to ``<out>/merged``, and ``<out>/result.json`` records steps, loss
  and where training resumed from.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from components.settings import SFTSettings
from components.training.callbacks import MetricsJsonlCallback
from components.training.distributed import apply_launch, distributed_type
from components.training.progress import ProgressCallback
from components.training.runner import (
    MarkCompleteCallback, TrainingJob, load_model, lora_config, resolve_device, resume_checkpoint, run_precision,
    start_of, trainer_runtime,
)  # fmt: skip
from components.training.precision import Precision, trainer_precision


def sft_examples(rows: list[dict[str, Any]], template: str) -> list[dict[str, Any]]:
    """trl prompt-completion examples from SFT rows (``prompt`` = user text, ``completion``).

    >>> sft_examples([{"prompt": "Q?", "completion": "<think>t</think> A"}], "plain")
    [{'prompt': 'Q?\\n\\n', 'completion': '<think>t</think> A'}]
    >>> sft_examples([{"prompt": "Q?", "completion": "C"}], "chat")[0]["completion"]
    [{'role': 'assistant', 'content': 'C'}]
    """
    if template == "chat":
        return [{"prompt": [{"role": "user", "content": r["prompt"]}],
                 "completion": [{"role": "assistant", "content": r["completion"]}]} for r in rows]  # fmt: skip
    if template == "plain":
        return [{"prompt": f"{r['prompt']}\n\n", "completion": r["completion"]} for r in rows]
    raise ValueError(f"unknown template {template!r} (known: chat, plain)")


def training_arguments(sft: SFTSettings, out_dir: Path, device: str, precision: Precision):
    """``SFTConfig`` from the section: its trl keys, the warm-up, and where and how the trainer runs."""
    from trl import SFTConfig

    return SFTConfig(**sft.trl_arguments(trainer_runtime(precision, device, out_dir / "trainer")))


def output_dirs(sft: SFTSettings, out_dir: Path) -> dict[str, str | None]:
    """Where the run writes: the trainer's checkpoints, the adapter, the adapter merged into the base (only
    with ``merge``); with ``lora: null`` no adapter and the trained model in ``model/``. Either full model is
    ``full_model_dir``; ``weights`` says which layout the run trained (``full`` or ``adapter``)."""
    if sft.lora is None:
        return {"trainer_dir": str(out_dir / "trainer"), "adapter_dir": None, "full_model_dir": str(out_dir / "model"),
                "weights": "full"}
    return {"trainer_dir": str(out_dir / "trainer"), "adapter_dir": str(out_dir / "adapter"),
            "full_model_dir": str(out_dir / "merged") if sft.merge else None, "weights": "adapter"}


def build_trainer(job: TrainingJob, out_dir: Path, abort_after: int | None = None):
    """trl's ``SFTTrainer`` on the job's rows, with LoRA and the shared callbacks; also returns the row count."""
    import pandas as pd
    from datasets import Dataset
    from trl import SFTTrainer

    sft = job.sft
    rows = pd.read_parquet(job.dataset).to_dict(orient="records")
    if not rows:
        raise ValueError(f"{job.dataset}: no training rows (every trace was rejected)")
    device = resolve_device(job.model_settings)
    precision = run_precision(sft, job.model_settings, device)
    model, tokenizer = load_model(job.model_settings, device, dtype=precision.weights)
    args = training_arguments(sft, out_dir, device, precision)
    apply_launch(args)
    trainer = SFTTrainer(model=model, args=args,
                         train_dataset=Dataset.from_list(sft_examples(rows, sft.template)),
                         processing_class=tokenizer, peft_config=lora_config(sft.lora),
                         callbacks=[MetricsJsonlCallback(out_dir / "metrics.jsonl"), ProgressCallback("sft"),
                                    MarkCompleteCallback(abort_after, job.run_key)])  # fmt: skip
    if len(trainer.train_dataset) == 0:
        raise ValueError(f"all {len(rows)} examples were dropped while tokenizing: every prompt is longer than "
                         f"max_length={trainer.args.max_length} tokens, so no completion token is left to learn; raise sft.max_length")
    return trainer, len(rows)


def train(job: TrainingJob, out_dir: Path, *, abort_after: int | None = None) -> dict[str, Any]:
    """Train (or resume), save the adapter (+ merged model), write and return ``result.json``."""
    trainer, examples = build_trainer(job, out_dir, abort_after)
    resume = resume_checkpoint(job.sft, out_dir, job.run_key)
    output = trainer.train(resume_from_checkpoint=str(resume) if resume else None)
    dirs = output_dirs(job.sft, out_dir)
    result = {"global_step": trainer.state.global_step, "train_loss": output.training_loss,
              "resumed_from": str(resume) if resume else None, **start_of(resume), "run_key": job.run_key,
              "examples": examples,
              "device": str(trainer.args.device), "num_processes": trainer.accelerator.num_processes,
              "distributed_type": distributed_type(trainer.accelerator), **trainer_precision(trainer), **dirs}
    if dirs["adapter_dir"] is None:  # full-parameter training: trainer.save_model gathers sharded weights
        trainer.save_model(dirs["full_model_dir"])
    if trainer.accelerator.is_main_process:
        if dirs["adapter_dir"] is not None:
            trainer.model.save_pretrained(dirs["adapter_dir"])
            trainer.processing_class.save_pretrained(dirs["adapter_dir"])
        if dirs["full_model_dir"] and dirs["adapter_dir"] is not None:
            trainer.model.merge_and_unload().save_pretrained(dirs["full_model_dir"])
            trainer.processing_class.save_pretrained(dirs["full_model_dir"])
        (out_dir / "result.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    return result
