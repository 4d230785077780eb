"""The GRPO dataset as trl reads it: ``prompt``, ``gold``, ``lang``, ``id`` per row.

The dataset (JSONL or parquet) holds ``gold`` and ``lang`` (or the section's
``dataset_lang``) and either a ready ``prompt`` — a string as the
rejection-sampling stage writes it, or chat messages — or a question (the
section's ``question_column``) that ``components.data.prompts`` renders with the
stage's prompt style and, for chat models, the tokenizer's chat template with
the model's thinking switch. Column names and a row limit come from the section.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from components.settings import GRPOStageSettings, ModelSettings


def load_rows(path: str | Path) -> list[dict]:
    """Rows of a JSONL or parquet file."""
    path = Path(path)
    if path.suffix == ".parquet":
        import pandas as pd

        return pd.read_parquet(path).to_dict("records")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def dataset_rows(rows: list[dict], settings: GRPOStageSettings) -> list[dict]:
    """``id``, ``lang``, ``gold`` and ``prompt`` or ``question`` per row, after the column mapping and limit.

    >>> s = GRPOStageSettings(question_column="m_query", gold_column="response", dataset_lang="fr",
    ...                       dataset="x.jsonl", model={"model": "m"})
    >>> dataset_rows([{"m_query": "Combien ?", "response": "8.0"}], s)
    [{'id': '0', 'lang': 'fr', 'gold': '8.0', 'question': 'Combien ?', 'prompt': None}]
    """
    out = []
    for index, row in enumerate(rows[: settings.dataset_limit]):
        lang = row.get("lang") if row.get("lang") is not None else settings.dataset_lang
        if lang is None:
            raise ValueError(f"dataset row {index} has no 'lang' (set grpo.dataset_lang for a one-language file)")
        if row.get(settings.gold_column) is None:
            raise ValueError(f"dataset row {index} has no {settings.gold_column!r} (grpo.gold_column)")
        out.append({"id": str(row.get("id", index)), "lang": str(lang), "gold": str(row[settings.gold_column]),
                    "question": row.get(settings.question_column), "prompt": row.get("prompt")})
    return out


def training_rows(rows: list[dict], settings: GRPOStageSettings, model: ModelSettings, tokenizer: Any) -> list[dict]:
    """Rows with the ``prompt`` trl reads: the given one, else the question rendered by ``components.data.prompts``."""
    from components.data.prompts import build_prompts
    from components.records import BenchmarkItem

    rows = dataset_rows(rows, settings)
    todo = [row for row in rows if row["prompt"] is None]
    items = [BenchmarkItem(row["id"], "grpo", row["lang"], str(row["question"]), row["gold"]) for row in todo]
    for row, prompt in zip(todo, build_prompts(items, settings.prompt, tokenizer=tokenizer, chat=model.chat,
                                               thinking=model.thinking)):
        row["prompt"] = prompt
    return [{"prompt": r["prompt"] if isinstance(r["prompt"], str) else list(r["prompt"]), "gold": r["gold"],
             "lang": r["lang"], "id": r["id"]} for r in rows]
