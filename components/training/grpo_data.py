"""The GRPO dataset as trl reads it: ``prompt``, ``gold``, ``lang``, ``id`` per row.

The dataset (JSONL or parquet) holds ``gold`` and ``lang`` (or the section's
``dataset_lang``) and a question (the section's ``question_column``) or a ready
``prompt``: the user's turn as a string (what the data stage stores) or chat
messages. Every row is rendered by ``components.data.prompts.render_turns``, the
renderer evaluation and the data stage use: the question becomes the user's turn
with the stage's prompt style and instruction placement, and chat models get the
tokenizer's chat template with the model's thinking switch — the prompt SFT
trained on. trl receives a rendered string, which it tokenizes as it is (it
applies a chat template only to message lists, and then without our prefix
control); a BOS the template wrote is dropped when the tokenizer adds its own. A row with a question is built from it; a stored ``prompt`` is used
only for rows without one. Column names and a row limit come from the section.
With ``max_prompt_tokens`` a rendered prompt longer than that many tokens (as trl
tokenizes it) is left out and counted, as verl's ``data.max_prompt_length`` with
``filter_overlong_prompts`` does (AdaMame §4: "max prompt length to 512"); trl 1.x
has no such key, and cutting a math question would change its answer.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from components.settings import GRPOStageSettings, ModelSettings

LOGGER = logging.getLogger(__name__)


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
        row = {key: None if _missing(value) else value for key, value in row.items()}
        lang = row.get("lang") if row.get("lang") is not None else settings.dataset_lang
        if lang is None:
            raise ValueError(f"dataset row {index} has no 'lang' (set grpo.dataset_lang for a one-language file)")
        if row.get(settings.gold_column) is None:
            raise ValueError(f"dataset row {index} has no {settings.gold_column!r} (grpo.gold_column)")
        prompt = row.get("prompt")
        if row.get(settings.question_column) is None and prompt is None:
            raise ValueError(f"dataset row {index} has neither {settings.question_column!r} (grpo.question_column) "
                             "nor 'prompt'")
        out.append({"id": str(row.get("id", index)), "lang": str(lang), "gold": str(row[settings.gold_column]),
                    "question": row.get(settings.question_column), "prompt": prompt})
    return out


def _missing(value: Any) -> bool:
    """``None`` or a float NaN (how pandas reads a missing cell back from parquet).

    >>> _missing(float("nan")), _missing(None), _missing("x"), _missing([1])
    (True, True, False, False)
    """
    return value is None or (isinstance(value, float) and value != value)


def training_rows(rows: list[dict], settings: GRPOStageSettings, model: ModelSettings, tokenizer: Any,
                  keep: tuple[str, ...] = ()) -> list[dict]:
    """Rows with the rendered ``prompt`` trl reads (see the module docstring), plus the ``keep`` columns.

    ``keep`` names extra dataset columns a reward reads (trl hands every column to the rewards).
    """
    from components.data.prompts import render_turns, user_text
    from components.records import BenchmarkItem

    out, too_long, limit = [], 0, settings.max_prompt_tokens
    for raw, row in zip(rows, dataset_rows(rows, settings)):
        if row["question"] is not None:
            item = BenchmarkItem(row["id"], "grpo", row["lang"], str(row["question"]), row["gold"])
            turns = user_text(item, settings.prompt.style, settings.prompt.instruction)
        else:
            turns = row["prompt"] if isinstance(row["prompt"], str) else list(row["prompt"])
        prompt = without_template_bos(render_turns(turns, row["lang"], settings.prompt, tokenizer=tokenizer,
                                                   chat=model.chat, thinking=model.thinking), tokenizer)
        if limit is not None and len(tokenizer(prompt)["input_ids"]) > limit:
            too_long += 1
            continue
        out.append({"prompt": prompt, "gold": row["gold"], "lang": row["lang"], "id": row["id"],
                    **{column: raw.get(column) for column in keep}})
    if too_long:
        if not out:
            raise ValueError(f"every one of the {too_long} prompts is longer than grpo.max_prompt_tokens={limit} tokens")
        LOGGER.warning("%d of %d prompts are longer than grpo.max_prompt_tokens=%d tokens and are left out",
                       too_long, too_long + len(out), limit)
    return out


def without_template_bos(prompt: str, tokenizer: Any) -> str:
    """``prompt`` without a leading BOS that the tokenizer adds again when trl tokenizes it.

    Templates such as Gemma's write ``<bos>`` themselves, and trl tokenizes a
    string prompt with the tokenizer's special tokens, which add one more.

    >>> class Tok:
    ...     bos_token, bos_token_id = "<bos>", 2
    ...     def __call__(self, text): return {"input_ids": [2] + [7] * len(text)}
    >>> without_template_bos("<bos><start_of_turn>user", Tok()), without_template_bos("Q", Tok())
    ('<start_of_turn>user', 'Q')
    """
    bos = getattr(tokenizer, "bos_token", None)
    if not bos or not prompt.startswith(bos) or tokenizer is None:
        return prompt
    adds_bos = list(tokenizer("x")["input_ids"][:1]) == [tokenizer.bos_token_id]
    return prompt[len(bos):] if adds_bos else prompt
