"""The plan's step counts are the ones trl's trainers compute when they are built (tiny model, no training).

For each case the real ``GRPOTrainer`` / ``SFTTrainer`` is built on the tiny
from-config model with the section's trl config, its train loader is made
(``get_train_dataloader``: trl's sampler, the loader accelerate prepared) and
transformers' ``set_initial_training_values`` gives the steps it would run;
``components.planning.optimizer_steps`` must say the same before any trainer exists. The
expected numbers are also written by hand (one process).

At two processes the trainers themselves are the oracle: this file, launched by
``accelerate launch`` with two CPU processes over gloo (the ``cpu-2`` config on a free
port), builds every case's trainer in each process and records the steps per epoch,
the total steps and the warm-up steps the scheduler receives
(``TrainingArguments.get_warmup_steps``); the plan at two processes must give the
same three numbers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from components.planning.optimizer_steps import grpo_steps, sft_steps
from components.settings import GRPOStageSettings, SFTSettings

GRPO_CASES = [  # trl keys + sampling.n, rows, hand-computed (steps per epoch, total steps)
    ({"per_device_train_batch_size": 4, "gradient_accumulation_steps": 2, "generation_batch_size": 16,
      "num_train_epochs": 3, "n": 4}, 10, (4, 12)),  # 2 generations of 4 prompts; 16 completions = 2 steps of 8
    ({"per_device_train_batch_size": 4, "gradient_accumulation_steps": 2, "num_iterations": 2, "max_steps": 5,
      "n": 2}, 9, (4, 5)),  # 2 generations of 4 prompts (one step of 8 completions each), each trained twice
]
RUNTIME = {"use_cpu": True, "bf16": False, "fp16": False, "report_to": []}  # as the job builds it on CPU


def rows(count: int) -> list[dict]:
    return [{"prompt": f"Question {i}?", "gold": "1", "lang": "en", "id": str(i)} for i in range(count)]


def zero_reward(prompts, completions, **kwargs):
    return [0.0] * len(completions)


def trainer_steps(trainer) -> tuple[int, int]:
    values = trainer.set_initial_training_values(trainer.args, trainer.get_train_dataloader())
    return int(values[1]), int(values[6])


@pytest.mark.parametrize(("keys", "count", "expected"), GRPO_CASES)
def test_grpo_plan_matches_the_built_trainer(keys, count, expected, tiny_model_dir, tmp_path):
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    keys = dict(keys)
    section = GRPOStageSettings(model={"model": str(tiny_model_dir)}, dataset="d.jsonl",
                                sampling={"n": keys.pop("n"), "temperature": 1.0, "max_new_tokens": 4}, **keys)
    planned = grpo_steps(section, count, 1)
    args = GRPOConfig(**section.trl_arguments({**RUNTIME, "output_dir": str(tmp_path)}))
    trainer = GRPOTrainer(model=AutoModelForCausalLM.from_pretrained(tiny_model_dir), reward_funcs=zero_reward,
                          args=args, train_dataset=Dataset.from_list(rows(count)),
                          processing_class=AutoTokenizer.from_pretrained(tiny_model_dir, padding_side="left"))
    assert trainer_steps(trainer) == (planned.steps_per_epoch, planned.total_steps) == expected


SFT_CASES = [({"per_device_train_batch_size": 2, "gradient_accumulation_steps": 3, "num_train_epochs": 2}, 11, (2, 4)),
             ({"per_device_train_batch_size": 4, "max_steps": 7}, 9, (3, 7))]


@pytest.mark.parametrize(("keys", "count", "expected"), SFT_CASES)
def test_sft_plan_matches_the_built_trainer(keys, count, expected, tiny_model_dir, tmp_path):
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    section = SFTSettings(**keys)
    planned = sft_steps(section, count, 1)
    args = SFTConfig(**section.trl_arguments({**RUNTIME, "output_dir": str(tmp_path)}))
    data = Dataset.from_list([{"prompt": f"Question {i}?", "completion": " 1"} for i in range(count)])
    trainer = SFTTrainer(model=AutoModelForCausalLM.from_pretrained(tiny_model_dir), args=args, train_dataset=data,
                         processing_class=AutoTokenizer.from_pretrained(tiny_model_dir))
    assert trainer_steps(trainer) == (planned.steps_per_epoch, planned.total_steps) == expected


# (trainer, keys, rows) at two processes, each with a warm-up share (and a schedule that warms up) so the warm-up
# steps depend on the total
WARM = {"lr_scheduler_type": "linear"}
TWO_PROCESS_CASES = [
    ("grpo", {**GRPO_CASES[0][0], **WARM, "warmup_ratio": 0.3}, 10),
    ("grpo", {**GRPO_CASES[1][0], **WARM, "warmup_ratio": 0.5}, 9),
    ("sft", {**SFT_CASES[0][0], **WARM, "warmup_ratio": 0.5}, 11),
    ("sft", {"per_device_train_batch_size": 2, "num_train_epochs": 3, **WARM, "warmup_ratio": 0.2}, 9),
]


def section_of(kind: str, keys: dict, model_dir: str):
    keys = dict(keys)
    if kind == "sft":
        return SFTSettings(**keys)
    return GRPOStageSettings(model={"model": model_dir}, dataset="d.jsonl",
                             sampling={"n": keys.pop("n"), "temperature": 1.0, "max_new_tokens": 4}, **keys)


def built_trainer(kind: str, section, count: int, model_dir: str, output_dir: str):
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer, SFTConfig, SFTTrainer

    model = AutoModelForCausalLM.from_pretrained(model_dir)
    runtime = {**RUNTIME, "output_dir": output_dir}
    if kind == "sft":
        data = Dataset.from_list([{"prompt": f"Question {i}?", "completion": " 1"} for i in range(count)])
        return SFTTrainer(model=model, args=SFTConfig(**section.trl_arguments(runtime)), train_dataset=data,
                          processing_class=AutoTokenizer.from_pretrained(model_dir))
    return GRPOTrainer(model=model, reward_funcs=zero_reward, args=GRPOConfig(**section.trl_arguments(runtime)),
                       train_dataset=Dataset.from_list(rows(count)),
                       processing_class=AutoTokenizer.from_pretrained(model_dir, padding_side="left"))


def launched_worker(model_dir: str, out: str) -> None:
    """In each of the launched processes: every case's trainer built, its steps and warm-up; rank 0 writes them."""
    import tempfile

    found = []
    for kind, keys, count in TWO_PROCESS_CASES:
        section = section_of(kind, keys, model_dir)
        trainer = built_trainer(kind, section, count, model_dir, tempfile.mkdtemp())
        per_epoch, total = trainer_steps(trainer)
        found.append({"world_size": trainer.args.world_size, "steps": [per_epoch, total],
                      "warmup": trainer.args.get_warmup_steps(total)})
    if trainer.accelerator.is_main_process:
        Path(out).write_text(json.dumps(found), encoding="utf-8")


@pytest.mark.slow
def test_plan_matches_the_trainers_built_by_two_processes(tiny_model_dir, tmp_path):
    from components.training.accelerate import ACCELERATE_CONFIGS
    from tests.e2e.conftest import free_port

    config = tmp_path / "cpu-2.yaml"
    config.write_text(ACCELERATE_CONFIGS["cpu-2"].read_text(encoding="utf-8").replace(
        "main_process_port: 29517", f"main_process_port: {free_port()}"), encoding="utf-8")
    repo = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(repo), os.environ.get("PYTHONPATH")])),
               OMP_NUM_THREADS="1")
    out = tmp_path / "built.json"
    done = subprocess.run([sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(config),
                           __file__, str(tiny_model_dir), str(out)], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-4000:]
    built = json.loads(out.read_text(encoding="utf-8"))
    for (kind, keys, count), trainer in zip(TWO_PROCESS_CASES, built, strict=True):
        section = section_of(kind, keys, str(tiny_model_dir))
        planned = (grpo_steps if kind == "grpo" else sft_steps)(section, count, 2)
        assert trainer["world_size"] == 2
        assert trainer == {"world_size": 2, "steps": [planned.steps_per_epoch, planned.total_steps],
                           "warmup": planned.warmup_steps}, (kind, keys, count)
    print("two processes: " + "; ".join(f"{kind} {count} rows: {t['steps'][0]}/epoch, {t['steps'][1]} steps, "
                                        f"warm-up {t['warmup']}" for (kind, _, count), t in zip(TWO_PROCESS_CASES, built)))


if __name__ == "__main__":  # each process of the launch builds its settings as the tests do
    from components.catalog import install

    install()
    launched_worker(sys.argv[1], sys.argv[2])
