"""The range of a profile's rewards under the names the pilot reads, from each reward's spec.

A flat reward means two different things depending on its level. At its ceiling it has no headroom:
every rollout already earns the most the reward pays, GRPO's groups agree, and nothing is left to
learn; that says the start point is too good, not that the settings are wrong. Below its ceiling a
flat reward is one that could rise and does not at the profile's settings. The pilot needs the
ceiling to tell these apart; each reward states its range and its parts in its spec
(``components.rewards.spec``), next to the definitions they are computed from.

trl's total reward is the weighted sum of the reward functions (its ``reward_weights``), so its range
is the weighted sum of theirs; a negative weight swaps a range's ends. Parts: the components a reward
logs whose sum is exactly the reward (SoftLC: ``reward/accuracy`` + ``reward/language_bonus``), each
with its own range. A part is named only when the profile has that one reward function: with two,
their ``reward/accuracy`` share one metric and neither is the part of one sum.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from components.rewards import reward_spec
from components.rewards.spec import RewardRange

__all__ = ["TOTAL", "RewardRange", "ranges_by_key", "reward_parts", "reward_range", "total_range"]

TOTAL = "reward"  # trl's weighted sum, as the pilot names it (``grpo/`` removed)


def reward_range(name: str, params: Mapping[str, Any] | None = None) -> RewardRange:
    """The range of the reward ``name`` with ``params`` (its spec's, at the factory's defaults for the rest).

    >>> reward_range("softlc", {"bonus": 0.1}).text(), reward_range("pcs").text()
    ('[0, 1.1]', '[0, 1.1]')
    """
    spec = reward_spec(name)
    return spec.range(spec.full(params))


def reward_parts(name: str, params: Mapping[str, Any] | None = None) -> dict[str, RewardRange]:
    """The logged parts whose sum is the reward ``name`` exactly, with their ranges (empty: none stated)."""
    spec = reward_spec(name)
    return spec.parts(spec.full(params))


def total_range(rewards: Sequence[tuple[str, float, Mapping[str, Any]]]) -> RewardRange | None:
    """The range of trl's weighted sum of ``(name, weight, params)`` rewards (``None`` without rewards)."""
    total = None
    for name, weight, params in rewards:
        part = reward_range(name, params).scaled(weight)
        total = part if total is None else total + part
    return total


def ranges_by_key(rewards: Sequence[tuple[str, float, Mapping[str, Any]]]) -> dict[str, RewardRange]:
    """The ranges under the pilot's names for ``(name, weight, params)`` rewards: the total (``reward``),
    each function's mean (trl's ``rewards/<name>/mean``) and, for a single function, its parts.

    >>> ranges = ranges_by_key([("accuracy", 1.0, {}), ("softlc", 0.5, {"bonus": 0.1})])
    >>> ranges["reward"].text(), ranges["rewards/softlc/mean"].text(), "reward/accuracy" in ranges
    ('[0, 1.55]', '[0, 1.1]', False)
    """
    out = {f"rewards/{name}/mean": reward_range(name, params) for name, _, params in rewards}
    total = total_range(rewards)
    if total is not None:
        out[TOTAL] = total
    if len(rewards) == 1:
        out.update(reward_parts(rewards[0][0], rewards[0][2]))
    return out
