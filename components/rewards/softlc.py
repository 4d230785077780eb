"""SoftLC reward: accuracy plus a soft response-level language bonus (PCS's "SoftLC RL" baseline).

PCS (baselines) describes SoftLC RL (after Magistral, Mistral-AI et al. 2025) as
naive RL "plus a soft response-level language reward (0.1) for target-language
responses": ``r = r_acc + 0.1 · 1[lang(response) = lang(q)]``. The language is
judged once for the whole text by lingua (``components.language``) —
``scope="completion"`` (default: trace and answer together, the response-level
judgement PCS contrasts with its step-level SLC), ``"trace"`` or ``"response"``
(the text after ``</think>``) — optionally cut to its first ``detect_chars``
characters. ``lang(q)`` is the dataset's ``lang`` column.

Logged with trl's ``log_metric``: ``reward/accuracy``, ``reward/language_bonus``
and ``language/query_match``.

>>> SoftLCReward(bonus=0.1).__name__
'softlc'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from components.rewards.accuracy import (
    AccuracyReward, LogExtra, LogMetric, columns, completion_text, extra, mean, report,
)  # fmt: skip
from components.rewards.spec import Params, RewardRange, RewardSpec

Scope = Literal["completion", "trace", "response"]


def _scoped(split: Any, text: str, scope: Scope) -> str:
    if scope == "trace":
        return split.trace
    if scope == "response":
        return split.response
    return text


class SoftLCReward:
    """``r_acc + bonus · 1[lang(text) = lang(q)]``; ``None`` for rows without gold/lang."""

    def __init__(self, *, verifier: str = "trusted", extraction: str = "strict", bonus: float = 0.1,
                 scope: Scope = "completion",
                 detect_chars: int | None = None, languages: Sequence[str] = ()) -> None:
        if scope not in ("completion", "trace", "response"):
            raise ValueError(f"unknown scope {scope!r} (known: completion, trace, response)")
        self.__name__ = "softlc"
        self.accuracy = AccuracyReward(verifier=verifier, extraction=extraction)
        self.bonus = bonus
        self.scope = scope
        self.detect_chars = detect_chars
        self.languages = tuple(languages)

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], gold: Sequence[Any] | None = None,
                 lang: Sequence[Any] | None = None, log_metric: LogMetric | None = None,
                 log_extra: LogExtra | None = None, **_: Any) -> list[float | None]:
        from components.language import batch_detector
        from components.verification import split_think

        golds, langs = columns(len(completions), gold, lang)
        texts = [completion_text(c) for c in completions]
        splits = [split_think(t) for t in texts]
        scoped = [_scoped(s, t, self.scope)[: self.detect_chars] for s, t in zip(splits, texts)]
        detector = batch_detector(self.languages)
        detector.prefetch(scoped)
        detected = [detector.detect(text) for text in scoped]
        rewards: list[float | None] = []
        accs: list[float | None] = []
        matches: list[float | None] = []
        for text, g, l, found in zip(texts, golds, langs, detected):
            correct = self.accuracy.correct(text, g, l)
            match = None if correct is None else float(found is not None and found == l)
            accs.append(None if correct is None else float(correct))
            matches.append(match)
            rewards.append(None if correct is None else float(correct) + self.bonus * match)
        report(log_metric, "reward/accuracy", mean(accs))
        report(log_metric, "reward/language_bonus", mean([None if m is None else self.bonus * m for m in matches]))
        report(log_metric, "language/query_match", mean(matches))
        extra(log_extra, "detected_language", [found or "" for found in detected])  # the language verdict per rollout
        extra(log_extra, "query_match", matches)
        return rewards


def _range(params: Params) -> RewardRange:
    bonus = float(params["bonus"])  # r_acc + bonus · match, both 0 or 1: {0, bonus, 1, 1 + bonus}
    return RewardRange(min(0.0, bonus), max(1.0, 1.0 + bonus))


def _parts(params: Params) -> dict[str, RewardRange]:
    bonus = float(params["bonus"])
    return {"reward/accuracy": RewardRange(0.0, 1.0), "reward/language_bonus": RewardRange(min(0.0, bonus),
                                                                                           max(0.0, bonus))}


SPEC = RewardSpec("softlc", SoftLCReward, range=_range, parts=_parts)
