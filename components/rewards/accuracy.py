"""Plain accuracy reward (naive RL / standard GRPO) and the helpers every reward shares.

trl's reward contract (``GRPOTrainer``, trl 1.16): a reward is called as
``reward(prompts=..., completions=..., completion_ids=..., trainer_state=...,
log_extra=..., log_metric=..., **dataset_columns)`` and returns one
``float | None`` per completion (``None`` = not applicable to that sample).
Completions are strings for standard datasets and lists of chat messages for
conversational ones; ``completion_text`` accepts both. Our datasets carry the
columns ``gold`` (reference answer) and ``lang`` (ISO 639-1 query language).
Components of a reward are reported with trl's ``log_metric(name, value)``,
which averages them per logging step next to trl's own ``kl`` and ``entropy``.

AdaMame §3.3 eq. (1): ``r(q, o_i, g) = 1(o_i = g)`` — 1 when the configured
verifier (``trusted`` by default) accepts the answer of the completion.
``extraction`` (every reward built on this one takes it): ``strict`` (the
default) reads only the last ``\\boxed{}`` after ``</think>``, so a rollout cut
off inside its reasoning earns nothing — the answer format the prompts ask for,
and no reward for running out of tokens, against AdaMame's token-efficiency goal;
``lenient`` also accepts answer phrases, the last number or a short response
(``components.extraction``), for models that write no think block.

>>> completion_text([{"role": "assistant", "content": "The answer is \\\\boxed{4}."}])
'The answer is \\\\boxed{4}.'
>>> mean([1.0, 0.0, None])
0.5
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from components.rewards.spec import RewardRange, RewardSpec

LogMetric = Callable[[str, float], None]
LogExtra = Callable[[str, list], None]
EXTRACTION_MODES = ("strict", "lenient")


def completion_text(completion: Any) -> str:
    """Text of a completion given as a string or as a list of chat messages (assistant turns joined).

    >>> completion_text("plain")
    'plain'
    >>> completion_text([{"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}])
    'ab'
    """
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        completion = [completion]
    parts: list[str] = []
    for message in completion or []:
        if message.get("role", "assistant") != "assistant":
            continue
        content = message.get("content") or ""
        if isinstance(content, str):
            parts.append(content)
        else:
            parts.extend(part.get("text", "") for part in content if part.get("type", "text") == "text")
    return "".join(parts)


def mean(values: Sequence[float | None]) -> float | None:
    """Mean of the non-``None`` values; ``None`` when there are none."""
    present = [float(v) for v in values if v is not None]
    return sum(present) / len(present) if present else None


def report(log_metric: LogMetric | None, name: str, value: float | None) -> None:
    """Send one component to trl's ``log_metric`` (skipped when absent or undefined)."""
    if log_metric is not None and value is not None:
        log_metric(name, float(value))


def extra(log_extra: LogExtra | None, column: str, values: Sequence[Any]) -> None:
    """One value per completion as a column of trl's completions table (``log_extra``; skipped when absent)."""
    if log_extra is not None:
        log_extra(column, list(values))


def step_and_horizon(trainer_state: Any) -> tuple[int, int]:
    """``(global_step, max_steps)`` from trl's ``trainer_state`` (``(0, 0)`` outside a trainer)."""
    if trainer_state is None:
        return 0, 0
    return int(getattr(trainer_state, "global_step", 0) or 0), int(getattr(trainer_state, "max_steps", 0) or 0)


def columns(n: int, gold: Sequence[Any] | None, lang: Sequence[Any] | None) -> tuple[list, list]:
    """The ``gold`` and ``lang`` columns padded to ``n`` rows (missing column -> ``None`` per row)."""
    gold_list = list(gold) if gold is not None else [None] * n
    lang_list = list(lang) if lang is not None else [None] * n
    if len(gold_list) != n or len(lang_list) != n:
        raise ValueError(f"columns gold/lang have {len(gold_list)}/{len(lang_list)} rows for {n} completions")
    return gold_list, lang_list


class AccuracyReward:
    """1.0 when the verifier accepts the response's answer, else 0.0; ``None`` for rows without gold/lang.

    >>> reward = AccuracyReward(verifier="trusted")
    >>> reward.__name__
    'accuracy'
    """

    def __init__(self, *, verifier: str = "trusted", extraction: str = "strict", languages: Sequence[str] = ()) -> None:
        if extraction not in EXTRACTION_MODES:
            raise ValueError(f"unknown extraction {extraction!r} (known: {', '.join(EXTRACTION_MODES)})")
        self.__name__ = "accuracy"
        self.verifier_name = verifier
        self.extraction = extraction
        self.languages = tuple(languages)
        self._verifier = None

    @property
    def verifier(self):
        """The verifier, built on first use (``components.verification.get_verifier``)."""
        if self._verifier is None:
            from components.verification import get_verifier

            self._verifier = get_verifier(self.verifier_name)
        return self._verifier

    def correct(self, completion: str, gold: Any, lang: Any) -> bool | None:
        """Verdict on one completion (think block included); ``None`` when the row has no gold or no language."""
        if gold is None or lang is None:
            return None
        return bool(self.verifier(completion, str(gold), str(lang), extract=True, mode=self.extraction).correct)

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], gold: Sequence[Any] | None = None,
                 lang: Sequence[Any] | None = None, log_metric: LogMetric | None = None,
                 **_: Any) -> list[float | None]:
        golds, langs = columns(len(completions), gold, lang)
        rewards: list[float | None] = []
        for completion, g, l in zip(completions, golds, langs):
            verdict = self.correct(completion_text(completion), g, l)
            rewards.append(None if verdict is None else float(verdict))
        report(log_metric, "reward/accuracy", mean(rewards))
        return rewards


SPEC = RewardSpec("accuracy", AccuracyReward, range=lambda params: RewardRange(0.0, 1.0))  # 1(answer = gold)
