"""The range of each reward's value, its floor and its ceiling, read off the reward's own definition.

A flat reward means two different things depending on its level. At its ceiling it has no headroom:
every rollout already earns the most the reward pays, GRPO's groups agree, and nothing is left to
learn; that says the start point is too good, not that the settings are wrong. Below its ceiling a
flat reward is one that could rise and does not at the profile's settings. The pilot needs the
ceiling to tell these apart, so each reward states its range here, next to the definitions it is
computed from (a reward added to the registry without a range has an unknown one, and says so).

trl's total reward is the weighted sum of the reward functions (its ``reward_weights``), so its range
is the weighted sum of theirs; a negative weight swaps a range's ends. Parts: the components a reward
logs whose sum is exactly the reward (SoftLC: ``reward/accuracy`` + ``reward/language_bonus``), each
with its own range, so a reward made of a saturated part and a part stuck at its floor is seen as
such. A part is named only when the profile has that one reward function: with two, their
``reward/accuracy`` share one metric and neither is the part of one sum.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

TOTAL = "train/reward"  # trl's weighted sum, as the pilot names it (``grpo/`` removed)


@dataclass(frozen=True)
class RewardRange:
    """A reward's floor and ceiling; ``None`` for an end that is unknown, ``note`` saying why."""

    low: float | None
    high: float | None
    note: str = ""

    def scaled(self, weight: float) -> RewardRange:
        """The range of ``weight`` times the reward (a negative weight swaps the ends)."""
        ends = [None if end is None else weight * end + 0.0 for end in (self.low, self.high)]  # + 0.0: no -0
        return RewardRange(*(ends if weight >= 0 else ends[::-1]), note=self.note)

    def __add__(self, other: RewardRange) -> RewardRange:
        add = lambda a, b: None if a is None or b is None else a + b  # noqa: E731
        return RewardRange(add(self.low, other.low), add(self.high, other.high),
                           "; ".join(n for n in (self.note, other.note) if n))

    def text(self) -> str:
        end = lambda v: "unknown" if v is None else f"{v:g}"  # noqa: E731
        return f"[{end(self.low)}, {end(self.high)}]" + (f" ({self.note})" if self.note else "")


def _pcs(params: Mapping[str, Any]) -> RewardRange:
    from components.rewards.pcs import pcs_continuous_reward, pcs_final_reward

    if params.get("slc_reward", "curriculum") == "continuous":  # 1 + 0.1 · SLC at SLC = 1
        return RewardRange(0.0, pcs_continuous_reward(True, True, True, 1.0))
    return RewardRange(0.0, pcs_final_reward(True, True, True, True))  # gated, correct, SLC passed: 1.1


def _softlc(params: Mapping[str, Any]) -> RewardRange:
    bonus = float(params.get("bonus", 0.1))  # r_acc + bonus · match, both 0 or 1: {0, bonus, 1, 1 + bonus}
    return RewardRange(min(0.0, bonus), max(1.0, 1.0 + bonus))


def _mthinker(params: Mapping[str, Any]) -> RewardRange:
    # R_lc ∈ {−1, 0} + R_acc ∈ {0, 1} + R_cta ∈ [0, 1], the last only with a judge (its score is refused above 1)
    return RewardRange(-1.0, 2.0 if params.get("judge") is not None else 1.0)


def _adamame(params: Mapping[str, Any]) -> RewardRange:
    beta = float(params.get("beta", 2.0))
    return RewardRange(0.0, None, f"its ceiling 1 + {beta:g}·φ(t) grows with the step; 1 + {beta:g} at the last")


RANGES = {
    "accuracy": lambda params: RewardRange(0.0, 1.0),  # 1(answer = gold)
    "lcrl": lambda params: RewardRange(0.0, 1.0),  # max(0, c3Recall or EM ≤ 1, plus a penalty ≤ 0)
    "softlc": _softlc,
    "pcs": _pcs,
    "mthinker": _mthinker,
    "adamame": _adamame,
}


def reward_range(name: str, params: Mapping[str, Any] | None = None) -> RewardRange:
    """The range of the reward ``name`` with ``params``.

    >>> reward_range("softlc", {"bonus": 0.1}).text(), reward_range("pcs").text()
    ('[0, 1.1]', '[0, 1.1]')
    """
    known = RANGES.get(name)
    return known(params or {}) if known else RewardRange(None, None, f"no range is stated for reward {name!r}")


def reward_parts(name: str, params: Mapping[str, Any] | None = None) -> dict[str, RewardRange]:
    """The logged parts whose sum is the reward ``name`` exactly, with their ranges (empty: none stated)."""
    if name != "softlc":
        return {}
    bonus = float((params or {}).get("bonus", 0.1))
    return {"reward/accuracy": RewardRange(0.0, 1.0), "reward/language_bonus": RewardRange(min(0.0, bonus),
                                                                                           max(0.0, bonus))}


def ranges_by_key(rewards: Sequence[tuple[str, float, Mapping[str, Any]]]) -> dict[str, RewardRange]:
    """The ranges under the pilot's names for ``(name, weight, params)`` rewards: the total (``train/reward``),
    each function's mean (trl's ``rewards/<name>/mean``) and, for a single function, its parts.

    >>> ranges = ranges_by_key([("accuracy", 1.0, {}), ("softlc", 0.5, {"bonus": 0.1})])
    >>> ranges["train/reward"].text(), ranges["rewards/softlc/mean"].text(), "reward/accuracy" in ranges
    ('[0, 1.55]', '[0, 1.1]', False)
    """
    out = {f"rewards/{name}/mean": reward_range(name, params) for name, _, params in rewards}
    total = None
    for name, weight, params in rewards:
        part = reward_range(name, params).scaled(weight)
        total = part if total is None else total + part
    if total is not None:
        out[TOTAL] = total
    if len(rewards) == 1:
        out.update(reward_parts(rewards[0][0], rewards[0][2]))
    return out
