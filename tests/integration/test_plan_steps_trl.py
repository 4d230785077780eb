"""The plan's step counts are the ones trl's trainers compute when they are built (tiny model, no training).

For each case the real ``GRPOTrainer`` / ``SFTTrainer`` is built on the tiny
from-config model with the section's trl config, its train loader is made
(``get_train_dataloader``: trl's sampler, the loader accelerate prepared) and
transformers' ``set_initial_training_values`` gives the steps it would run;
``components.planning.steps`` must say the same before any trainer exists. The
expected numbers are also written by hand (one process).
"""

from __future__ import annotations

import pytest

from components.planning.steps import grpo_steps, sft_steps
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
