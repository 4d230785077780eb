"""A trainer's steps before it runs, computed by trl's and transformers' own code (``components.planning.optimizer_steps``).

Expected values are worked out by hand from how the trainers schedule a run:
one optimizer step is ``per_device_train_batch_size × processes ×
gradient_accumulation_steps`` completions; trl's sampler hands out whole
generation batches (``generation_batch_size / num_generations`` prompts, an
incomplete last one dropped); ``max_steps`` wins over epochs; the warm-up is
``ceil(ratio × steps)``. ``tests/integration/test_plan_steps_trl.py`` holds the
same numbers against real trainers.
"""

from __future__ import annotations

import pytest

from components.settings import GRPOStageSettings, SFTSettings
from components.planning.optimizer_steps import grpo_steps, launched_processes, sft_steps

GRPO_BASE = {"model": {"model": "m"}, "dataset": "d.jsonl"}

GRPO_CASES = [
    # id, trl keys + sampling.n, rows, processes, languages per coupled group,
    # expected (steps per epoch, total steps, generation batch, steps per generation, generations)
    ("pcs-as-it-was", {"per_device_train_batch_size": 16, "gradient_accumulation_steps": 64,
                       "generation_batch_size": 1024, "num_train_epochs": 2, "n": 8}, 5000, 1, 1,
     (39, 78, 1024, 64, 78)),  # 5,000 // 128 prompts = 39 generations per epoch, one per step
    ("pcs-800-steps", {"per_device_train_batch_size": 16, "gradient_accumulation_steps": 32,
                       "generation_batch_size": 512, "max_steps": 800, "n": 8}, 5000, 1, 1,
     (78, 800, 512, 32, 800)),
    ("eight-processes", {"per_device_train_batch_size": 16, "gradient_accumulation_steps": 4, "n": 8}, 5000, 8, 1,
     (78, 78, 512, 4, 78)),  # 16 x 8 x 4 = 512 completions = 64 prompts per step
    ("two-iterations", {"per_device_train_batch_size": 8, "gradient_accumulation_steps": 2, "num_iterations": 2,
                        "n": 4}, 10, 1, 1, (4, 4, 16, 2, 2)),  # 2 generations of 4 prompts, each trained twice
    ("fewer-rows-than-a-generation", {"per_device_train_batch_size": 8, "n": 4}, 1, 1, 1, (0, 0, 8, 1, 0)),
    ("coupled-pairs", {"per_device_train_batch_size": 4, "generation_batch_size": 8, "n": 2}, 8, 1, 2,
     (4, 4, 8, 2, 2)),  # 4 groups of 2 languages x 2 rollouts; 2 groups per generation
]


@pytest.mark.parametrize(("keys", "rows", "processes", "languages", "expected"),
                         [case[1:] for case in GRPO_CASES], ids=[case[0] for case in GRPO_CASES])
def test_grpo_steps_as_trl_schedules_them(keys, rows, processes, languages, expected):
    keys = dict(keys)
    section = GRPOStageSettings(**GRPO_BASE, sampling={"n": keys.pop("n"), "temperature": 1.0}, **keys)
    steps = grpo_steps(section, rows, processes, languages)
    assert (steps.steps_per_epoch, steps.total_steps, steps.generation_batch_size, steps.steps_per_generation,
            steps.generations) == expected


SFT_CASES = [
    # id, trl keys, rows, processes, expected (steps per epoch, total steps, warm-up steps)
    ("pcs-cold-start", {"per_device_train_batch_size": 4, "gradient_accumulation_steps": 8, "num_train_epochs": 2},
     30000, 1, (938, 1876, 188)),  # 7,500 batches / 8 = 937.5 -> 938; ceil(0.1 x 1,876) = 188
    ("two-processes-even-batches", {"per_device_train_batch_size": 4, "num_train_epochs": 3}, 10, 2, (2, 6, 1)),
    ("max-steps-and-warmup-steps", {"max_steps": 50, "warmup_steps": 5}, 7, 1, (4, 50, 5)),
]


@pytest.mark.parametrize(("keys", "rows", "processes", "expected"), [case[1:] for case in SFT_CASES],
                         ids=[case[0] for case in SFT_CASES])
def test_sft_steps_as_transformers_schedules_them(keys, rows, processes, expected):
    steps = sft_steps(SFTSettings(**keys), rows, processes)
    assert (steps.steps_per_epoch, steps.total_steps, steps.warmup_steps) == expected


def test_a_batch_trl_refuses_on_the_launched_processes_is_refused_with_trls_words():
    section = GRPOStageSettings(**GRPO_BASE, per_device_train_batch_size=16, generation_batch_size=512)
    assert grpo_steps(section, 100, 1).steps_per_generation == 32
    with pytest.raises(ValueError, match=r"generation_batch_size \(512\) must be divisible by the global batch"):
        grpo_steps(section, 100, 3)  # 16 x 3 processes does not divide 512


@pytest.mark.parametrize(("config", "processes"), [(None, 1), ("cpu", 1), ("cpu-2", 2), ("single-gpu", 1),
                                                   ("multi-gpu-zero2", 8), ("multi-gpu-zero3", 8), ("multi-gpu-fsdp", 8)])
def test_processes_come_from_the_accelerate_config(config, processes):
    assert launched_processes(config) == processes
