"""A pilot's budget: the overrides that shrink every stage of a profile to a small, stated part of its work.

The pilot runs the same flows and tasks as the full run, on the same hardware, with
overrides that only cut the amount of work: the data stage translates and traces the
first ``probe`` source queries (a generated set) or caps the kept set at ``probe`` per
language (traces read from a file, whose filter still sees every row); SFT stops after
``sft_steps`` optimizer steps, GRPO after ``grpo_steps`` but at most ``grpo_share`` of the
profile's steps, and never fewer than three, the fewest a slope's interval can be
computed from (every other setting as the profile gives it, so the reward's slope is
measured at its learning rate, LoRA and rewards; trl's scheduler runs its warm-up and
decay over the shorter run). On a short profile three steps are more than the share,
and the budget says so: a pilot that runs most of a stage is not a small sample of it. Each
evaluation benchmark keeps its first ``evaluation_limit`` problems per language (on the transformers
backend at least enough to fill one backend call, ``evaluation_limit()``); the
audit and the registry do not run. The shrunk work gives the tasks other inputs, so
their cache keys differ from the full run's exactly where the work does.

What the budget prints is each stage's part of the full run, read from the plans of both
profiles (``plan_profile``), and its bound: on a GPU profile the pilot's planned GPU-hours
against ``MAX_GPU_SHARE`` of the full plan's upper end. Written here because no library
sizes a trial run of a training recipe.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

MAX_GPU_SHARE = 0.02  # the pilot's planned GPU-hours stay under 2% of the full run's upper end
GRPO_SHARE = 0.10  # the pilot's GRPO steps stay within 10% of the profile's, where that leaves three
MIN_GRPO_STEPS = 3  # a slope's 95% interval needs one degree of freedom: three points


@dataclass(frozen=True)
class PilotSizes:
    """How much of each stage a pilot runs."""

    probe: int = 4  # source queries per language translated and traced (generated sets), or kept (file sets)
    sft_steps: int = 4  # three intervals between logged steps for the steady step time (one is a single batch's)
    grpo_steps: int = 5  # at least 3: the slope's interval needs one degree of freedom
    evaluation_limit: int = 2  # problems per language and benchmark
    grpo_share: float = GRPO_SHARE  # the most of the profile's GRPO steps the pilot runs (above 3 steps)

    def __post_init__(self) -> None:
        if min(self.probe, self.sft_steps, self.evaluation_limit) < 1:
            raise ValueError("pilot sizes must be at least 1 (--probe, --sft-steps, --evaluation-limit)")
        if self.grpo_steps < MIN_GRPO_STEPS:
            raise ValueError("--grpo-steps must be at least 3: a slope's interval needs three points")
        if not 0 < self.grpo_share <= 1:
            raise ValueError("--grpo-share must be in (0, 1]")


def pilot_grpo_steps(profile_steps: int | None, sizes: PilotSizes) -> int:
    """The GRPO steps a pilot runs: ``sizes.grpo_steps``, at most ``grpo_share`` of ``profile_steps`` (rounded
    down), never fewer than three. A profile without a step count (epochs) gets ``grpo_steps``.

    >>> pilot_grpo_steps(800, PilotSizes()), pilot_grpo_steps(40, PilotSizes()), pilot_grpo_steps(6, PilotSizes())
    (5, 4, 3)
    """
    if profile_steps is None:
        return sizes.grpo_steps
    share = math.floor(sizes.grpo_share * profile_steps + 1e-9)  # 0.29 x 100 is 28.999...: the share is 29
    return max(MIN_GRPO_STEPS, min(sizes.grpo_steps, share))


def grpo_share_note(profile_steps: int | None, sizes: PilotSizes) -> str | None:
    """The budget's line when the three steps a slope needs are more than ``grpo_share`` of the profile's."""
    if profile_steps is None or MIN_GRPO_STEPS <= sizes.grpo_share * profile_steps + 1e-9:
        return None
    steps = min(MIN_GRPO_STEPS, profile_steps)
    return (f"grpo: {steps} of the profile's {profile_steps} steps ({steps / profile_steps:.0%}), above the "
            f"{sizes.grpo_share:.0%} share a pilot aims at: a slope's interval needs {MIN_GRPO_STEPS} points, so "
            "the pilot runs this much of the stage, not a small sample of it")


@dataclass(frozen=True)
class Shrink:
    """One override of the pilot and what it cuts (``stage``: the recipe stage it shrinks)."""

    stage: str
    key: str
    value: int

    @property
    def override(self) -> str:
        return f"{self.key}={self.value}"


def _smaller(key: str, stage: str, size: int, current: int | None) -> list[Shrink]:
    """An override to ``size`` unless the profile already asks for no more than that."""
    return [] if current is not None and current <= size else [Shrink(stage, key, size)]


def shrinks(profile: Any, sizes: PilotSizes) -> list[Shrink]:
    """The overrides that cut ``profile``'s work to ``sizes`` (only for the sections it has)."""
    out: list[Shrink] = []
    data = profile.data
    if data is not None and data.traces.from_file:
        out += _smaller("data.traces.per_language", "data", max(sizes.probe, rollout_fill(profile)),
                        data.traces.per_language)
    elif data is not None:
        out += _smaller("data.source.limit", "data", sizes.probe, data.source.limit)
    if profile.sft is not None:
        out += _smaller("sft.max_steps", "sft", sizes.sft_steps, max_steps(profile.sft))
    if profile.grpo is not None:
        steps = max_steps(profile.grpo)
        out += _smaller("grpo.max_steps", "grpo", pilot_grpo_steps(steps, sizes), steps)
    limit = evaluation_limit(profile.evaluation, sizes) if profile.evaluation else sizes.evaluation_limit
    for index, benchmark in enumerate(profile.evaluation.benchmarks if profile.evaluation else []):
        out += _smaller(f"evaluation.benchmarks.{index}.limit", "evaluation", limit, benchmark.limit)
    return out


def rollout_fill(profile: Any) -> int:
    """Kept traces per language that fill one backend call of the rejection rollouts on the transformers backend
    (0 elsewhere, or without rollouts): capping a file's traces costs nothing, and a short call would project
    the full run's full ones too low (as ``evaluation_limit`` says). A generated set's size is not known
    before its filter has run, so it is not raised.

    >>> from components.config import load_profile
    >>> rollout_fill(load_profile("profiles/cpu-demo.yaml", trl_checks=()))  # 32 prompts a call, 1 rollout, 4 languages
    8
    """
    from components.data.rejection import get_strategy
    from components.planning.generation_plan import rejection_policy

    policy = rejection_policy(profile)
    if policy is None or policy.backend != "transformers":
        return 0
    data, rejection = profile.data, profile.data.rejection
    rollouts = get_strategy(rejection.strategy).rollouts(rejection.sampling.n)
    return _calls_filled(rejection.sampling.batch_size, rollouts * len(data.languages)) if rollouts else 0


def _calls_filled(batch_size: int, completions_per_item: int) -> int:
    """Items per language that fill one backend call: ``batch_size`` completions over what one item makes."""
    return math.ceil(batch_size / max(completions_per_item, 1))


def evaluation_limit(evaluation: Any, sizes: PilotSizes) -> int:
    """Problems per language and benchmark of the pilot's evaluation: ``sizes.evaluation_limit``, raised on the
    transformers backend until one model's prompts fill one backend call (``sampling.batch_size`` completions over
    every benchmark's languages). A call of a short batch is cheaper than a full one, but not in proportion (on
    this CPU 16 prompts took 17 s a call, 32 took 25 s), so a pilot of short calls projected the full run's
    full ones too low; with full calls the pilot's share of the calls is its share of the time.

    >>> from types import SimpleNamespace as NS
    >>> demo = NS(model=NS(backend="transformers"), sampling=NS(batch_size=32, n=1),
    ...           benchmarks=[NS(languages=["en", "fr", "ja", "th"])])
    >>> evaluation_limit(demo, PilotSizes()), evaluation_limit(NS(**{**vars(demo), "model": NS(backend="vllm")}),
    ...                                                         PilotSizes())
    (8, 2)
    """
    if evaluation.model.backend != "transformers":
        return sizes.evaluation_limit  # vLLM and servers batch continuously: completions are the work
    languages = sum(len(benchmark.languages) or 1 for benchmark in evaluation.benchmarks) or 1
    return max(sizes.evaluation_limit, _calls_filled(evaluation.sampling.batch_size,
                                                     languages * max(evaluation.sampling.n, 1)))


def max_steps(section: Any) -> int | None:
    """A trainer section's ``max_steps``; ``None`` when it trains by epochs (``-1``, trl's default)."""
    steps = getattr(section, "max_steps", -1)
    return None if steps is None or steps < 0 else steps


PILOT_STAGES = ("data", "sft", "rejection", "grpo", "evaluation")  # audit and registry add nothing to measure


@dataclass(frozen=True)
class StageShare:
    """One stage's part of the full run: the pilot's and the full plan's count of its unit of work."""

    stage: str
    unit: str
    pilot: float | None
    full: float | None

    @property
    def share(self) -> float | None:
        return None if not self.pilot or not self.full else self.pilot / self.full

    @property
    def whole(self) -> bool:
        """Whether the pilot runs this stage's whole work (it has no count of its own)."""
        return self.pilot is None

    def text(self) -> str:
        if self.whole:
            return f"{self.stage}: the whole stage, as the profile gives it"
        if self.full is None:
            return f"{self.stage}: {self.pilot:,.0f} {self.unit} (the full run's count is not planned)"
        return f"{self.stage}: {self.pilot:,.0f} of {self.full:,.0f} {self.unit} ({self.share:.0%})"


# the unit of work of each stage in the plan's values: the first one a stage's plan has
# (traces read from a file have none: the pilot filters the whole file, as the full run does)
# (a generation on the transformers backend is counted in its backend calls: a call's time grows far less than
# its batch on a CPU, so a pilot of one full call of 32 of 64 prompts measured 1 of 2 calls, and the pilot fills
# its calls, ``evaluation_limit``)
UNITS = {"data": (("traces_completions", "teacher traces"),),
         "sft": (("optimizer_steps", "optimizer steps"),),
         "rejection": (("rollouts_batches", "rollout batches"), ("rollouts_completions", "rollouts")),
         "grpo": (("optimizer_steps", "optimizer steps"),),
         "evaluation": (("generation_batches", "generation batches"), ("generation_completions", "completions"))}


def work_of(stage: str, values: dict[str, Any]) -> tuple[str, float | None]:
    """The unit and count of a stage's work in its plan's values.

    >>> work_of("sft", {"optimizer_steps": 16}), work_of("data", {"traces": 32})
    (('optimizer steps', 16.0), ('units', None))
    """
    for key, unit in UNITS.get(stage, ()):
        if values.get(key) is not None:
            return unit, float(values[key])
    return "units", None


def stage_shares(pilot_values: dict[str, dict], full_values: dict[str, dict]) -> list[StageShare]:
    """Each stage's share, from the ``values`` of the pilot's and the full plan's stages."""
    out = []
    for stage in PILOT_STAGES:
        if stage in full_values:
            unit, full = work_of(stage, full_values[stage])
            out.append(StageShare(stage, unit, work_of(stage, pilot_values.get(stage, {}))[1], full))
    return out


@dataclass(frozen=True)
class Budget:
    """What the pilot runs and its bound: the shares, the pilot's and the full plan's GPU-hours (upper ends)."""

    shares: list[StageShare]
    overrides: list[str]
    pilot_gpu_hours: float | None = None
    full_gpu_hours: float | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def bound(self) -> float | None:
        return None if self.full_gpu_hours is None else MAX_GPU_SHARE * self.full_gpu_hours

    @property
    def over_bound(self) -> bool:
        return self.bound is not None and self.pilot_gpu_hours is not None and self.pilot_gpu_hours > self.bound

    def lines(self) -> list[str]:
        """The budget as a person reads it before the pilot starts."""
        out = ["pilot budget (the same flows, with these overrides: " + (" ".join(self.overrides) or "none") + ")"]
        out += [f"  {share.text()}" for share in self.shares]
        if self.bound is not None and self.pilot_gpu_hours is not None:
            verdict = "over" if self.over_bound else "within"
            out.append(f"  bound: {self.pilot_gpu_hours:,.2f} GPU-hours planned, {verdict} {MAX_GPU_SHARE:.0%} of the "
                       f"full plan's upper end ({self.full_gpu_hours:,.1f} -> {self.bound:,.2f}; estimate)")
        else:
            out.append("  bound: a CPU profile has no GPU-hours estimate; the pilot runs the shares above, a few "
                       "minutes on the CPU twins")
        return out + [f"  {note}" for note in self.notes]
