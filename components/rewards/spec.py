"""A reward's spec: everything the project knows about one GRPO reward, owned by the module that defines it.

Each reward module ends with one ``RewardSpec`` and the package registers it with one line
(``components.rewards.REWARDS``); the profile loader, the plan, the pilot and the trainer read
the spec, so nothing else lists rewards or their facts:

* ``factory``: the reward class; its keyword-only parameters are the profile's ``params``
  (a misspelled one is refused by name when the profile loads), their defaults the values
  every other field below is computed with, and an optional ``parameter_problems(params)``
  refuses parameters that cannot do what they say together.
* ``range``: the floor and ceiling of the reward's value under its parameters. A flat reward
  at its ceiling has no headroom (the start point is too good) and one below it could rise
  and does not: the pilot tells them apart with it, and the plan prints it. Required: a
  reward registered without a range cannot be planned.
* ``parts``: the components the reward logs (trl's ``log_metric``) whose sum is the reward
  exactly, each with its range, so a reward made of a saturated part and a part stuck at its
  floor is seen as such. This is torchtune's reward output (a total returned with the named
  rewards it is the sum of, each logged) in trl's terms: the function returns the total and
  logs its parts.
* ``columns``: the dataset columns the reward reads besides ``gold`` and ``lang``; the trainer
  keeps them in the rows it hands trl (which passes every column to the reward functions).
* ``curriculum``: the schedule the reward moves along during training, for the plan to check
  before any run: a ``TauCurriculum`` (PCS's τ) or a ``PhiSchedule`` (AdaMame's φ), else ``None``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

Params = Mapping[str, Any]


@dataclass(frozen=True)
class RewardRange:
    """A reward's floor and ceiling; ``None`` for an end that is unknown, ``note`` saying why.

    >>> (RewardRange(0.0, 1.0).scaled(-2.0) + RewardRange(0.0, 1.1)).text()
    '[-2, 1.1]'
    """

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


def _nothing(params: Params) -> Any:
    return None


def _no_parts(params: Params) -> dict[str, RewardRange]:
    return {}


def _no_columns(params: Params) -> tuple[str, ...]:
    return ()


@dataclass(frozen=True)
class RewardSpec:
    """One reward (see the module docstring); every callable takes the parameters with the factory's defaults."""

    name: str
    factory: Callable[..., Any]
    range: Callable[[Params], RewardRange]
    parts: Callable[[Params], dict[str, RewardRange]] = _no_parts
    columns: Callable[[Params], tuple[str, ...]] = _no_columns
    curriculum: Callable[[Params], Any] = _nothing

    def parameters(self) -> list[str]:
        """The factory's keyword-only parameters (``languages`` is filled in by ``build``)."""
        signature = inspect.signature(self.factory)
        return [p.name for p in signature.parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY]

    def full(self, params: Params | None = None) -> dict[str, Any]:
        """``params`` over the factory's defaults: the values the reward is built with."""
        signature = inspect.signature(self.factory)
        defaults = {p.name: p.default for p in signature.parameters.values()
                    if p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is not inspect.Parameter.empty}
        return {**defaults, **(params or {})}

    def problems(self, params: Params) -> list[str]:
        """Parameters the factory does not take, those it refuses together (its ``parameter_problems``), and a
        range the parameters leave undefined, as readable lines (checked when a profile loads)."""
        known = self.parameters()
        unknown = [f"unknown parameter {key!r} for reward {self.name!r} (known: {', '.join(known)})"
                   for key in params if key not in known]
        together = getattr(self.factory, "parameter_problems", None)
        problems = unknown + [f"params: {line}" for line in (together(params) if together else [])]
        if problems:
            return problems
        try:
            self.range(self.full(params))
        except (TypeError, ValueError, KeyError) as error:
            return [f"params: reward {self.name!r} has no range with these parameters ({error})"]
        return []

    def build(self, params: Params | None = None, languages: Iterable[str] = ()) -> Any:
        """The reward; ``languages`` (the dataset's) widen its language detector."""
        params = dict(params or {})
        problems = self.problems(params)
        if problems:
            raise ValueError("; ".join(problems))
        if "languages" in self.parameters():
            params["languages"] = sorted(set(params.get("languages", ())) | set(languages))
        return self.factory(**params)
