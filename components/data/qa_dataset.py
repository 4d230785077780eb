"""Search-augmented QA prompts (LcRL): a benchmark's items wrapped in the search instruction, for GRPO and evaluation.

LcRL's policy is prompted, as in Search-R1, to reason, to call a search engine
with ``<search>query</search>`` (results come back between ``<information>``
tags) as often as it needs, and to give a short final answer between
``<answer>`` tags *in the language of the question* (the released prompt names
that language; CLR measures it). The instruction is in English for every
language, as in the released code; the wording here is ours.

Rows: ``id`` (shared across languages: the coupling key), ``lang``, ``question``
(instruction + question, rendered by the GRPO stage with prompt style
``plain``), ``gold`` (first answer) and ``answers`` (all accepted answers).

>>> from components.records import BenchmarkItem
>>> row = qa_rows([BenchmarkItem("q1", "offline_qa", "fr", "Capitale du Japon ?", "Tokyo", answers=("Tokyo",))])[0]
>>> row["answers"], "French" in row["question"], row["question"].endswith("Question: Capitale du Japon ?")
(['Tokyo'], True, True)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from components.language import LANGUAGE_NAMES

if TYPE_CHECKING:
    from components.records import BenchmarkItem

SEARCH_INSTRUCTION = (
    "Answer the question below. Think inside <think> and </think> whenever you get new information. "
    "If some knowledge is missing, search for it by writing <search> your query </search>; the results will "
    "appear between <information> and </information>. You may search several times. When no further "
    "knowledge is needed, write only the short final answer between <answer> and </answer>, in {language}.\n"
    "Question: {question}"
)


def search_question(question: str, lang: str) -> str:
    """The user text of one search-QA prompt."""
    return SEARCH_INSTRUCTION.format(language=LANGUAGE_NAMES.get(lang, lang), question=question.strip())


def search_items(items: Iterable["BenchmarkItem"]) -> list["BenchmarkItem"]:
    """Items with the question of every QA item (a benchmark whose spec's kind is ``qa``) wrapped in the search instruction, as the
    evaluation prompts them (with prompt style ``plain``); other items unchanged.

    >>> from components.records import BenchmarkItem
    >>> [i.question[:6] for i in search_items([BenchmarkItem("q", "mkqa", "en", "Who?", "x"),
    ...                                        BenchmarkItem("m", "mgsm", "en", "How many?", "3")])]
    ['Answer', 'How ma']
    """
    from dataclasses import replace

    from components.data.benchmarks import benchmark_kind

    return [replace(item, question=search_question(item.question, item.lang))
            if benchmark_kind(item.benchmark) == "qa" else item for item in items]


def qa_rows(items: Iterable["BenchmarkItem"]) -> list[dict]:
    """GRPO dataset rows of QA items (see the module docstring)."""
    return [{"id": item.id, "lang": item.lang, "question": search_question(item.question, item.lang),
             "gold": item.gold, "answers": list(item.answers or (item.gold,))} for item in items]


def write_qa_dataset(items: Iterable["BenchmarkItem"], path: str | Path) -> dict:
    """Write the rows as JSONL; return counts per language."""
    rows = qa_rows(items)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["lang"]] = counts.get(row["lang"], 0) + 1
    return {"rows": len(rows), "languages": counts}
