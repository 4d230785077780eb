"""AdaMame-GRPO reward (AdaMame §3.3, eqs. 2–4): accuracy scaled by a growing query-alignment factor.

``r'(q, o_i, g) = α_i(t) · r(q, o_i, g)`` with
``α_i(t) = 1 + β · 1[lang(o_i) = lang(q)] · φ(t)`` and
``φ(t) = max((1 − cos(π t / T)) / 2, 0.1)``; β = 2.0 by default.

* ``lang(o_i)``: lingua (``components.language``) on the reasoning trace (the
  text inside ``<think>…</think>``, the whole completion without a think
  block), cut to its first ``detect_chars`` characters (500, as AdaMame's
  released code does).
* ``lang(q)``: the dataset's ``lang`` column (the language the query was
  translated into). The paper detects it with lingua and reports 100 % detector
  accuracy on queries (its table 9), so the column is the same value without
  the detection cost or its rare errors.
* ``t``/``T``: ``trainer_state.global_step`` / ``trainer_state.max_steps``
  (optimizer steps; the paper counts training batches — proportional).

Train it with ``loss_type="dr_grpo"``; ``scale_rewards="none"`` reproduces the
paper's text (pure Dr.GRPO, eq. 5: ``A = r' − mean(r')``), ``"group"`` its
released code (std scaling kept) — both are stage settings.

Logged with trl's ``log_metric``: ``reward/accuracy``, ``curriculum/phi``,
``curriculum/alpha_mean`` and ``language/query_match`` (share of rollouts whose
trace is in the query language).

>>> reward = AdaMameReward(beta=2.0)
>>> reward.__name__, reward.beta, reward.detect_chars
('adamame', 2.0, 500)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from components.rewards.accuracy import (
    AccuracyReward,
    LogMetric,
    columns,
    completion_text,
    mean,
    report,
    step_and_horizon,
)
from components.rewards.curriculum import PhiSchedule, adamame_alpha, cosine_phi
from components.rewards.spec import Params, RewardRange, RewardSpec


class AdaMameReward:
    """α_i(t)·r_acc; ``None`` for rows without gold/lang."""

    def __init__(self, *, verifier: str = "trusted", extraction: str = "strict", beta: float = 2.0,
                 phi_floor: float = 0.1, detect_chars: int = 500, languages: Sequence[str] = ()) -> None:
        if detect_chars < 1:
            raise ValueError(f"detect_chars must be >= 1, got {detect_chars}")
        self.__name__ = "adamame"
        self.accuracy = AccuracyReward(verifier=verifier, extraction=extraction)
        self.beta = beta
        self.phi_floor = phi_floor
        self.detect_chars = detect_chars
        self.languages = tuple(languages)

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], gold: Sequence[Any] | None = None,
                 lang: Sequence[Any] | None = None, trainer_state: Any = None,
                 log_metric: LogMetric | None = None, **_: Any) -> list[float | None]:
        from components.language import batch_detector
        from components.verification import split_think

        golds, langs = columns(len(completions), gold, lang)
        step, horizon = step_and_horizon(trainer_state)
        phi = cosine_phi(step, horizon, self.phi_floor)
        texts = [completion_text(c) for c in completions]
        splits = [split_think(text) for text in texts]
        detector = batch_detector(self.languages)
        heads = [s.trace[: self.detect_chars] for s in splits]
        detector.prefetch(heads)
        detected = [detector.detect(head) for head in heads]
        rewards: list[float | None] = []
        accs: list[float | None] = []
        alphas: list[float | None] = []
        matches: list[float | None] = []
        for text, g, l, found in zip(texts, golds, langs, detected):
            correct = self.accuracy.correct(text, g, l)
            if correct is None:
                for column in (rewards, accs, alphas, matches):
                    column.append(None)
                continue
            match = found is not None and found == l
            alpha = adamame_alpha(match, phi, self.beta)
            rewards.append(alpha * float(correct))
            accs.append(float(correct))
            alphas.append(alpha)
            matches.append(float(match))
        report(log_metric, "reward/accuracy", mean(accs))
        report(log_metric, "curriculum/phi", phi)
        report(log_metric, "curriculum/alpha_mean", mean(alphas))
        report(log_metric, "language/query_match", mean(matches))
        return rewards


def _range(params: Params) -> RewardRange:
    beta = float(params["beta"])
    return RewardRange(0.0, None, f"its ceiling 1 + {beta:g}·φ(t) grows with the step; 1 + {beta:g} at the last")


SPEC = RewardSpec("adamame", AdaMameReward, range=_range,
                  curriculum=lambda params: PhiSchedule(float(params["phi_floor"])))
