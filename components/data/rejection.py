"""Selection of the RL set by sampling the policy (AdaMame §3.3 "Dataset", appendix B.5, table 8).

Strategies, selectable by name (``REJECTION_STRATEGIES``):

* ``zero_one_filter`` (rejection sampling, the default; Zhang et al. 2026):
  ``k`` rollouts per query (AdaMame: 8), keep the query when
  ``0 < |correct| < k`` — challenging yet solvable;
* ``random``: no rollouts, every query is a candidate (then sampled);
* ``conditional``: one rollout per query, keep it when the rollout is in the
  query language but wrong (language fidelity 1, accuracy 0);
* ``unsolved``: ``k`` rollouts, keep the queries the policy cannot solve yet (none
  correct). Our addition for policies too weak for ``zero_one_filter`` to keep
  anything (a small base model that solves almost nothing): every kept query
  still has a reward to learn from once the policy gets one right.

Then at most ``per_language`` queries per language (AdaMame: 1K) are sampled
for training and ``validation_per_language`` more are held out for validation
(AdaMame: 1K in all over five languages), disjoint, with a fixed seed.

>>> REJECTION_STRATEGIES["zero_one_filter"].keep([True, False, True], [True] * 3)
True
>>> REJECTION_STRATEGIES["zero_one_filter"].keep([True] * 8, [True] * 8)
False
>>> REJECTION_STRATEGIES["conditional"].keep([False], [True]), REJECTION_STRATEGIES["conditional"].rollouts(8)
(True, 1)
>>> REJECTION_STRATEGIES["unsolved"].keep([False, False], [True, False]), REJECTION_STRATEGIES["unsolved"].keep([True, False], [True] * 2)
(True, False)
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from components.metrics.lcpr import Detector


@dataclass(frozen=True)
class Strategy:
    """How many rollouts a query needs (given k) and whether its outcomes keep it."""

    name: str
    rollouts: Callable[[int], int]
    keep: Callable[[list[bool], list[bool]], bool]


def _zero_one(correct: list[bool], in_language: list[bool]) -> bool:
    return 0 < sum(correct) < len(correct)


def _random(correct: list[bool], in_language: list[bool]) -> bool:
    return True


def _conditional(correct: list[bool], in_language: list[bool]) -> bool:
    return bool(correct) and in_language[0] and not correct[0]


def _unsolved(correct: list[bool], in_language: list[bool]) -> bool:
    return bool(correct) and not any(correct)


REJECTION_STRATEGIES: dict[str, Strategy] = {
    "zero_one_filter": Strategy("zero_one_filter", lambda k: k, _zero_one),
    "random": Strategy("random", lambda k: 0, _random),
    "conditional": Strategy("conditional", lambda k: 1, _conditional),
    "unsolved": Strategy("unsolved", lambda k: k, _unsolved),
}


def get_strategy(name: str) -> Strategy:
    """The named strategy; ``ValueError`` listing the known names."""
    if name not in REJECTION_STRATEGIES:
        raise ValueError(f"unknown rejection strategy {name!r} (known: {', '.join(sorted(REJECTION_STRATEGIES))})")
    return REJECTION_STRATEGIES[name]


def in_query_language(text: str, lang: str, detector: "Detector") -> bool:
    """The rollout's reasoning (its think block, else the whole text) is detected as ``lang``."""
    from components.verification import split_think

    split = split_think(text)
    return detector.detect(split.trace if split.has_think else text) == lang


def outcomes(
    rows: list[dict[str, Any]],
    rollouts: list[list[str]],
    detector: "Detector",
    verifier: Callable[..., Any],
) -> list[dict[str, Any]]:
    """Per rollout: ``id, lang, sample_index, completion, correct, in_language``."""
    out = []
    for row, texts in zip(rows, rollouts):
        for index, text in enumerate(texts):
            verdict = verifier(text, str(row["gold"]), row["lang"])
            out.append({
                "id": row["id"], "lang": row["lang"], "sample_index": index, "completion": text,
                "correct": bool(verdict.correct), "in_language": in_query_language(text, row["lang"], detector),
            })  # fmt: skip
    return out


def select(rows: list[dict[str, Any]], rollout_rows: list[dict[str, Any]], strategy: Strategy) -> list[dict[str, Any]]:
    """Rows the strategy keeps, with ``num_rollouts`` and ``num_correct`` added.

    >>> rows = [{"id": "a", "lang": "fr"}, {"id": "b", "lang": "fr"}, {"id": "a", "lang": "ja"}]
    >>> rolls = [{"id": "a", "lang": "fr", "correct": c, "in_language": True} for c in (True, False)]
    >>> rolls += [{"id": "b", "lang": "fr", "correct": True, "in_language": True}] * 2
    >>> rolls += [{"id": "a", "lang": "ja", "correct": False, "in_language": True}] * 2
    >>> [(r["id"], r["lang"]) for r in select(rows, rolls, REJECTION_STRATEGIES["zero_one_filter"])]
    [('a', 'fr')]
    """
    by_query: dict[tuple[str, str], list[dict[str, Any]]] = {}  # ids are shared across languages: key by both
    for roll in rollout_rows:
        by_query.setdefault((str(roll["id"]), roll["lang"]), []).append(roll)
    kept = []
    for row in rows:
        rolls = by_query.get((str(row["id"]), row["lang"]), [])
        correct = [bool(r["correct"]) for r in rolls]
        in_language = [bool(r["in_language"]) for r in rolls]
        if strategy.keep(correct, in_language):
            kept.append({**row, "num_rollouts": len(rolls), "num_correct": sum(correct)})
    return kept


def split_train_validation(
    rows: list[dict[str, Any]], per_language: int | None, validation_per_language: int, seed: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Per language: shuffle with ``seed``, hold out the first ``validation_per_language``, cap the rest.

    >>> rows = [{"lang": "fr", "i": i} for i in range(5)]
    >>> train, val = split_train_validation(rows, 3, 1, 0)
    >>> len(train), len(val), {r["i"] for r in train} & {r["i"] for r in val}
    (3, 1, set())
    """
    rng = random.Random(seed)
    train, validation = [], []
    for lang in sorted({r["lang"] for r in rows}):
        mine = [r for r in rows if r["lang"] == lang]
        rng.shuffle(mine)
        validation += mine[:validation_per_language]
        rest = mine[validation_per_language:]
        train += rest if per_language is None else rest[:per_language]
    return train, validation


def selection_summary(
    rows: list[dict[str, Any]], selected: list[dict[str, Any]], train: list[dict[str, Any]],
    validation: list[dict[str, Any]], rollout_rows: list[dict[str, Any]], languages: list[str],
) -> dict[str, dict[str, float]]:
    """Per language: queries, selected, train, validation, rollout accuracy and language fidelity."""
    out: dict[str, dict[str, float]] = {}
    for lang in languages:
        rolls = [r for r in rollout_rows if r["lang"] == lang]
        count = lambda table: float(sum(1 for r in table if r["lang"] == lang))  # noqa: E731
        out[lang] = {"queries": count(rows), "selected": count(selected), "train": count(train),
                     "validation": count(validation), "rollouts": float(len(rolls))}  # fmt: skip
        if rolls:
            out[lang]["rollout_accuracy"] = sum(r["correct"] for r in rolls) / len(rolls)
            out[lang]["rollout_in_language"] = sum(r["in_language"] for r in rolls) / len(rolls)
    return out
