"""GRPO reward registry: name -> ``RewardSpec`` (``components.rewards.spec``), one line per reward.

Every reward follows trl's contract ``(prompts, completions, **columns) ->
list[float | None]`` (see ``components.rewards.accuracy``) and carries a
``__name__`` that trl uses for its ``rewards/<name>/mean`` metrics. Its module
ends with its spec (factory, range, logged parts, dataset columns, curriculum);
a reward with curriculum state also exposes it as ``.curriculum`` (a
``TauCurriculum``), which the training entry point hands to ``CurriculumCallback``
to be checkpointed. ``reward_problems`` is the one check of a reward's name and
parameters: the profile loader runs it (through ``components.catalog``) and so does
``build_reward``.

>>> build_reward("softlc", {"bonus": 0.2}, languages=["fr"]).bonus
0.2
>>> reward_problems("pcs", {"tau_strat": 0.2})[0].startswith("unknown parameter 'tau_strat'")
True
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from components.rewards import accuracy, adamame, lcrl, mthinker, pcs, softlc
from components.rewards.spec import RewardSpec

REWARDS: dict[str, RewardSpec] = {spec.name: spec for spec in (
    accuracy.SPEC,
    adamame.SPEC,
    lcrl.SPEC,
    mthinker.SPEC,
    pcs.SPEC,
    softlc.SPEC,
)}


def reward_spec(name: str) -> RewardSpec:
    """The spec of reward ``name``; ``ValueError`` naming the known ones."""
    if name not in REWARDS:
        raise ValueError(f"unknown reward {name!r} (known: {', '.join(sorted(REWARDS))})")
    return REWARDS[name]


def reward_problems(name: str, params: Mapping[str, Any]) -> list[str]:
    """An unknown reward, parameters its factory does not take or refuses together, and a range its parameters
    leave undefined, as readable lines (``RewardSpec.problems``)."""
    try:
        return reward_spec(name).problems(params)
    except ValueError as error:
        return [str(error)]


def reward_columns(name: str, params: Mapping[str, Any] | None = None) -> tuple[str, ...]:
    """The dataset columns reward ``name`` reads besides ``gold`` and ``lang`` (its spec's)."""
    spec = reward_spec(name)
    return spec.columns(spec.full(params))


def build_reward(name: str, params: Mapping[str, Any] | None = None, *, languages: Iterable[str] = ()) -> Any:
    """Instantiate reward ``name``; ``languages`` (the dataset's) widen its language detector."""
    return reward_spec(name).build(params, languages)
