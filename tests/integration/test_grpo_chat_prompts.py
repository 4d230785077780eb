"""What trl's GRPOTrainer receives: the prompt SFT trained on, templated with the thinking switch.

Real trainers on the tiny model (Qwen3-style chat template): the prompt token ids
trl generates from (``GRPOTrainer._tokenize_prompts``, the call its generation
path makes) equal the prompt part of the SFT example built from the same user
text, and equal the tokenizer's own chat template with ``enable_thinking``.
"""

from __future__ import annotations

import json

import pytest

QUESTION = "Janet a 16 œufs et en vend 3. Combien en reste-t-il ?"


@pytest.fixture(scope="module")
def trainers(tiny_model_dir, tmp_path_factory):
    from components.data.datasets import write_table
    from components.data.prompts import user_text
    from components.records import BenchmarkItem
    from components.settings import GRPOStageSettings, SFTSettings
    from components.training import grpo, sft
    from components.training.runner import TrainingJob

    root = tmp_path_factory.mktemp("chat-prompts")
    user = user_text(BenchmarkItem("0", "data", "fr", QUESTION, "13"), "instruction")
    write_table([{"id": "0", "lang": "fr", "question": QUESTION, "gold": "13", "prompt": user,
                  "completion": "<think>\n16 - 3 = 13\n</think>\n\n\\boxed{13}"}], root / "sft.parquet", "sft")
    (root / "rl.jsonl").write_text(json.dumps({"id": "0", "lang": "fr", "question": QUESTION, "gold": "13",
                                               "prompt": user}) + "\n", encoding="utf-8")
    model = {"model": str(tiny_model_dir), "device": "cpu", "dtype": "float32", "chat": True, "thinking": True}
    sft_job = TrainingJob(stage="sft", sft=SFTSettings(model=model, max_length=256), model=str(tiny_model_dir),
                          dataset=str(root / "sft.parquet"))
    grpo_section = GRPOStageSettings(model=model, dataset=str(root / "rl.jsonl"), per_device_train_batch_size=2,
                                     sampling={"n": 2, "temperature": 1.0, "max_new_tokens": 4}, max_steps=1)
    grpo_job = TrainingJob(stage="grpo", grpo=grpo_section, model=str(tiny_model_dir), dataset=str(root / "rl.jsonl"))
    sft_trainer, _ = sft.build_trainer(sft_job, root / "sft")
    grpo_trainer, _ = grpo.build_trainer(grpo_job, root / "grpo", None, None)
    return {"sft": sft_trainer, "grpo": grpo_trainer, "user": user}


def test_grpo_generates_from_the_sft_prompt_with_the_thinking_switch(trainers):
    grpo_trainer = trainers["grpo"]
    prompt = grpo_trainer.train_dataset[0]["prompt"]
    assert isinstance(prompt, str) and prompt.endswith("<|im_start|>assistant\n")  # thinking on: left open
    [ids], _, _ = grpo_trainer._tokenize_prompts([prompt])
    tokenizer = grpo_trainer.processing_class
    expected = tokenizer.apply_chat_template([{"role": "user", "content": trainers["user"]}], tokenize=True,
                                             add_generation_prompt=True, enable_thinking=True, return_dict=True)
    assert list(ids) == list(expected["input_ids"])
    example = trainers["sft"].train_dataset[0]
    prompt_length = next(i for i, label in enumerate(example["labels"]) if label != -100)  # loss starts here
    assert list(ids) == list(example["input_ids"][:prompt_length])  # exactly the prompt SFT trained on
