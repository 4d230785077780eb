"""What a pilot measured against what the plan assumed: data yield, the reward's slope, and the run's time.

* Data yield: each language's translation-gate and trace-filter retention with its 95% Wilson
  interval (``components.metrics.intervals.wilson``, which holds at 0, 1 and small n), and the
  kept set the full run projects from them: the full run's queries times both rates, at the
  intervals' ends, never above the target (``per_language``, or every query without a cap).
  A language whose upper end is below ``min_share`` of its target is refused, as the data
  stage's own probe refuses it (``components.data.trace_yield``).
* The reward's slope per GRPO step: an ordinary least-squares line through the logged
  per-step means (``scipy.stats.linregress``) with its 95% interval, slope ± t(0.975, n − 2) ×
  its standard error, and its level: the first step's value and the mean over the steps with
  its 95% t interval, against the reward's range (``components.rewards.ranges``). A flat slope
  (its interval holds 0) is read by the level. At the ceiling (a first step's value, a mean or a
  last step's value within 5% of the range below it: a stated tolerance, since with three steps the mean's interval is
  wide enough to reach the ceiling from far below it), or made of parts each either at its ceiling or flat at
  its floor with one at least at its ceiling, the reward is saturated: the pilot started or ended where nothing is
  left to gain, so the
  slope measures nothing about the settings, and the verdict says so without refusing. Below
  the ceiling, or with an unknown ceiling, a flat reward is one the run would spend its steps
  on without a measurable signal: refused, naming the keys that change that.
* Time: each stage's measured wall time split into its fixed part (process start, model
  loading) and its work (trl's ``train_runtime``, the generation backend's seconds), the work
  scaled by the full run's share (``components.planning.pilot.StageShare``), next to the
  plan's range; a training stage with a step clock adds the steps it did not run at its steady
  step time (``steady_step_seconds``) instead. A stage without a measured work time is scaled
  whole (an upper end).

Written here because no library projects a trial run onto its full run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from components.metrics.intervals import wilson
from components.planning.pilot import StageShare
from components.rewards.ranges import TOTAL, RewardRange

HEADROOM_SHARE = 0.05  # a mean within 5% of its range of an end is at that end (0.105 of [0, 1.1] at 1.1)


@dataclass(frozen=True)
class Retention:
    """One filter's retention in one language: ``kept`` of ``total``."""

    kept: int
    total: int

    @property
    def rate(self) -> float:
        return self.kept / self.total if self.total else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.rate, self.total) if self.total else (0.0, 1.0)

    def text(self) -> str:
        low, high = self.interval
        return f"{self.kept}/{self.total} {self.rate:.0%} [{low:.0%}, {high:.0%}]"


@dataclass(frozen=True)
class Projection:
    """One language's projected SFT set: the full run's ``queries`` through both filters, against ``target``."""

    language: str
    traces: Retention
    queries: int
    target: int
    translation: Retention | None = None

    def _size(self, translation: float, traces: float) -> int:
        return min(self.target, int(self.queries * translation * traces))

    @property
    def size(self) -> int:
        return self._size(self.translation.rate if self.translation else 1.0, self.traces.rate)

    @property
    def interval(self) -> tuple[int, int]:
        gate = self.translation.interval if self.translation else (1.0, 1.0)
        return self._size(gate[0], self.traces.interval[0]), self._size(gate[1], self.traces.interval[1])

    def short_of(self, min_share: float) -> bool:
        return self.interval[1] < min_share * self.target

    def problem(self, min_share: float) -> str:
        low, high = self.interval
        gate = f"translation {self.translation.text()}, " if self.translation else ""
        keys = "data.translation.model, " if self.translation else ""
        return (f"data: {self.language}: projected {low:,}–{high:,} traces of target {self.target:,} "
                f"({gate}traces {self.traces.text()}), below data.traces.early_stop.min_share {min_share:g}; "
                f"change {keys}data.traces.model, data.traces.prompt or data.traces.language_filter, "
                "or lower data.traces.per_language")


def projection_from_counts(language: str, counts: dict[str, float], queries: int | None, target: int | None,
                           translated: bool) -> Projection:
    """One language's projection from the data stage's logged counts (``data/translation/accepted|rejected/<lang>``,
    ``data/traces/kept|total/<lang>``). ``queries``: the full run's queries in the language (``None`` for traces
    read from a file: the file's own rows, i.e. the traces' total); ``target``: ``per_language`` (``None``: every
    query), never above the queries; the gate only where the run translates."""
    count = lambda key: int(counts.get(f"data/{key}/{language}", 0))  # noqa: E731
    accepted = count("translation/accepted")
    gate = Retention(accepted, accepted + count("translation/rejected"))
    traces = Retention(count("traces/kept"), count("traces/total"))
    total = queries or traces.total
    return Projection(language, traces, total, min(target, total) if target else total, gate if translated else None)


def reward_keys(metric_names: list[str], reward: str, parts: tuple[str, ...] = ()) -> list[str]:
    """The reward's key, then each reward function's mean (trl's ``rewards/<name>/mean``, under ``grpo/``), then
    the logged ``parts`` (``reward/<part>``, under ``grpo/``) that are among the metrics."""
    means = sorted(k for k in metric_names if k.startswith("grpo/rewards/") and k.endswith("/mean"))
    return [reward, *means, *(f"grpo/{part}" for part in parts if f"grpo/{part}" in metric_names)]


def grpo_throughput(optimizer_steps: int | None, completions: int | None, runtime_s: float | None,
                    mean_lengths: list[float]) -> dict[str, float]:
    """GRPO's optimizer steps and completion tokens per second of trl's ``train_runtime``: each logged step's mean
    completion length times the completions one step trains on."""
    if not runtime_s or not optimizer_steps:
        return {}
    out = {"grpo_steps_per_s": optimizer_steps / runtime_s}
    per_step = (completions or 0) / optimizer_steps
    if mean_lengths and per_step:
        out["grpo_tokens_per_s"] = sum(mean_lengths) * per_step / runtime_s
    return out


@dataclass(frozen=True)
class Slope:
    """An OLS slope per step with its 95% interval, over ``n`` steps."""

    name: str
    n: int
    slope: float
    low: float
    high: float

    @property
    def flat(self) -> bool:
        return self.low <= 0.0 <= self.high

    def text(self) -> str:
        return f"{self.slope:+.4f}/step [{self.low:+.4f}, {self.high:+.4f}] (n={self.n})"


@dataclass(frozen=True)
class Level:
    """A reward's level over the pilot's steps: its first value, and the mean with its 95% t interval."""

    first: float
    mean: float
    low: float
    high: float
    n: int
    last: float | None = None

    def text(self) -> str:
        return f"from {self.first:.3g}, mean {self.mean:.3g} [{self.low:.3g}, {self.high:.3g}]"


def level_of(values: list[float]) -> Level | None:
    """The first value and the mean ± t(0.975, n − 1) × its standard error (``None`` without values).

    >>> level_of([0.1, 0.3, 0.2]).text()
    'from 0.1, mean 0.2 [-0.0484, 0.448]'
    """
    from scipy.stats import sem, t

    if not values:
        return None
    mean = sum(values) / len(values)
    half = 0.0 if len(values) < 2 or len(set(values)) == 1 else float(t.ppf(0.975, len(values) - 1) * sem(values))
    return Level(values[0], mean, mean - half, mean + half, len(values), values[-1])


@dataclass(frozen=True)
class RewardCurve:
    """One reward key over the pilot's steps: its slope, its level and its range (``None``: not stated)."""

    slope: Slope
    level: Level
    range: RewardRange | None = None

    @property
    def name(self) -> str:
        return self.slope.name

    @property
    def _tolerance(self) -> float | None:
        if self.range is None or self.range.low is None or self.range.high is None:
            return None
        return HEADROOM_SHARE * (self.range.high - self.range.low)

    @property
    def at_ceiling(self) -> bool:
        """The first step's value, the mean over the steps or the last step's value within ``HEADROOM_SHARE`` of
        the range of the ceiling: a reward that starts there has no room to rise, whatever it does next, and one
        that ends there has used its room (GRPO's groups then all agree: no advantage, no signal)."""
        tolerance = self._tolerance
        top = max(self.level.first, self.level.mean, self.level.first if self.level.last is None else self.level.last)
        return tolerance is not None and self.range.high - top <= tolerance

    @property
    def at_floor(self) -> bool:
        tolerance = self._tolerance
        return tolerance is not None and self.level.mean - self.range.low <= tolerance

    def text(self) -> str:
        state = ("  at its ceiling" if self.at_ceiling else "  at its floor" if self.at_floor else "") \
            if self.slope.flat else ""
        ends = self.range.text() if self.range else "[unknown, unknown]"
        return f"{self.name}: {self.slope.text()}, {self.level.text()} of {ends}{'  flat' if self.slope.flat else ''}" \
            f"{state}"


def reward_verdict(curves: list[RewardCurve]) -> tuple[str, str]:
    """``("moving" | "saturated" | "flat", why)`` for the total reward (``curves[0]``), its parts read from the
    curves named ``reward/<part>``."""
    if not curves or not curves[0].slope.flat:
        return "moving", ""
    total, parts = curves[0], [c for c in curves[1:] if c.name.startswith("reward/")]
    ceiling = total.range.high if total.range else None
    if total.at_ceiling:
        return "saturated", (f"{total.name} starts at {total.level.first:.3g} and stays at its ceiling "
                             f"{ceiling:g} ({total.level.text()}): no headroom, so the slope measures "
                             "nothing about the settings")
    top = [p for p in parts if p.at_ceiling]
    if top and all(p.at_ceiling or (p.at_floor and p.slope.flat) for p in parts):
        stuck = [p for p in parts if not p.at_ceiling]
        floors = "; " + ", ".join(f"{p.name} stays at its floor {p.range.low:g}" for p in stuck) if stuck else ""
        return "saturated", (f"{total.name} is flat at {total.level.mean:.3g} of its ceiling {ceiling:g} because "
                             + ", ".join(f"{p.name} is at its ceiling {p.range.high:g} ({_ends(p.level)})"
                                         for p in top) + floors + ": no headroom the settings could use")
    where = "its ceiling is unknown" if ceiling is None else f"below its ceiling {ceiling:g}"
    note = f" ({total.range.note})" if total.range and total.range.note else ""
    return "flat", f"{total.name} {total.slope.text()}, {total.level.text()}, {where}{note}"


def _ends(level: Level) -> str:
    """``from 0.1`` or ``from 0.0875 to 0.1``: where a reward started and, when it moved, where it ended."""
    moved = level.last is not None and level.last != level.first
    return f"from {level.first:.3g}" + (f" to {level.last:.3g}" if moved else "")


def slope_of(name: str, steps: list[float], values: list[float]) -> Slope | None:
    """The slope of ``values`` over ``steps`` with its 95% interval; ``None`` below three points.

    >>> s = slope_of("reward", [1, 2, 3, 4], [0.1, 0.3, 0.2, 0.4])
    >>> round(s.slope, 3), round(s.low, 3), round(s.high, 3), s.flat
    (0.08, -0.103, 0.263, True)
    """
    from scipy.stats import linregress, t

    if len(steps) < 3:
        return None
    if len(set(values)) == 1:  # a constant reward: no slope, no noise, and flat
        return Slope(name, len(steps), 0.0, 0.0, 0.0)
    fit = linregress(steps, values)
    half = float(t.ppf(0.975, len(steps) - 2)) * float(fit.stderr)
    return Slope(name, len(steps), float(fit.slope), float(fit.slope) - half, float(fit.slope) + half)


@dataclass(frozen=True)
class StageTime:
    """One stage's measured time and the full run's projection from it.

    ``work_s``: the part that grows with the stage's work (trl's ``train_runtime``, the generation backend's
    seconds); the rest of ``wall_s`` is fixed. ``unit_s``: the seconds one more unit of work takes once the stage
    runs (a training step after the first, from the steps' clock); with it the full run is the pilot's wall time
    plus the units it did not run at that rate, so the first step's start-up (allocator, caches, lazy imports)
    is counted once, not scaled with the work (the demo's SFT: the pilot's 2 steps took 6.7 s each in
    ``train_runtime``, the full run's 16 took 4.6 s each).
    ``plan_hours``: the plan's wall-clock range in hours, if any.

    >>> sft = StageShare("sft", "optimizer steps", 2, 16)
    >>> StageTime(sft, wall_s=37.6, work_s=13.4).projected_s, StageTime(sft, 37.6, 13.4, unit_s=4.6).projected_s
    (131.4, 102.0)
    """

    share: StageShare
    wall_s: float
    work_s: float | None = None
    cached: bool = False
    plan_hours: tuple[float, float] | None = None
    unit_s: float | None = None

    @property
    def projected_s(self) -> float | None:
        if self.share.whole:  # the pilot ran the whole stage
            return self.wall_s
        share = self.share.share
        if share is None:
            return None
        if self.unit_s is not None and not self.cached:
            return round(self.wall_s + (self.share.full - self.share.pilot) * self.unit_s, 6)
        if self.work_s is None:
            return None if self.cached else self.wall_s / share  # a cached stage's wall time measures no work
        if self.work_s > self.wall_s:  # cached: the work was measured by the run that made the artifacts
            return self.work_s / share
        return (self.wall_s - self.work_s) + self.work_s / share

    def text(self) -> str:
        projected = self.projected_s
        full = "-" if projected is None else duration(projected)
        basis = ("run whole" if self.share.whole or self.share.share == 1 else
                 "the rest at its steady step time" if self.unit_s is not None and not self.cached else
                 "whole stage scaled" if self.work_s is None else "fixed part + work scaled")
        plan = f"; plan {_hours_range(self.plan_hours)}" if self.plan_hours else ""
        cached = ", cached: the time is the cache's" if self.cached else ""
        return f"{self.share.stage}: {duration(self.wall_s)} here -> full run {full} ({basis}{cached}){plan}"


def steady_step_seconds(clock: list[tuple[int, float]]) -> float | None:
    """The seconds a training step takes after the first logged one, from ``(step, seconds since training
    began)`` points: the clock from the first logged step to the last over the steps between them, so the first
    step's start-up is left out; ``None`` with fewer than two logged steps or a clock that did not move.

    >>> steady_step_seconds([(1, 8.7), (2, 13.3), (3, 17.9), (4, 22.5)]), steady_step_seconds([(1, 8.7)])
    (4.6, None)
    >>> steady_step_seconds([(10, 50.0), (20, 95.0)])  # logged every 10 steps
    4.5
    """
    if len(clock) < 2:
        return None
    (first_step, first_s), (last_step, last_s) = clock[0], clock[-1]
    if last_step <= first_step or last_s <= first_s:
        return None
    return round((last_s - first_s) / (last_step - first_step), 9)


def duration(seconds: float) -> str:
    """``42 s``, ``3.5 min``, ``2.1 h``.

    >>> duration(42), duration(210), duration(7560)
    ('42 s', '3.5 min', '2.1 h')
    """
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


def _hours_range(hours: tuple[float, float]) -> str:
    return f"{duration(hours[0] * 3600)}–{duration(hours[1] * 3600)} (estimate)"


@dataclass
class PilotReport:
    """Everything a pilot measured, its projections and its refusals."""

    profile: str
    budget: list[str]
    projections: list[Projection] = field(default_factory=list)
    curves: list[RewardCurve] = field(default_factory=list)  # the total reward first, then each function, parts
    training: dict[str, float] = field(default_factory=dict)  # KL, clip ratio ... (means over the pilot's steps)
    throughput: dict[str, float] = field(default_factory=dict)
    times: list[StageTime] = field(default_factory=list)
    min_share: float = 0.5
    refused: list[str] = field(default_factory=list)  # a stage that stopped the pilot (its message)

    @property
    def problems(self) -> list[str]:
        found = list(self.refused)
        found += [p.problem(self.min_share) for p in self.projections if p.short_of(self.min_share)]
        verdict, why = reward_verdict(self.curves)
        if verdict == "flat":
            keys = ", ".join(c.name for c in self.curves)
            found.append(f"grpo: the reward is flat within its noise: {why}; reward keys {keys}; change "
                         "grpo.learning_rate, grpo.lora or grpo.rewards (or measure more steps: --grpo-steps)")
        return found

    @property
    def verdict(self) -> str:
        """``refused`` (a problem), ``saturated`` (the reward has no headroom: not measured, not refused) or ``go``."""
        if self.problems:
            return "refused"
        return "saturated" if reward_verdict(self.curves)[0] == "saturated" else "go"

    @property
    def projected_total_s(self) -> float | None:
        values = [t.projected_s for t in self.times]
        return None if not values or None in values else sum(values)

    def metrics(self) -> dict[str, float]:
        """MLflow metrics ``pilot/<group>/<name>[/<language>]``."""
        out: dict[str, float] = {}
        for p in self.projections:
            for step, retention in (("translation", p.translation), ("traces", p.traces)):
                if retention is not None:
                    out[f"pilot/{step}/rate/{p.language}"] = retention.rate
                    out[f"pilot/{step}/rate_low/{p.language}"], out[f"pilot/{step}/rate_high/{p.language}"] = \
                        retention.interval
                    out[f"pilot/{step}/n/{p.language}"] = float(retention.total)
            low, high = p.interval
            out.update({f"pilot/projected/size/{p.language}": float(p.size), f"pilot/projected/low/{p.language}":
                        float(low), f"pilot/projected/high/{p.language}": float(high),
                        f"pilot/projected/target/{p.language}": float(p.target)})
        for c in self.curves:
            s, key = c.slope, c.name.replace("/", "_")
            out.update({f"pilot/slope/{key}": s.slope, f"pilot/slope_low/{key}": s.low,
                        f"pilot/slope_high/{key}": s.high, f"pilot/slope_n/{key}": float(s.n),
                        f"pilot/level/{key}": c.level.mean, f"pilot/level_low/{key}": c.level.low,
                        f"pilot/level_high/{key}": c.level.high, f"pilot/level_first/{key}": c.level.first})
            if c.range is not None and c.range.high is not None:
                out[f"pilot/ceiling/{key}"] = c.range.high
        if self.curves:
            out["pilot/reward_saturated"] = float(reward_verdict(self.curves)[0] == "saturated")
        out.update({f"pilot/training/{k}": v for k, v in self.training.items()})
        out.update({f"pilot/throughput/{k}": v for k, v in self.throughput.items()})
        for t in self.times:
            out[f"pilot/seconds/{t.share.stage}"] = t.wall_s
            if t.projected_s is not None:
                out[f"pilot/projected_seconds/{t.share.stage}"] = t.projected_s
        if self.projected_total_s is not None:
            out["pilot/projected_seconds/total"] = self.projected_total_s
        return out

    def lines(self) -> list[str]:
        """The report for a person (every line within 100 columns)."""
        out = [f"pilot of {self.profile}", *self.budget]
        if self.projections:
            out.append("data yield (95% Wilson intervals; projected set size against the target):")
            for p in self.projections:
                gate = f"translation {p.translation.text()}, " if p.translation else ""
                out.append(f"  {p.language}: {gate}traces {p.traces.text()}")
                low, high = p.interval
                out.append(f"      -> {p.size:,} [{low:,}, {high:,}] of {p.queries:,} queries, target {p.target:,}")
        if self.curves:
            out.append("GRPO reward (OLS slope over the pilot's steps, its level; 95% intervals; of its range):")
            out += [f"  {c.text()}" for c in self.curves]
        if self.training:
            out.append("  " + ", ".join(f"{k} {v:.4g}" for k, v in self.training.items()))
        if self.throughput:
            out.append("throughput here: " + ", ".join(f"{k} {v:,.2f}" for k, v in self.throughput.items()))
        if self.times:
            out.append("time (measured here; the full run projected from it):")
            out += [f"  {t.text()}" for t in self.times]
            if self.projected_total_s is not None:
                out.append(f"  total: full run {duration(self.projected_total_s)} projected")
        problems = self.problems
        verdict, why = reward_verdict(self.curves)
        if problems:
            out += ["refused:", *[f"  - {p}" for p in problems]]
        elif verdict == "saturated":
            out += ["verdict: saturated (not refused; the reward's slope is not measured here)", f"  - grpo: {why}"]
        else:
            out.append("verdict: go")
        return [line for text in out for line in _wrapped(text)]

    def as_dict(self) -> dict[str, Any]:
        return {"profile": self.profile, "budget": self.budget, "metrics": self.metrics(), "problems": self.problems,
                "verdict": self.verdict, "lines": self.lines()}


def _wrapped(line: str, width: int = 100) -> list[str]:
    """``line`` cut at spaces into lines of at most ``width`` columns (continuations indented)."""
    import textwrap

    if len(line) <= width:
        return [line]
    indent = " " * (len(line) - len(line.lstrip()) + 4)
    return textwrap.wrap(line, width=width, subsequent_indent=indent, break_on_hyphens=False)
