"""Rollouts for the reward audit that runs before GRPO training (the ``rollouts`` phase of the entry point).

Section 9 of "Multilingual verifier bias in RLVR": audit the reward verifier on
a sample of the policy's own rollouts before optimizing with it. The rollouts
come from the rejection-sampling stage (``rollouts.parquet``, no gold column:
it is joined from the dataset by id), from a file, or from ``sample_rollouts``:
``audit.num_generations`` sampled completions (``model.generate`` with the
training temperature, top-p and length) for ``audit.sample_size`` seeded-random
prompts of the training set.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from components.training.grpo_data import load_rows, training_rows
from components.training.runner import TrainingJob, load_model, resolve_device


def sample_rollouts(job: TrainingJob, out_dir: str | Path) -> Path:
    """``audit.num_generations`` sampled completions for ``audit.sample_size`` seeded-random prompts."""
    import torch

    settings, model_settings, out_dir = job.grpo, job.model_settings, Path(out_dir)
    device = resolve_device(model_settings)
    model, tokenizer = load_model(model_settings, device, padding_side="left")
    model.to(device).eval()
    rows = training_rows(load_rows(job.dataset), settings, model_settings, tokenizer)
    rows = random.Random(settings.sampling.seed).sample(rows, min(settings.audit.sample_size, len(rows)))
    torch.manual_seed(settings.sampling.seed)
    records = []
    for row in rows:
        prompt = row["prompt"]
        if not isinstance(prompt, str):
            prompt = tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True,
                                                   enable_thinking=model_settings.thinking)
        inputs = tokenizer(prompt, return_tensors="pt", add_special_tokens=False).to(model.device)
        with torch.no_grad():
            out = model.generate(**inputs, do_sample=True, temperature=settings.sampling.temperature,
                                 top_p=settings.sampling.top_p, max_new_tokens=settings.sampling.max_new_tokens,
                                 num_return_sequences=settings.audit.num_generations,
                                 pad_token_id=tokenizer.pad_token_id)
        texts = tokenizer.batch_decode(out[:, inputs["input_ids"].shape[1]:], skip_special_tokens=True)
        records += [{"id": row["id"], "lang": row["lang"], "gold": row["gold"], "completion": text,
                     "sample_index": index} for index, text in enumerate(texts)]
    path = out_dir / "rollouts.jsonl"
    out_dir.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def audit_rows(rollouts: list[dict], dataset: list[dict], size: int, seed: int = 0) -> list[dict]:
    """A seeded sample of ``size`` rollouts as guard rows ``id, lang, gold, completion`` (gold joined by id and lang).

    >>> audit_rows([{"id": "a", "lang": "fr", "completion": "x"}, {"id": "z", "lang": "fr", "completion": "y"}],
    ...            [{"id": "a", "lang": "fr", "gold": "3"}], size=5)
    [{'id': 'a', 'lang': 'fr', 'gold': '3', 'completion': 'x'}]
    """
    golds = {(str(row["id"]), row["lang"]): str(row["gold"]) for row in dataset if row.get("gold") is not None}
    rows = []
    for row in rollouts:  # ids are shared across languages: a gold is joined by id and language
        gold = row.get("gold") if row.get("gold") is not None else golds.get((str(row.get("id")), row.get("lang")))
        if gold is not None and row.get("completion") is not None:
            rows.append({"id": str(row["id"]), "lang": row["lang"], "gold": str(gold),
                         "completion": row["completion"]})
    return random.Random(seed).sample(rows, size) if size < len(rows) else rows
