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

import sys
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


def reward_listing() -> list[str]:
    """Every registered reward as its spec describes it, two lines each: its name, its module and the first line of
    the module's docstring; its parameters' defaults, its range, its logged parts, its columns and its curriculum.
    ``python -m components.rewards`` prints it; ``docs/code-map.md`` points here instead of a line per reward."""
    lines = []
    for name, spec in sorted(REWARDS.items()):
        params = spec.full({})
        doc = (sys.modules[spec.factory.__module__].__doc__ or "").strip().splitlines()
        parts = ", ".join(f"{key} {part.text()}" for key, part in spec.parts(params).items()) or "none"
        curriculum = spec.curriculum(params)
        lines += [f"{name:<9} {spec.factory.__module__.replace('.', '/')}.py: {doc[0] if doc else '(no docstring)'}",
                  f"{'':<9} params {', '.join(f'{k}={v!r}' for k, v in params.items()) or 'none'}; "
                  f"range {spec.range(params).text()}; parts {parts}; columns {', '.join(spec.columns(params)) or 'none'}; "
                  f"curriculum {type(curriculum).__name__ if curriculum is not None else 'none'}"]
    return lines
