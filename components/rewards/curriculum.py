"""Curriculum schedules of the language-aware GRPO rewards.

* ``cosine_phi`` — AdaMame §3.3, eq. (4): the alignment schedule
  ``φ(t) = max((1 − cos(π t / T)) / 2, 0.1)`` that grows from 0.1 at ``t = 0``
  to 1 at ``t = T``; ``t`` is the trainer's global step and ``T`` its
  ``max_steps`` (trl passes ``trainer_state`` to every reward function).
* ``PhiSchedule`` — that schedule as an object with its floor, the curriculum AdaMame's
  reward spec names so the plan can say from which step φ rises.
* ``adamame_alpha`` — eq. (3): ``α_i(t) = 1 + β · 1[lang(o_i) = lang(q)] · φ(t)``.
* ``TauCurriculum`` — PCS, "Progressive code-switching RL", eq. (4): the SLC
  threshold τ starts at 0.1; every ``k`` optimizer steps (40) the batch-level
  progress ``Pass@SLC(τ)`` is evaluated and, when it is at least 0.9,
  ``τ ← min(τ + Δτ, 0.95)`` (Δτ = 0.1). The paper tracks it as a metric of
  one batch, so a check reads the last generation batch (``window="batch"``,
  the default).

Documented choices (the paper is silent):

* ``Pass@SLC(τ)`` counts, among the responses that pass the gate (format and no
  repetition) *and* are correct, those with ``SLC ≥ τ``; so it lies in [0, 1].
  When no response was eligible it is undefined (``None``) and τ stays — an
  empty window carries no evidence that the curriculum is saturated.
* Which rollouts a check counts (``window``): ``"batch"`` (the default) is the
  paper's rule — a batch-level metric evaluated every k steps, so a check reads
  the last generation batch only (the last ``record``); ``"pooled"`` is ours, not
  the paper's: it counts every rollout since the previous check (k steps of
  batches), a steadier estimate that raises τ later when the policy is still
  improving within the window.
* Counts are integers, so with several processes the window is summed across
  ranks (``reduce``, an all-reduce supplied by the trainer's accelerator) and
  every rank takes the same decision from the same totals.
* τ is rounded to 6 decimals after each rise so that 0.1 + 0.1 + 0.1 prints
  (and compares) as 0.3.

>>> round(cosine_phi(0, 100), 4), round(cosine_phi(50, 100), 4), cosine_phi(100, 100)
(0.1, 0.5, 1.0)
>>> adamame_alpha(True, 0.5, beta=2.0), adamame_alpha(False, 0.5, beta=2.0)
(2.0, 1.0)
>>> c = TauCurriculum(interval=2)
>>> c.record(passed=9, eligible=10)
>>> c.maybe_update(2), c.tau
(0.9, 0.2)
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

Reduce = Callable[[Sequence[float]], Sequence[float]]
WINDOWS = ("pooled", "batch")


def cosine_phi(step: int, total_steps: int, floor: float = 0.1) -> float:
    """AdaMame's φ(t): cosine growth from ``floor`` to 1 over ``total_steps``; ``t`` is clamped to [0, T].

    >>> cosine_phi(20, 100)   # (1 - cos(π/5)) / 2 = 0.0955 < 0.1
    0.1
    >>> cosine_phi(5, 0)      # unknown horizon: the schedule is at its start
    0.1
    """
    if total_steps <= 0:
        return floor
    ratio = min(max(step / total_steps, 0.0), 1.0)
    return max((1.0 - math.cos(math.pi * ratio)) / 2.0, floor)


@dataclass(frozen=True)
class PhiSchedule:
    """AdaMame's φ: ``cosine_phi`` from ``floor`` at step 0 to 1 at the trainer's ``max_steps``."""

    floor: float = 0.1

    def at(self, step: int, total_steps: int) -> float:
        return cosine_phi(step, total_steps, self.floor)


def adamame_alpha(matches_query: bool, phi: float, beta: float = 2.0) -> float:
    """AdaMame's α_i(t) = 1 + β·1[lang(o_i) = lang(q)]·φ(t).

    >>> adamame_alpha(True, 1.0)
    3.0
    """
    return 1.0 + beta * float(bool(matches_query)) * phi


@dataclass
class TauCurriculum:
    """PCS's τ schedule with the counts of the current window; JSON-serializable state.

    >>> c = TauCurriculum(tau=0.9, interval=1)
    >>> c.record(passed=1, eligible=1)
    >>> c.maybe_update(1), c.tau
    (1.0, 0.95)
    """

    tau: float = 0.1
    delta: float = 0.1
    maximum: float = 0.95
    interval: int = 40
    threshold: float = 0.9
    window: str = "batch"
    passed: int = 0
    eligible: int = 0
    last_check: int = 0
    last_pass_at_slc: float | None = None
    checks: list[dict] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.interval < 1:
            raise ValueError(f"interval must be >= 1, got {self.interval}")
        if not 0.0 <= self.tau <= self.maximum <= 1.0:
            raise ValueError(f"need 0 <= tau ({self.tau}) <= maximum ({self.maximum}) <= 1")
        if self.window not in WINDOWS:
            raise ValueError(f"unknown window {self.window!r} (known: {', '.join(WINDOWS)})")

    def record(self, passed: int, eligible: int) -> None:
        """One batch: ``eligible`` well-formed correct responses, ``passed`` of them with SLC ≥ τ.

        ``batch`` keeps it alone (the last batch is what a check reads); ``pooled`` adds it to the window.

        >>> c = TauCurriculum()
        >>> c.record(passed=1, eligible=4); c.record(passed=3, eligible=3); c.pass_at_slc()
        1.0
        """
        if not 0 <= passed <= eligible:
            raise ValueError(f"need 0 <= passed ({passed}) <= eligible ({eligible})")
        if self.window == "batch":
            self.passed = self.eligible = 0
        self.passed += int(passed)
        self.eligible += int(eligible)

    def pass_at_slc(self) -> float | None:
        """Pass@SLC(τ) of the current window; ``None`` when nothing was eligible.

        >>> TauCurriculum().pass_at_slc() is None
        True
        """
        return self.passed / self.eligible if self.eligible else None

    def due(self, step: int) -> bool:
        """Whether ``step`` closes a window (a positive multiple of ``interval`` not yet checked)."""
        return step > self.last_check and step % self.interval == 0

    def maybe_update(self, step: int, reduce: Reduce | None = None) -> float | None:
        """At a window boundary, compute Pass@SLC(τ) (summed over ranks by ``reduce``) and maybe raise τ.

        Returns the window's Pass@SLC (``None`` when not due or nothing was eligible).
        """
        if not self.due(step):
            return None
        passed, eligible = float(self.passed), float(self.eligible)
        if reduce is not None:
            passed, eligible = (float(v) for v in reduce([passed, eligible]))
        rate = passed / eligible if eligible > 0 else None
        before = self.tau
        if rate is not None and rate >= self.threshold:
            self.tau = min(round(self.tau + self.delta, 6), self.maximum)
        self.checks.append({"step": step, "pass_at_slc": rate, "eligible": eligible,
                            "tau_before": before, "tau_after": self.tau})
        self.passed = self.eligible = 0
        self.last_check = step
        self.last_pass_at_slc = rate
        return rate

    def state_dict(self) -> dict:
        """Plain-JSON state (settings included, so a restore is self-contained)."""
        return asdict(self)

    def load_state_dict(self, state: dict) -> None:
        """Restore from ``state_dict`` output; unknown keys are an error."""
        known = set(asdict(self))
        unknown = set(state) - known
        if unknown:
            raise ValueError(f"unknown curriculum state keys: {sorted(unknown)}")
        for key, value in state.items():
            setattr(self, key, value)

    def save(self, path: str | Path) -> None:
        """Write the state as JSON."""
        Path(path).write_text(json.dumps(self.state_dict(), indent=1), encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> "TauCurriculum":
        """Read a state written by ``save``."""
        curriculum = cls()
        curriculum.load_state_dict(json.loads(Path(path).read_text(encoding="utf-8")))
        return curriculum
