"""The columns a reward reads reach trl's dataset (M-Thinker's English question and reference reasoning)."""

from __future__ import annotations

import json


def test_mthinker_columns_reach_the_trainer_dataset(tiny_model_dir, tmp_path):
    from components.settings import GRPOStageSettings
    from components.training import grpo
    from components.training.runner import TrainingJob

    rows = [{"id": "0", "lang": "fr", "question": "Combien ?", "gold": "13", "en_question": "How many?",
             "en_reference": "16 - 3 = 13", "unused": "x"}]
    data = tmp_path / "rl.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    section = GRPOStageSettings(model={"model": str(tiny_model_dir), "device": "cpu", "dtype": "float32"},
                                dataset=str(data), rewards=[{"name": "mthinker"}], per_device_train_batch_size=2,
                                sampling={"n": 2, "temperature": 1.0, "max_new_tokens": 4}, max_steps=1)
    job = TrainingJob(stage="grpo", grpo=section, model=str(tiny_model_dir), dataset=str(data))
    trainer, _ = grpo.build_trainer(job, tmp_path / "out", None, None)
    example = trainer.train_dataset[0]
    assert (example["en_question"], example["en_reference"]) == ("How many?", "16 - 3 = 13")
    assert "unused" not in example  # only what a reward reads is handed on
