"""When a reward's curriculum can move in the planned steps, and what warm-up the scheduler applies.

Each reward's curriculum is the one its spec names under its parameters (``components.rewards.spec``),
so the plan knows no reward by name.

* τ (PCS): the reward's ``TauCurriculum`` (the object the trainer checks and
  checkpoints, built from the same parameters) is stepped through the planned run as if every check passed:
  a check at optimizer step ``s`` (a multiple of ``tau_interval``) raises τ for
  the rollouts scored after it, so the checks that can change training are those
  before the last step. The largest τ it reaches is the most the run can reach;
  below the reward's stated maximum, the curriculum cannot do what it says.
* φ (AdaMame, a ``PhiSchedule``): ``cosine_phi`` over the trainer's ``max_steps`` always ends at
  1; the plan says from which step φ leaves its floor.
* warm-up: ``TrainingArguments.get_warmup_steps`` of the planned total (what
  the scheduler receives); a warm-up as long as the run never reaches the peak
  learning rate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TauPlan:
    """A τ curriculum over the planned steps, at best (every check passing)."""

    reward: int  # index in grpo.rewards
    start: float
    maximum: float
    interval: int
    effective_checks: int  # checks before the last step
    rises_needed: int
    reachable: float

    @property
    def steps_needed(self) -> int:
        """Optimizer steps for ``rises_needed`` rises (the last rise must come before the last step)."""
        return self.rises_needed * self.interval + 1


def curricula(rewards: list[Any]) -> dict[int, Any]:
    """The curriculum of every reward that has one (its spec's, under its parameters), by its index in
    ``grpo.rewards``: a ``TauCurriculum`` or a ``PhiSchedule``."""
    from components.rewards import reward_spec

    found = {}
    for index, reward in enumerate(rewards):
        spec = reward_spec(reward.name)
        schedule = spec.curriculum(spec.full(reward.params))
        if schedule is not None:
            found[index] = schedule
    return found


def reward_ranges(rewards: list[Any]) -> tuple[str, Any]:
    """The plan's line on trl's total reward: its range, the weighted sum of each reward's (from its spec), and
    the total's ``RewardRange``."""
    from components.rewards.ranges import reward_range, total_range

    weighted = [(r.name, r.weight, r.params) for r in rewards]
    total = total_range(weighted)
    terms = " + ".join(f"{weight:g} × {name} {reward_range(name, params).text()}" for name, weight, params in weighted)
    return f"{total.text()} = {terms}", total


def tau_plan(index: int, curriculum: Any, total_steps: int) -> TauPlan:
    """Step a copy of ``curriculum`` through ``total_steps`` with every check passing."""
    from components.rewards.curriculum import TauCurriculum

    best = TauCurriculum(**{k: v for k, v in curriculum.state_dict().items() if k != "checks"})
    start, checks = best.tau, 0
    for step in range(best.interval, total_steps, best.interval):  # checks strictly before the last step
        best.record(passed=1, eligible=1)
        best.maybe_update(step)
        checks += 1
    reachable = best.tau
    ladder = TauCurriculum(tau=start, delta=best.delta, maximum=best.maximum, interval=1)
    rises = 0
    while ladder.tau < ladder.maximum and rises < 10_000:
        ladder.record(passed=1, eligible=1)
        ladder.maybe_update(rises + 1)
        rises += 1
    return TauPlan(reward=index, start=start, maximum=best.maximum, interval=best.interval,
                   effective_checks=checks, rises_needed=rises, reachable=reachable)


def phi_start(total_steps: int, floor: float) -> int | None:
    """The first step at which AdaMame's φ is above ``floor`` (``None``: never, in ``total_steps``)."""
    from components.rewards.curriculum import cosine_phi

    return next((t for t in range(total_steps + 1) if cosine_phi(t, total_steps, floor) > floor), None)
