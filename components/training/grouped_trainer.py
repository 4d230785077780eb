"""The GRPO stage's hook for LcRL: group layout, extra columns and the search loop, on one trainer class.

``components.training.grpo`` builds its trainer through ``grouped_trainer``:
the dataset rows get the columns LcRL's rewards read (``answers``: every
accepted answer when the dataset file has them; ``group``: the coupled group
or the prompt), the group layout follows ``grpo.coupling``
(``components.training.coupling``), and with ``grpo.lcrl`` set the rollouts run
the search tool loop (``components.training.search_rollouts``) over the retrieval
index named in ``grpo.lcrl.retrieval.index`` — built here under
``<out>/retrieval-index`` when the stage runs without one. Without coupling and
search the trainer samples and normalizes exactly as trl's ``GRPOTrainer``; coupled, it
adds per-language ``coupling/advantage/<lang>`` and ``coupling/reward/<lang>`` curves.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from components.training.coupling import group_ids, grouped_trainer_class, plan_layout

logger = logging.getLogger(__name__)
EXTRA_COLUMNS = ("answers",)


def prepare_rows(rows: list[dict], raw_rows: list[dict], settings: Any) -> list[dict]:
    """Training rows plus ``answers`` (from the dataset file), the coupling key and ``group``.

    ``rows`` are ``training_rows`` output, aligned with the first ``len(rows)`` raw rows.
    """
    key = settings.coupling.key
    out = []
    for row, raw in zip(rows, raw_rows):
        extra = {name: list(raw[name]) for name in EXTRA_COLUMNS if isinstance(raw.get(name), (list, tuple))}
        if key not in row and key in raw:
            extra[key] = str(raw[key])
        out.append({**row, **extra})
    if any("answers" in row for row in out):  # a column must exist on every row of a datasets.Dataset
        for row in out:
            row.setdefault("answers", [row["gold"]])
    for row, group in zip(out, group_ids(out, settings.coupling.mode, key)):
        row["group"] = group
    return out


def search_rollout(settings: Any, rows: list[dict], out_dir: Path, max_completion_length: int) -> Any:
    """The ``rollout_func`` of the LcRL search loop, with its retriever opened (or built) once."""
    from components.retrieval import build_index, load_retriever
    from components.training.search_rollouts import SearchRollout, prompt_key

    retrieval = settings.lcrl.retrieval
    index = Path(retrieval.index) if retrieval.index else out_dir / "retrieval-index"
    if not retrieval.index:
        build_index(retrieval, index)
    retriever = load_retriever(index, retrieval)
    lang_by_prompt = {prompt_key(row["prompt"]): row["lang"] for row in rows}
    return SearchRollout(settings.lcrl, retriever, lang_by_prompt, max_completion_length)


def grouped_trainer(settings: Any, rows: list[dict], raw_rows: list[dict], out_dir: str | Path, **kwargs: Any):
    """trl ``GRPOTrainer`` subclass laid out per ``settings.coupling``, with the search loop when ``lcrl`` is set.

    ``kwargs``: ``GRPOTrainer``'s (``model``, ``reward_funcs``, ``args``, ``processing_class``, ``peft_config``).
    """
    from datasets import Dataset

    args = kwargs["args"]
    rows = prepare_rows(rows, raw_rows, settings)
    coupling = settings.coupling
    layout = plan_layout(rows, coupling.mode, coupling.baseline, coupling.key, coupling.languages,
                         args.num_generations, args.generation_batch_size)
    if layout.dropped:
        logger.warning("coupling: %d group(s) left out (missing languages), e.g. %s", len(layout.dropped),
                       dict(list(layout.dropped.items())[:3]))
    rollout = None
    if settings.lcrl is not None:
        rollout = search_rollout(settings, rows, Path(out_dir), args.max_completion_length)
    return grouped_trainer_class()(train_dataset=Dataset.from_list(rows), layout=layout, rollout_func=rollout,
                                   log_languages=coupling.mode != "none", **kwargs)
