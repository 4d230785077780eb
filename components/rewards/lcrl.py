"""LcRL rewards: c3Recall answer reward with the anti-consistency penalty (LcRL, "Loss function / training").

LcRL scores a search-augmented rollout by its final ``<answer>``:

* answer reward ``r_ans(i) = c3Recall(â_i, a_gold)`` — character 3-gram recall
  of the gold (or its best alias) in the answer, a dense signal instead of
  binary exact match (``components.metrics.qa``); the "w/o c3Recall" ablation
  uses exact match (``answer_metric="exact_match"``).
* anti-consistency penalty (``anti_consistency_penalties``): in each group
  ``G_q`` the bad answers ``B_q = {i : r_ans(i) < τ_bad}`` are compared pairwise;
  ``m_i`` is the largest similarity of answer *i* to another bad answer, and
  ``r_anti(i) = −p_i · w_q`` clipped to [−0.5, 0]. The summary leaves ``p_i`` and
  ``w_q`` open; the released code sets ``p_i = max(0, m_i − margin)`` (margin
  0.5), ``w_q = min(1, |B_q| / 5)``, τ_bad = 0.4, and measures similarity as the
  mean of the two directed 3-gram overlaps of the normalized answers, and so do
  we (``margin``, ``group_scale``, ``tau_bad``). A group with fewer than two bad
  answers is not penalized, nor is an empty answer (it has no 3-gram).
* ``r_total(i) = max(0, r_ans(i) + λ · r_anti(i))`` with λ = ``penalty_weight``.
  The paper's text gives the form and the clip but no λ; the released trainer
  fixes λ = 0.02 (and caps ``r_total`` at 1.5, which ``r_ans`` ≤ 1 never reaches),
  and λ = 0 is its switch for the "w/o Lc reward" ablation. Since ``p_i`` ≤ 0.5
  and ``w_q`` ≤ 1, the penalty moves a reward by at most λ · 0.5 = 0.01 at the
  released weight: the ablation's run differs from the full one by that little
  in its reward, whatever the paper's table prints for it.

The group is the ``group`` column when the dataset has one (the coupled
multilingual group under language coupling, ``components.training.coupling``),
otherwise the prompt (the plain GRPO group). Only the completions one process
scores are seen, so a group must not straddle processes (true with one process
and with per-process batches that hold whole groups). Golds are the ``answers``
column (gold and aliases) when present, else ``gold``.

Logged with trl's ``log_metric``: ``reward/r_ans``, ``reward/anti_consistency``,
``reward/bad_share`` and, per query language, ``lcrl/fem/<lang>``,
``lcrl/c3recall/<lang>``, ``lcrl/clr/<lang>``, ``lcrl/answered/<lang>`` and
(tool loop) ``search/calls/<lang>``.

>>> anti_consistency_penalties(["paris", "paris", "lyon", "rome"], [0.0, 0.0, 1.0, 0.0], ["q"] * 4)
[-0.3, -0.3, 0.0, 0.0]
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any, Literal

from components.metrics.qa import (
    answer_in_language, c3_recall, char_ngrams, exact_match, extract_answer, flexible_exact_match,
    mean_by_language, normalize_answer,
)
from components.rewards.accuracy import LogMetric, completion_text, mean, report
from components.rewards.spec import RewardRange, RewardSpec

AnswerMetric = Literal["c3recall", "exact_match"]
ANSWER_METRICS = {"c3recall": c3_recall, "exact_match": exact_match}


def answer_similarity(first: str | None, second: str | None) -> float:
    """Mean of the two directed character-3-gram overlaps of the normalized answers (0 when one has none).

    >>> answer_similarity("abcd", "abce")   # {abc} shared; 1/2 each way
    0.5
    >>> answer_similarity("ab", "ab")
    0.0
    """
    a, b = char_ngrams(normalize_answer(first)), char_ngrams(normalize_answer(second))
    if not a or not b:
        return 0.0
    shared = len(a & b)
    return (shared / len(a) + shared / len(b)) / 2.0


def anti_consistency_penalties(answers: Sequence[str | None], rewards: Sequence[float], groups: Sequence[Hashable],
                               *, tau_bad: float = 0.4, margin: float = 0.5, group_scale: float = 5.0,
                               clip: tuple[float, float] = (-0.5, 0.0)) -> list[float]:
    """``r_anti`` per completion: bad answers alike to another bad answer of their group are penalized."""
    members: dict[Hashable, list[int]] = {}
    for index, group in enumerate(groups):
        members.setdefault(group, []).append(index)
    penalties = [0.0] * len(answers)
    for indices in members.values():
        bad = [i for i in indices if rewards[i] < tau_bad]
        if len(bad) < 2:
            continue
        weight = min(1.0, len(bad) / group_scale)
        for i in bad:
            closest = max(answer_similarity(answers[i], answers[j]) for j in bad if j != i)
            raw = max(0.0, closest - margin) * weight
            penalties[i] = min(clip[1], max(clip[0], -raw)) if raw > 0 else 0.0
    return penalties


def total_rewards(answer_rewards: Sequence[float], penalties: Sequence[float], penalty_weight: float) -> list[float]:
    """``max(0, r_ans + λ · r_anti)``.

    >>> total_rewards([0.2, 1.0], [-0.5, 0.0], penalty_weight=1.0)
    [0.0, 1.0]
    """
    return [max(0.0, r + penalty_weight * p) for r, p in zip(answer_rewards, penalties, strict=True)]


def _gold_lists(n: int, gold: Sequence[Any] | None, answers: Sequence[Any] | None) -> list[list[str]]:
    """Accepted answers per row: the ``answers`` column (gold and aliases), else ``[gold]``; ``[]`` when absent."""
    rows = answers if answers is not None else gold
    if rows is None:
        raise ValueError("the lcrl reward needs a 'gold' or an 'answers' column")
    if len(rows) != n:
        raise ValueError(f"gold/answers column has {len(rows)} rows for {n} completions")
    return [[str(a) for a in (row if isinstance(row, (list, tuple)) else [row]) if a is not None and str(a).strip()]
            for row in rows]


class LcRLReward:
    """LcRL's ``r_total``; see the module docstring. ``languages`` widen the CLR detector."""

    def __init__(self, *, answer_metric: AnswerMetric = "c3recall", penalty_weight: float = 0.02,
                 tau_bad: float = 0.4, margin: float = 0.5, group_scale: float = 5.0,
                 languages: Sequence[str] = ()) -> None:
        if answer_metric not in ANSWER_METRICS:
            raise ValueError(f"unknown answer_metric {answer_metric!r} (known: {', '.join(ANSWER_METRICS)})")
        if penalty_weight < 0 or group_scale <= 0:
            raise ValueError("penalty_weight must be >= 0 and group_scale > 0")
        self.__name__ = "lcrl"
        self.answer_metric = answer_metric
        self.penalty_weight = penalty_weight
        self.tau_bad, self.margin, self.group_scale = tau_bad, margin, group_scale
        self.languages = tuple(languages)

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], gold: Sequence[Any] | None = None,
                 lang: Sequence[Any] | None = None, answers: Sequence[Any] | None = None,
                 group: Sequence[Any] | None = None, search_calls: Sequence[Any] | None = None,
                 log_metric: LogMetric | None = None, **_: Any) -> list[float | None]:
        golds = _gold_lists(len(completions), gold, answers)
        scored = [i for i, g in enumerate(golds) if g]  # rows without any gold are not applicable (None)
        predictions = [extract_answer(completion_text(c)) for c in completions]
        r_ans = [ANSWER_METRICS[self.answer_metric](predictions[i], golds[i]) for i in scored]
        groups = list(group) if group is not None else [str(p) for p in prompts]
        penalties = anti_consistency_penalties([predictions[i] for i in scored], r_ans, [groups[i] for i in scored],
                                               tau_bad=self.tau_bad, margin=self.margin, group_scale=self.group_scale)
        rewards: list[float | None] = [None] * len(completions)
        for i, value in zip(scored, total_rewards(r_ans, penalties, self.penalty_weight)):
            rewards[i] = value
        report(log_metric, "reward/r_ans", mean(r_ans))
        report(log_metric, "reward/anti_consistency", mean(penalties))
        report(log_metric, "reward/bad_share", mean([float(r < self.tau_bad) for r in r_ans]))
        if lang is not None:
            langs = [str(x) for x in lang]
            calls = [search_calls[i] for i in scored] if search_calls is not None else None
            self._log_languages([predictions[i] for i in scored], [golds[i] for i in scored],
                                [langs[i] for i in scored], calls, log_metric)
        return rewards

    def _log_languages(self, predictions: list[str | None], golds: list[list[str]], langs: list[str],
                       search_calls: Sequence[Any] | None, log_metric: LogMetric | None) -> None:
        from components.language import get_detector

        detector = get_detector(sorted(set(langs) | set(self.languages)))
        table = {
            "fem": [flexible_exact_match(p, g) for p, g in zip(predictions, golds)],
            "c3recall": [c3_recall(p, g) for p, g in zip(predictions, golds)],
            "clr": [float(answer_in_language(p, lang, detector)) if p else None
                    for p, lang in zip(predictions, langs)],
            "answered": [float(p is not None) for p in predictions],
        }
        if search_calls is not None:
            table["calls"] = [float(c) for c in search_calls]
        for name, values in table.items():
            group = "search" if name == "calls" else "lcrl"
            for code, value in mean_by_language(values, langs).items():
                report(log_metric, f"{group}/{name}/{code}", value)


SPEC = RewardSpec("lcrl", LcRLReward, range=lambda params: RewardRange(0.0, 1.0))  # max(0, c3Recall or EM ≤ 1 + a penalty ≤ 0)
