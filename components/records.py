"""Row shapes that cross stages: the benchmark item and the generation row.

A ``BenchmarkItem`` is one problem in one language. Its ``id`` is the same for
the same problem in every language (MGSM row *i* is the same problem in all
eleven files; MMATH shares ``gid``), so per-language results can be joined.
Generation rows are plain dicts so they go to JSONL/parquet unchanged (the
lm-eval "samples" file idea): one row per (item, sample).

>>> item = BenchmarkItem("mgsm-0000", "mgsm", "fr", "Combien ?", "18")
>>> rows = generation_rows([item], ["P"], [[("A", 3), ("B", 4)]])
>>> [(r["id"], r["sample_index"], r["completion"], r["num_tokens"]) for r in rows]
[('mgsm-0000', 0, 'A', 3), ('mgsm-0000', 1, 'B', 4)]
"""

from __future__ import annotations

import string
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Sequence

OPTION_LETTERS = string.ascii_uppercase[:10]  # MMLU-Pro(X): up to ten options, A..J


@dataclass(frozen=True)
class BenchmarkItem:
    """One benchmark problem in one language.

    ``source``: the sub-benchmark (MMATH: MATH500/AIME2024/AIME2025/CNMO).
    ``options``: multiple-choice options in letter order (MMLU-ProX); ``gold`` is then a letter.
    ``answers``: every accepted answer string of an open-domain QA item (MKQA, XOR-TyDi); ``gold`` is the first.
    """

    id: str
    benchmark: str
    lang: str
    question: str
    gold: str
    source: str | None = None
    options: tuple[str, ...] | None = None
    answers: tuple[str, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (options as a list).

        >>> BenchmarkItem("1", "b", "en", "q", "A", options=("x", "y")).to_dict()["options"]
        ['x', 'y']
        """
        data = asdict(self)
        if self.options is not None:
            data["options"] = list(self.options)
        if self.answers is None:
            del data["answers"]  # rows of the math benchmarks keep their shape (and cache keys)
        else:
            data["answers"] = list(self.answers)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "BenchmarkItem":
        """Inverse of ``to_dict``; unknown keys are errors.

        >>> BenchmarkItem.from_dict({"id": "1", "benchmark": "b", "lang": "en", "question": "q", "gold": "2"}).gold
        '2'
        """
        fields = {**data, **{name: tuple(data[name]) for name in ("options", "answers") if data.get(name) is not None}}
        return cls(**fields)


def option_letter(index: int) -> str:
    """Letter of the ``index``-th option (0 -> ``A``).

    >>> option_letter(3)
    'D'
    """
    if not 0 <= index < len(OPTION_LETTERS):
        raise ValueError(f"option index {index} outside 0..{len(OPTION_LETTERS) - 1}")
    return OPTION_LETTERS[index]


def generation_rows(
    items: Sequence[BenchmarkItem],
    prompts: Sequence[str],
    completions: Sequence[Sequence[Any]],
) -> list[dict[str, Any]]:
    """Flatten items x samples into generation rows (one per sample).

    ``completions[i]`` holds the samples for ``items[i]``: ``Completion`` objects
    or ``(text, num_tokens)`` pairs. Keys: id, benchmark, lang, gold, prompt,
    completion, sample_index, num_tokens, and source when the item has one.
    """
    if not len(items) == len(prompts) == len(completions):
        raise ValueError(f"lengths differ: {len(items)} items, {len(prompts)} prompts, {len(completions)} completions")
    rows: list[dict[str, Any]] = []
    for item, prompt, samples in zip(items, prompts, completions):
        for index, sample in enumerate(samples):
            text, num_tokens = _text_and_tokens(sample)
            row = {
                "id": item.id,
                "benchmark": item.benchmark,
                "lang": item.lang,
                "gold": item.gold,
                "prompt": prompt,
                "completion": text,
                "sample_index": index,
                "num_tokens": num_tokens,
            }
            if item.source is not None:
                row["source"] = item.source
            rows.append(row)
    return rows


def _text_and_tokens(sample: Any) -> tuple[str, int]:
    if isinstance(sample, tuple):
        return str(sample[0]), int(sample[1])
    return sample.text, int(sample.num_tokens)


def items_by_language(items: Iterable[BenchmarkItem]) -> dict[str, list[BenchmarkItem]]:
    """Group items by ``lang``, keeping first-seen order.

    >>> a, b = BenchmarkItem("1", "m", "fr", "q", "1"), BenchmarkItem("1", "m", "en", "q", "1")
    >>> list(items_by_language([a, b]))
    ['fr', 'en']
    """
    groups: dict[str, list[BenchmarkItem]] = {}
    for item in items:
        groups.setdefault(item.lang, []).append(item)
    return groups
