"""PCS reward (progressive code-switching, "Reward modelling", eqs. 2–3) with its τ curriculum.

Per response, four binary signals:

* ``r_rep`` — 1 when the completion has no degenerate repetition
  (``components.rewards.repetition``: our rule, the paper's appendix A is not in
  our seed);
* ``r_fmt`` — 1 when the format is valid: a closed ``<think>…</think>`` block
  with a non-empty trace (``require_think``; off for non-thinking models) and
  a non-empty ``\\boxed{…}`` answer in the response after it (the format the
  prompts ask for; a bare number or an answer phrase does not count);
* ``r_acc`` — 1 when the verifier (``trusted`` by default) accepts the answer
  (``extraction`` strict by default: the last ``\\boxed{}`` after ``</think>``);
* ``r_SLC`` — 1 when ``SLC(T, L) ≥ τ``: the share of reasoning steps of the trace
  ``T`` in the query language ``L`` (``components.metrics.slc``; a trace without
  any step with letters has SLC ``None`` and fails).

Gate ``C = r_fmt ∧ r_rep``; ``r_final`` = 1.1 if ``C ∧ acc ∧ SLC-pass``, 1 if
``C ∧ acc``, 0.1 if ``C ∧ ¬acc``, else 0 (``pcs_final_reward``).

``slc_detector``: how a step's language is detected, ``lingua`` (the project's detector) or
``langdetect`` (the paper's: "langdetect identifies each step's language"; each step detected
whole, seeded: ``components.metrics.slc``).

``slc_reward``: ``curriculum`` (the paper's method, above) or ``continuous``, PCS's
ablation "w/o curriculum" ("The importance of the curriculum"), which drops the τ
schedule for a reward that directly and continuously pays a higher ``SLC(T, L)``.
The paper's copy we have names the ablation but not its formula; ours keeps eq. (2)'s
gate and levels and makes the language bonus continuous: ``r_final`` = 1 + 0.1·SLC
for ``C ∧ acc`` (a trace with no step to judge earns no bonus), 0.1 for ``C ∧ ¬acc``,
0 otherwise (``pcs_continuous_reward``); so a fully consistent correct response still
earns 1.1 and the gap between the two rewards is only the threshold. There is no
curriculum to check or checkpoint (``curriculum`` is ``None``), and the ``tau_*``
parameters are refused with it (``parameter_problems``, run when a profile loads).

τ comes from a ``TauCurriculum`` owned by the reward (``self.curriculum``): every
call records its counts (eligible = ``C ∧ acc``; passed = eligible with SLC ≥ τ), and
``components.training.callbacks.CurriculumCallback`` checks every
``tau_interval`` steps, saves the state in each checkpoint and restores it on
resume. ``tau_window``: ``batch`` (the default, the paper's rule: Pass@SLC is a
batch-level metric evaluated at each check, so the check reads the last
generation batch) or ``pooled`` (ours: every rollout since the previous check).
Logged with trl's ``log_metric``: ``reward/r_rep``, ``reward/r_fmt``, ``reward/r_acc``
(also as ``reward/accuracy``), ``reward/r_slc``, ``curriculum/tau``,
``curriculum/pass_at_slc_batch`` and ``language/slc_mean``.

>>> [pcs_final_reward(True, True, True, True), pcs_final_reward(True, True, True, False),
...  pcs_final_reward(True, True, False, True), pcs_final_reward(False, True, True, True)]
[1.1, 1.0, 0.1, 0.0]
>>> reward = PCSReward(slc_reward="continuous")
>>> reward.curriculum is None, reward(["q"], ["<think>Je calcule la somme.</think> \\\\boxed{4}"], gold=["4"], lang=["fr"])
(True, [1.1])
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from components.rewards.accuracy import (
    AccuracyReward, LogExtra, LogMetric, columns, completion_text, extra, mean, report,
)  # fmt: skip
from components.rewards.curriculum import TauCurriculum
from components.rewards.repetition import has_degenerate_repetition
from components.rewards.spec import Params, RewardRange, RewardSpec

_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")
SLC_REWARDS = ("curriculum", "continuous")
TAU_PARAMETERS = ("tau_start", "tau_step", "tau_max", "tau_interval", "tau_pass_threshold", "tau_window")
CONTINUOUS_BONUS = 0.1  # eq. (2)'s gap between a consistent (1.1) and an inconsistent (1) correct response


def pcs_final_reward(fmt: bool, no_repetition: bool, correct: bool, slc_pass: bool) -> float:
    """PCS eq. (2) with gate ``C = r_fmt ∧ r_rep`` (eq. 3).

    >>> pcs_final_reward(True, False, True, True)
    0.0
    """
    if not (fmt and no_repetition):
        return 0.0
    if not correct:
        return 0.1
    return 1.1 if slc_pass else 1.0


def pcs_continuous_reward(fmt: bool, no_repetition: bool, correct: bool, slc: float | None) -> float:
    """The curriculum ablation: eq. (2) with the bonus ``0.1 · SLC`` instead of ``0.1 · 1[SLC ≥ τ]``.

    >>> [pcs_continuous_reward(True, True, True, 0.5), pcs_continuous_reward(True, True, True, None),
    ...  pcs_continuous_reward(True, True, False, 1.0), pcs_continuous_reward(True, False, True, 1.0)]
    [1.05, 1.0, 0.1, 0.0]
    """
    if not (fmt and no_repetition):
        return 0.0
    if not correct:
        return 0.1
    return round(1.0 + CONTINUOUS_BONUS * (slc or 0.0), 10)


@dataclass(frozen=True)
class PCSSignals:
    """The four binary signals and the SLC of one response."""

    fmt: bool
    no_repetition: bool
    correct: bool
    slc: float | None
    slc_pass: bool

    @property
    def eligible(self) -> bool:
        """Counts toward Pass@SLC: passes the gate and is correct."""
        return self.fmt and self.no_repetition and self.correct

    @property
    def reward(self) -> float:
        return pcs_final_reward(self.fmt, self.no_repetition, self.correct, self.slc_pass)

    @property
    def continuous_reward(self) -> float:
        return pcs_continuous_reward(self.fmt, self.no_repetition, self.correct, self.slc)


class PCSReward:
    """PCS's gated reward with a step-level language-consistency term and a τ curriculum (or, as the
    paper's ablation, a continuous SLC bonus)."""

    def __init__(self, *, verifier: str = "trusted", extraction: str = "strict", require_think: bool = True,
                 slc_reward: str = "curriculum", tau_start: float = 0.1,
                 tau_step: float = 0.1, tau_max: float = 0.95, tau_interval: int = 40,
                 tau_pass_threshold: float = 0.9, repetition_max_period: int = 128,
                 repetition_min_repeats: int = 3, repetition_min_span: int = 24,
                 tau_window: str = "batch", slc_detector: str = "lingua", languages: Sequence[str] = ()) -> None:
        problems = self.parameter_problems({"require_think": require_think, "extraction": extraction,
                                            "slc_reward": slc_reward, "slc_detector": slc_detector})
        if problems:
            raise ValueError("; ".join(problems))
        self.__name__ = "pcs"
        self.accuracy = AccuracyReward(verifier=verifier, extraction=extraction)
        self.require_think = require_think
        self.slc_reward = slc_reward
        self.curriculum = tau_curriculum({"slc_reward": slc_reward, "tau_start": tau_start, "tau_step": tau_step,
                                          "tau_max": tau_max, "tau_interval": tau_interval,
                                          "tau_pass_threshold": tau_pass_threshold, "tau_window": tau_window})
        self.repetition = {"max_period": repetition_max_period, "min_repeats": repetition_min_repeats,
                           "min_span": repetition_min_span}
        self.languages = tuple(languages)
        self.slc_detector = slc_detector
        self._step_detector = None  # langdetect's, built at the first batch

    @staticmethod
    def parameter_problems(params: Mapping[str, Any]) -> list[str]:
        """Parameters that cannot do what they say together (checked when a profile loads).

        >>> PCSReward.parameter_problems({"slc_reward": "continuous", "tau_interval": 20})
        ["tau_interval: read by slc_reward curriculum only (slc_reward is 'continuous': no tau schedule)"]
        """
        problems = []
        if params.get("require_think", True) is False and params.get("extraction", "strict") == "strict":
            problems.append("require_think false (a model without a think block) with extraction strict (the boxed "
                            "answer after </think>) would never find an answer; set extraction lenient")
        from components.metrics.slc import SLC_DETECTORS

        if params.get("slc_detector", "lingua") not in SLC_DETECTORS:
            problems.append(f"slc_detector {params['slc_detector']!r} is unknown (known: {', '.join(SLC_DETECTORS)})")
        mode = params.get("slc_reward", "curriculum")
        if mode not in SLC_REWARDS:
            problems.append(f"slc_reward {mode!r} is unknown (known: {', '.join(SLC_REWARDS)})")
        given = [name for name in TAU_PARAMETERS if name in params]
        if mode == "continuous" and given:
            problems.append(f"{', '.join(given)}: read by slc_reward curriculum only (slc_reward is 'continuous': "
                            "no tau schedule)")
        return problems

    def step_detector(self) -> Any:
        """The step-level detector ``slc_detector`` names (langdetect's, kept with its memo), or ``None``
        for lingua (the process-wide batch detector)."""
        from components.metrics.slc import step_detector

        if self._step_detector is None and self.slc_detector != "lingua":
            self._step_detector = step_detector(self.slc_detector)
        return self._step_detector

    def format_ok(self, split: Any, lang: str) -> bool:
        """``r_fmt``: closed think block with a trace (when required) and a non-empty boxed answer after it."""
        from components.verification import extract_answer

        if self.require_think and not (split.has_think and split.trace.strip()):
            return False
        return _BOXED.search(split.response) is not None and bool(extract_answer(split.response, lang))

    def signals(self, text: str, gold: Any, lang: str, detector: Any, *, split: Any = None,
                units: list[str] | None = None) -> PCSSignals:
        """All PCS signals of one completion at the current τ (``split``/``units``: when already computed)."""
        from components.metrics.slc import share_in_language, step_units
        from components.verification import split_think

        split = split_think(text) if split is None else split
        units = step_units(split.trace) if units is None else units
        fmt = self.format_ok(split, lang)
        no_rep = not has_degenerate_repetition(text, **self.repetition)
        correct = bool(self.accuracy.correct(text, gold, lang))
        value = share_in_language(units, lang, detector)
        slc_pass = self.curriculum is not None and value is not None and value >= self.curriculum.tau
        return PCSSignals(fmt=fmt, no_repetition=no_rep, correct=correct, slc=value, slc_pass=slc_pass)

    def batch_signals(self, texts: Sequence[str], golds: Sequence[Any], langs: Sequence[Any]) -> list[PCSSignals | None]:
        """``signals`` of every applicable row; the steps of all of them detected in one parallel batch."""
        from components.language import batch_detector
        from components.metrics.slc import step_units
        from components.verification import split_think

        rows = [i for i, (g, l) in enumerate(zip(golds, langs)) if g is not None and l is not None]
        splits = {i: split_think(texts[i]) for i in rows}
        units = {i: step_units(splits[i].trace) for i in rows}
        detector = self.step_detector() or batch_detector(self.languages)
        detector.prefetch_blocks(unit for i in rows for unit in units[i])
        found: list[PCSSignals | None] = [None] * len(texts)
        for i in rows:
            found[i] = self.signals(texts[i], golds[i], str(langs[i]), detector, split=splits[i], units=units[i])
        return found

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], gold: Sequence[Any] | None = None,
                 lang: Sequence[Any] | None = None, log_metric: LogMetric | None = None,
                 log_extra: LogExtra | None = None, **_: Any) -> list[float | None]:
        golds, langs = columns(len(completions), gold, lang)
        found = self.batch_signals([completion_text(c) for c in completions], golds, langs)
        present = [s for s in found if s is not None]
        extra(log_extra, "slc", [None if s is None else s.slc for s in found])  # the language verdict per rollout
        if self.curriculum is not None:
            extra(log_extra, "slc_pass", [None if s is None else s.slc_pass for s in found])
            extra(log_extra, "tau", [self.curriculum.tau] * len(found))
        report(log_metric, "reward/r_rep", mean([float(s.no_repetition) for s in present]))
        report(log_metric, "reward/r_fmt", mean([float(s.fmt) for s in present]))
        report(log_metric, "reward/r_acc", mean([float(s.correct) for s in present]))
        report(log_metric, "reward/accuracy", mean([float(s.correct) for s in present]))
        report(log_metric, "language/slc_mean", mean([s.slc for s in present]))
        if self.curriculum is None:
            report(log_metric, "reward/slc_bonus",
                   mean([CONTINUOUS_BONUS * (s.slc or 0.0) for s in present if s.eligible]))
            return [None if s is None else s.continuous_reward for s in found]
        eligible = [s for s in present if s.eligible]
        passed = sum(s.slc_pass for s in eligible)
        self.curriculum.record(passed=passed, eligible=len(eligible))
        report(log_metric, "reward/r_slc", mean([float(s.slc_pass) for s in present]))
        report(log_metric, "curriculum/tau", self.curriculum.tau)
        report(log_metric, "curriculum/pass_at_slc_batch", passed / len(eligible) if eligible else None)
        return [None if s is None else s.reward for s in found]


def tau_curriculum(params: Params) -> TauCurriculum | None:
    """The τ curriculum of a PCS reward with ``params`` (``None`` for the continuous ablation, which has none)."""
    if params["slc_reward"] == "continuous":
        return None
    return TauCurriculum(tau=params["tau_start"], delta=params["tau_step"], maximum=params["tau_max"],
                         interval=params["tau_interval"], threshold=params["tau_pass_threshold"],
                         window=params["tau_window"])


def _range(params: Params) -> RewardRange:
    if params["slc_reward"] == "continuous":  # 1 + 0.1 · SLC at SLC = 1
        return RewardRange(0.0, pcs_continuous_reward(True, True, True, 1.0))
    return RewardRange(0.0, pcs_final_reward(True, True, True, True))  # gated, correct, SLC passed: 1.1


SPEC = RewardSpec("pcs", PCSReward, range=_range, curriculum=tau_curriculum)
