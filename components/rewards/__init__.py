"""GRPO reward registry: name -> factory with explicit keyword parameters (a misspelled parameter fails at load).

Every reward follows trl's contract ``(prompts, completions, **columns) ->
list[float | None]`` (see ``components.rewards.accuracy``) and carries a
``__name__`` that trl uses for its ``rewards/<name>/mean`` metrics. A reward
with curriculum state exposes it as ``.curriculum`` (a ``TauCurriculum``); the
training entry point hands it to ``CurriculumCallback`` to be checkpointed.

>>> sorted(REWARDS)
['accuracy', 'adamame', 'lcrl', 'mthinker', 'pcs', 'softlc']
>>> build_reward("softlc", {"bonus": 0.2}, languages=["fr"]).bonus
0.2
>>> reward_parameter_problems("pcs", {"tau_strat": 0.2})[0].startswith("unknown parameter 'tau_strat'")
True
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from components.rewards.accuracy import AccuracyReward
from components.rewards.adamame import AdaMameReward
from components.rewards.lcrl import LcRLReward
from components.rewards.mthinker import MThinkerReward
from components.rewards.pcs import PCSReward
from components.rewards.softlc import SoftLCReward

REWARDS: dict[str, Callable[..., Any]] = {
    "accuracy": AccuracyReward,
    "adamame": AdaMameReward,
    "lcrl": LcRLReward,
    "mthinker": MThinkerReward,
    "pcs": PCSReward,
    "softlc": SoftLCReward,
}


def reward_parameters(name: str) -> list[str]:
    """Keyword parameters the factory of ``name`` accepts (``languages`` is filled in by ``build_reward``)."""
    signature = inspect.signature(REWARDS[name])
    return [p.name for p in signature.parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY]


def reward_parameter_problems(name: str, params: Mapping[str, Any]) -> list[str]:
    """Unknown reward name or parameters, and parameters its factory refuses together (its
    ``parameter_problems``, when it has one), as readable lines (checked when a profile loads)."""
    if name not in REWARDS:
        return [f"unknown reward {name!r} (known: {', '.join(sorted(REWARDS))})"]
    known = reward_parameters(name)
    problems = [f"unknown parameter {key!r} for reward {name!r} (known: {', '.join(known)})"
                for key in params if key not in known]
    together = getattr(REWARDS[name], "parameter_problems", None)
    return problems + [f"reward {name!r}: {line}" for line in (together(params) if together else [])]


def build_reward(name: str, params: Mapping[str, Any] | None = None, *, languages: Iterable[str] = ()) -> Any:
    """Instantiate reward ``name``; ``languages`` (the dataset's) widen its language detector."""
    params = dict(params or {})
    problems = reward_parameter_problems(name, params)
    if problems:
        raise ValueError("; ".join(problems))
    if "languages" in reward_parameters(name):
        params["languages"] = sorted(set(params.get("languages", ())) | set(languages))
    return REWARDS[name](**params)
