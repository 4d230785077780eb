"""GRPO stage entry point: trl ``GRPOTrainer`` + peft LoRA with registry rewards and checkpointed curricula.

Runs in its own process (ARCHITECTURE.md habit 9)::

    accelerate launch -m components.training.grpo --settings job.json --out DIR [--phase rollouts]

``job.json`` holds a ``GRPOJob``: the stage settings (``GRPOStageSettings``) and
resolved paths of the base model, the SFT adapter (optional) and the dataset
(JSONL or parquet with ``gold``, ``lang`` — or ``dataset_lang`` — and either a
ready ``prompt``, a string as the rejection-sampling stage writes it or chat
messages, or a ``question`` that ``components.data.prompts`` renders with the
stage's prompt style and the tokenizer's chat template; column names and a row
limit come from the settings).

* ``--phase train`` (default): an SFT adapter is merged into the base weights
  first, then a fresh LoRA adapter is trained, so trl's PEFT reference (adapters
  disabled) is the SFT policy and a KL reset is "merge + fresh adapter".
  Resumes from the last ``checkpoint-N`` under ``DIR/trainer`` when
  ``resume`` is set. On CPU: ``use_cpu=True, bf16=False`` (trl 1.16 refuses
  otherwise); ``report_to=[]`` — metrics go to ``DIR/metrics.jsonl``
  (``MetricsJsonlCallback``) and the task logs them to MLflow. Writes
  ``DIR/adapter`` (final adapter, plus the curriculum/reset state),
  ``DIR/merged`` (full model, only when the reference was reset: the LoRA
  adapter alone then misses the merged updates) and ``DIR/result.json``.
* ``--phase rollouts``: samples ``audit.num_generations`` completions for
  ``audit.sample_size`` prompts from the policy, for the reward-audit guard the
  task runs before training; writes ``DIR/rollouts.jsonl``.

Only checkpoints marked complete (``checkpoint_complete.json``, written after
every other part) are resumed from. ``--abort-after-checkpoint N`` ends the
process abruptly (``os._exit``) right after checkpoint N is written.

>>> launch_command("python", "cpu.yaml", Path("job.json"), Path("out"))[1:4]
['-m', 'accelerate.commands.launch', '--config_file']
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from components.config import GRPOStageSettings
from components.rewards import build_reward
from components.training.callbacks import (
    CurriculumCallback,
    MetricsJsonlCallback,
    ReferenceResetCallback,
    _Callback,
    checkpoint_dir,
)


class GRPOJob(BaseModel):
    """What the task hands to the process: settings plus resolved input paths."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    settings: GRPOStageSettings
    model: str
    dataset: str
    adapter: str | None = None


def load_rows(path: str | Path) -> list[dict]:
    """Rows of a JSONL or parquet file."""
    path = Path(path)
    if path.suffix == ".parquet":
        import pandas as pd

        return pd.read_parquet(path).to_dict("records")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def dataset_rows(rows: list[dict], settings: GRPOStageSettings) -> list[dict]:
    """``id``, ``lang``, ``gold`` and ``prompt`` or ``question`` per row, after the column mapping and limit.

    >>> from components.config import GRPOStageSettings
    >>> s = GRPOStageSettings(question_column="m_query", gold_column="response", dataset_lang="fr")
    >>> dataset_rows([{"m_query": "Combien ?", "response": "8.0"}], s)
    [{'id': '0', 'lang': 'fr', 'gold': '8.0', 'question': 'Combien ?', 'prompt': None}]
    """
    out = []
    for index, row in enumerate(rows[: settings.dataset_limit]):
        lang = row.get("lang") if row.get("lang") is not None else settings.dataset_lang
        if lang is None:
            raise ValueError(f"dataset row {index} has no 'lang' (set grpo.dataset_lang for a one-language file)")
        out.append({"id": str(row.get("id", index)), "lang": str(lang), "gold": str(row[settings.gold_column]),
                    "question": row.get(settings.question_column), "prompt": row.get("prompt")})
    return out


def training_rows(rows: list[dict], settings: GRPOStageSettings, tokenizer: Any) -> list[dict]:
    """Rows with the ``prompt`` trl reads: the given one, else the question rendered by ``components.data.prompts``
    (style ``settings.prompt``; the chat template when the tokenizer has one, unless ``chat`` says otherwise)."""
    from components.data.prompts import build_prompts
    from components.records import BenchmarkItem

    chat = settings.chat if settings.chat is not None else bool(getattr(tokenizer, "chat_template", None))
    rows = dataset_rows(rows, settings)
    todo = [row for row in rows if row["prompt"] is None]
    items = [BenchmarkItem(row["id"], "grpo", row["lang"], str(row["question"]), row["gold"]) for row in todo]
    for row, prompt in zip(todo, build_prompts(items, settings.prompt, tokenizer=tokenizer, chat=chat,
                                               thinking=settings.thinking)):
        row["prompt"] = prompt
    return [{"prompt": r["prompt"] if isinstance(r["prompt"], str) else list(r["prompt"]), "gold": r["gold"],
             "lang": r["lang"], "id": r["id"]} for r in rows]


def resolve_device(settings: GRPOStageSettings) -> str:
    import torch

    if settings.device != "auto":
        return settings.device
    return "cuda" if torch.cuda.is_available() else "cpu"


def load_policy(job: GRPOJob, device: str) -> tuple[Any, Any]:
    """Base model (SFT adapter merged in) and tokenizer padded on the left."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    dtype_name = job.settings.dtype
    if dtype_name == "auto":
        dtype_name = "bfloat16" if device == "cuda" else "float32"
    model = AutoModelForCausalLM.from_pretrained(job.model, dtype=getattr(torch, dtype_name))
    if job.adapter:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, job.adapter).merge_and_unload()
    source = job.adapter if job.adapter and (Path(job.adapter) / "tokenizer_config.json").is_file() else job.model
    tokenizer = AutoTokenizer.from_pretrained(source, padding_side="left")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer


def grpo_config(settings: GRPOStageSettings, output_dir: Path, device: str, weights: list[float]) -> Any:
    """trl ``GRPOConfig`` from the stage settings (trl 1.16 field names)."""
    from trl import GRPOConfig

    bf16 = device == "cuda" and settings.dtype in ("auto", "bfloat16")
    return GRPOConfig(
        output_dir=str(output_dir), use_cpu=device == "cpu", bf16=bf16, fp16=False, report_to=[],
        logging_steps=settings.logging_steps, save_strategy="steps", save_steps=settings.save_steps,
        save_total_limit=settings.save_total_limit, max_steps=settings.max_steps,
        num_train_epochs=settings.num_train_epochs, learning_rate=settings.learning_rate,
        lr_scheduler_type=settings.lr_scheduler_type, warmup_steps=settings.warmup_ratio,
        per_device_train_batch_size=settings.per_device_train_batch_size,
        gradient_accumulation_steps=settings.gradient_accumulation_steps,
        generation_batch_size=settings.generation_batch_size, num_generations=settings.num_generations,
        max_completion_length=settings.max_completion_length, temperature=settings.temperature,
        top_p=settings.top_p, beta=settings.beta, epsilon=settings.epsilon,
        num_iterations=settings.num_iterations, loss_type=settings.loss_type,
        scale_rewards=settings.scale_rewards, reward_weights=weights,
        chat_template_kwargs={"enable_thinking": settings.thinking},
        use_vllm=settings.use_vllm, vllm_mode=settings.vllm_mode,
        vllm_gpu_memory_utilization=settings.vllm_gpu_memory_utilization,
        vllm_server_base_url=settings.vllm_server_base_url,
        gradient_checkpointing=settings.gradient_checkpointing, seed=settings.seed,
        disable_tqdm=True, log_completions=False,
    )


def accelerator_sum(accelerator: Any):
    """An all-reduce (sum) of a few counts across processes; identity with one process."""

    def reduce(values):
        import torch

        if accelerator.num_processes == 1:
            return list(values)
        tensor = torch.tensor(list(values), dtype=torch.float64, device=accelerator.device)
        return accelerator.reduce(tensor, reduction="sum").tolist()

    return reduce


COMPLETE_MARKER = "checkpoint_complete.json"


class _MarkComplete(_Callback):
    """Added last: marks a checkpoint whose every part (trainer, curriculum, resets) is on disk."""

    def __init__(self, abort_after: int | None = None) -> None:
        self.abort_after = abort_after

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.is_world_process_zero:
            (checkpoint_dir(args, state) / COMPLETE_MARKER).write_text(json.dumps({"step": state.global_step}))
        if self.abort_after is not None and state.global_step >= self.abort_after:
            os._exit(75)  # the crash of the resume test


def last_checkpoint(trainer_dir: Path) -> str | None:
    """Newest ``checkpoint-N`` that was completely written (a kill during a save leaves a partial one).

    >>> last_checkpoint(Path("/nonexistent")) is None
    True
    """
    done = [p for p in trainer_dir.glob("checkpoint-*") if (p / COMPLETE_MARKER).is_file()]
    return str(max(done, key=lambda p: int(p.name.split("-")[-1]))) if done else None


def build_trainer(job: GRPOJob, out_dir: Path, resume_from: str | None, abort_after: int | None):
    """The trainer with rewards, LoRA and our callbacks; also returns the callbacks that hold state."""
    from datasets import Dataset
    from peft import LoraConfig
    from trl import GRPOTrainer

    settings = job.settings
    device = resolve_device(settings)
    model, tokenizer = load_policy(job, device)
    rows = training_rows(load_rows(job.dataset), settings, tokenizer)
    languages = sorted({row["lang"] for row in rows})
    rewards = [build_reward(r.name, r.params, languages=languages) for r in settings.rewards]
    lora = LoraConfig(r=settings.lora.r, lora_alpha=settings.lora.alpha, lora_dropout=settings.lora.dropout,
                      target_modules=settings.lora.target_modules, task_type="CAUSAL_LM")
    config = grpo_config(settings, out_dir / "trainer", device, [r.weight for r in settings.rewards])
    trainer = GRPOTrainer(model=model, reward_funcs=rewards, args=config, train_dataset=Dataset.from_list(rows),
                          processing_class=tokenizer, peft_config=lora)
    curricula = {r.__name__: r.curriculum for r in rewards if getattr(r, "curriculum", None) is not None}
    stateful: list[Any] = []
    if curricula:
        stateful.append(CurriculumCallback(curricula, reduce=accelerator_sum(trainer.accelerator),
                                           resume_from=resume_from))
    if settings.kl_reset.enabled:
        stateful.append(ReferenceResetCallback(settings.kl_reset.threshold, seed=settings.seed,
                                               resume_from=resume_from))
    for callback in stateful:
        trainer.add_callback(callback)
    trainer.add_callback(MetricsJsonlCallback(out_dir / "metrics.jsonl", providers=[c.metrics for c in stateful]))
    trainer.add_callback(_MarkComplete(abort_after))
    return trainer, stateful


def train(job: GRPOJob, out_dir: str | Path, *, abort_after: int | None = None) -> dict:
    """Train (or resume) and write the adapter, metrics and ``result.json`` under ``out_dir``."""
    out_dir = Path(out_dir)
    resume_from = last_checkpoint(out_dir / "trainer") if job.settings.resume else None
    trainer, stateful = build_trainer(job, out_dir, resume_from, abort_after)
    output = trainer.train(resume_from_checkpoint=resume_from)
    adapter_dir, merged_dir = out_dir / "adapter", None
    trainer.save_model(str(adapter_dir))
    if trainer.accelerator.is_main_process:
        for callback in stateful:
            callback.save(adapter_dir)
    resets = next((c.resets for c in stateful if isinstance(c, ReferenceResetCallback)), 0)
    if resets and trainer.accelerator.is_main_process:
        merged_dir = out_dir / "merged"
        trainer.model.merge_and_unload().save_pretrained(str(merged_dir))
        trainer.processing_class.save_pretrained(str(merged_dir))
    curricula = next((c for c in stateful if isinstance(c, CurriculumCallback)), None)
    result = {
        "adapter_dir": str(adapter_dir), "merged_dir": str(merged_dir) if merged_dir else None,
        "metrics_path": str(out_dir / "metrics.jsonl"), "trainer_dir": str(out_dir / "trainer"),
        "resumed_from": resume_from, "global_step": trainer.state.global_step,
        "max_steps": trainer.state.max_steps, "train_runtime": output.metrics.get("train_runtime"),
        "curricula": {n: c.state_dict() for n, c in curricula.curricula.items()} if curricula else {},
        "reference_resets": resets, "num_processes": trainer.accelerator.num_processes,
    }
    if trainer.accelerator.is_main_process:
        (out_dir / "result.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    return result


def launch_command(python: str, accelerate_config: str | Path | None, job_path: Path, out_dir: Path,
                   phase: str = "train", cpu_threads: int | None = None) -> list[str]:
    """``accelerate launch -m components.training.grpo …`` (plain ``python -m`` without a config).

    >>> launch_command("py", None, Path("j.json"), Path("o"))[:3]
    ['py', '-m', 'components.training.grpo']
    >>> launch_command("py", "cpu.yaml", Path("j.json"), Path("o"), cpu_threads=1)[3:7]
    ['--config_file', 'cpu.yaml', '--num_cpu_threads_per_process', '1']
    """
    tail = ["-m", "components.training.grpo", "--settings", str(job_path), "--out", str(out_dir), "--phase", phase]
    if accelerate_config is None:
        return [python, *tail]
    threads = ["--num_cpu_threads_per_process", str(cpu_threads)] if cpu_threads else []
    return [python, "-m", "accelerate.commands.launch", "--config_file", str(accelerate_config), *threads, *tail]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="components.training.grpo", description=__doc__.split("\n")[0])
    parser.add_argument("--settings", required=True, help="GRPOJob JSON")
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--phase", choices=["train", "rollouts"], default="train")
    parser.add_argument("--abort-after-checkpoint", type=int, default=None)
    args = parser.parse_args(argv)
    job = GRPOJob.model_validate_json(Path(args.settings).read_text(encoding="utf-8"))
    if job.settings.cpu_threads:  # oversubscribed CPUs: torch's spin-waiting threads cost 10x here
        import torch

        torch.set_num_threads(job.settings.cpu_threads)
    if args.phase == "rollouts":
        from components.training.grpo_rollouts import sample_rollouts

        sample_rollouts(job, args.out)
    else:
        train(job, args.out, abort_after=args.abort_after_checkpoint)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
