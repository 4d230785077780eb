"""LoRA SFT on the kept teacher triplets (AdaMame §3.2, appendix B.2): its own process.

Run as ``accelerate launch --config_file profiles/accelerate/<name>.yaml -m
components.training.sft --settings settings.json --out DIR`` (ARCHITECTURE.md,
habit 9): memory is freed when the stage ends and the same command scales to
several GPUs through the accelerate/DeepSpeed configs. ``settings.json`` holds
``{"sft": SFTSettings, "model_path": str, "train_path": str}``.

- trl ``SFTTrainer`` + peft ``LoraConfig`` (AdaMame: r=8, alpha=16, all linear
  modules, lr 2e-4, cosine, warm-up ratio 0.1; transformers 5 spells the ratio
  ``warmup_steps=<float in [0,1)>``).
- Examples are prompt-completion pairs: the user text already carries the
  language-specific instruction (``prompt`` column). ``template="chat"``: the
  conversational form, rendered with the tokenizer's chat template by trl;
  ``"plain"``: ``prompt + "\\n\\n"`` then the completion (trl appends EOS). Loss
  is on the completion only (trl's default for prompt-completion data).
- ``use_cpu=True`` when no accelerator is visible (trl refuses otherwise);
  ``report_to=[]`` plus :func:`metrics_callback`, which appends every log
  (loss, learning rate, grad norm) with its step to ``DIR/metrics.jsonl`` for
  the task to send to MLflow.
- Checkpoints every ``save_steps`` under ``DIR/checkpoints``; a restart resumes
  from the last *complete* one (``trainer_state.json`` written, so a process
  killed mid-save does not poison the resume). The adapter goes to
  ``DIR/adapter``, the merged model (optional) to ``DIR/merged``, and
  ``DIR/result.json`` records steps, loss and where training resumed from.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")


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


def last_checkpoint(directory: Path) -> Path | None:
    """The highest ``checkpoint-N`` under ``directory`` whose ``trainer_state.json`` exists."""
    if not directory.is_dir():
        return None
    complete = [
        (int(m.group(1)), path)
        for path in directory.iterdir()
        if (m := CHECKPOINT.match(path.name)) and (path / "trainer_state.json").is_file()
    ]
    return max(complete)[1] if complete else None


def metrics_callback(path: Path):
    """A ``TrainerCallback`` appending ``{"step", "loss", "learning_rate", ...}`` lines to ``path``."""
    from transformers import TrainerCallback

    class MetricsJsonl(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            if not state.is_world_process_zero or not logs:
                return
            values = {k: float(v) for k, v in logs.items() if isinstance(v, (int, float))}
            with path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps({"step": state.global_step, **values}) + "\n")

    return MetricsJsonl()


def training_arguments(sft: Any, out_dir: Path, use_cpu: bool):
    """``SFTConfig`` from the profile section (explicit keywords, nothing passed through)."""
    from trl import SFTConfig

    return SFTConfig(
        output_dir=str(out_dir / "checkpoints"), learning_rate=sft.learning_rate, lr_scheduler_type=sft.lr_scheduler,
        warmup_steps=sft.warmup_ratio, num_train_epochs=sft.epochs, max_steps=sft.max_steps,
        per_device_train_batch_size=sft.per_device_batch_size,
        gradient_accumulation_steps=sft.gradient_accumulation_steps,
        gradient_checkpointing=sft.gradient_checkpointing, bf16=sft.bf16, max_length=sft.max_length,
        logging_steps=sft.logging_steps, save_strategy="steps", save_steps=sft.save_steps,
        save_total_limit=sft.save_total_limit, seed=sft.seed, report_to=[], use_cpu=use_cpu,
        dataloader_num_workers=0, disable_tqdm=True,
    )  # fmt: skip


def lora_config(sft: Any):
    """peft ``LoraConfig`` for a causal LM."""
    from peft import LoraConfig

    return LoraConfig(r=sft.lora_r, lora_alpha=sft.lora_alpha, lora_dropout=sft.lora_dropout,
                      target_modules=sft.target_modules, task_type="CAUSAL_LM")  # fmt: skip


def _load(model_path: str, dtype: str):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_path)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    torch_dtype = "auto" if dtype == "auto" else getattr(torch, dtype)
    return AutoModelForCausalLM.from_pretrained(model_path, dtype=torch_dtype), tokenizer


def train(config: dict[str, Any], out_dir: Path) -> dict[str, Any]:
    """Train (or resume), save the adapter (+ merged model), write and return ``result.json``."""
    import pandas as pd
    import torch
    from datasets import Dataset
    from trl import SFTTrainer

    from components.config import SFTSettings

    sft = SFTSettings.model_validate(config["sft"])
    rows = pd.read_parquet(config["train_path"]).to_dict(orient="records")
    if not rows:
        raise ValueError(f"{config['train_path']}: no training rows (every trace was rejected)")
    use_cpu = sft.model.device == "cpu" or not torch.cuda.is_available()
    model, tokenizer = _load(config["model_path"], sft.model.dtype)
    args = training_arguments(sft, out_dir, use_cpu)
    trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list(sft_examples(rows, sft.template)),
                         processing_class=tokenizer, peft_config=lora_config(sft),
                         callbacks=[metrics_callback(out_dir / "metrics.jsonl")])  # fmt: skip
    if len(trainer.train_dataset) == 0:
        raise ValueError(f"all {len(rows)} examples were dropped while tokenizing: every prompt is longer than "
                         f"max_length={sft.max_length} tokens, so no completion token is left to learn; raise sft.max_length")
    resume = last_checkpoint(out_dir / "checkpoints")
    output = trainer.train(resume_from_checkpoint=str(resume) if resume else None)
    result = {"global_step": trainer.state.global_step, "train_loss": output.training_loss,
              "resumed_from": resume.name if resume else None, "examples": len(rows), "use_cpu": use_cpu}  # fmt: skip
    if trainer.accelerator.is_main_process:
        trainer.model.save_pretrained(out_dir / "adapter")
        tokenizer.save_pretrained(out_dir / "adapter")
        if sft.merge:
            merged = trainer.model.merge_and_unload()
            merged.save_pretrained(out_dir / "merged")
            tokenizer.save_pretrained(out_dir / "merged")
        (out_dir / "result.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    return result


def policy_model(model: Any, template: str, merged_dir: str) -> Any:
    """``ModelSettings`` that sample the merged SFT model as the rejection-sampling policy.

    >>> from components.config import ModelSettings
    >>> m = policy_model(ModelSettings(backend="vllm", model="base"), "chat", "/a/merged")
    >>> (m.backend, m.model, m.chat, m.thinking)
    ('vllm', '/a/merged', True, True)
    """
    chat = template == "chat"
    return model.model_copy(update={"model": merged_dir, "gguf_file": None, "chat": chat, "thinking": chat})


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """Per-step logs of ``metrics.jsonl``; after a resume the re-logged steps replace the old ones."""
    by_step: dict[int, dict[str, Any]] = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:  # a line torn by a killed process: its step is logged again on resume
                continue
            by_step.setdefault(int(row["step"]), {}).update(row)
    return [by_step[step] for step in sorted(by_step)]


def accelerate_config_path(name: str) -> Path:
    """A shipped config (``profiles/accelerate/<name>.yaml``) or a path to one.

    >>> accelerate_config_path("cpu").name
    'cpu.yaml'
    """
    candidate = Path(name).expanduser()
    if candidate.suffix in (".yaml", ".yml"):
        return candidate
    shipped = Path(__file__).resolve().parents[2] / "profiles" / "accelerate" / f"{name}.yaml"
    if not shipped.is_file():
        known = sorted(p.stem for p in shipped.parent.glob("*.yaml"))
        raise ValueError(f"unknown accelerate config {name!r} (shipped: {', '.join(known)})")
    return shipped


def launch_command(python: str, accelerate_config: Path, settings_path: Path, out_dir: Path) -> list[str]:
    """``accelerate launch`` of this module (same interpreter, so the same environment)."""
    return [python, "-m", "accelerate.commands.launch", "--config_file", str(accelerate_config),
            "-m", "components.training.sft", "--settings", str(settings_path), "--out", str(out_dir)]  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="LoRA SFT (polyreason, issue 5)")
    parser.add_argument("--settings", required=True, type=Path, help="settings.json written by tasks/sft.py")
    parser.add_argument("--out", required=True, type=Path, help="output directory")
    ns = parser.parse_args(argv)
    ns.out.mkdir(parents=True, exist_ok=True)
    train(json.loads(ns.settings.read_text(encoding="utf-8")), ns.out)


if __name__ == "__main__":
    main()
