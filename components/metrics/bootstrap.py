"""Standard errors and paired confidence intervals: a stratified cluster bootstrap over problems.

What is resampled. The unit is the *problem*, not the sample: the k samples of one problem
share its difficulty, so resampling them one by one would understate the error of pass@k,
avg@k and of every mean over samples. Problems are clustered by their id within a
benchmark subset, so the translations of one problem in several languages are resampled
together too (MGSM, MMATH and MMLU-ProX ask the same problems in every language, and a
language group's mean or the pooled ``overall`` cell would otherwise count one hard
problem ten times as if independent). Clusters are drawn with replacement within
*strata*, one per ``(benchmark, subset)`` of the macro rule (MMATH's ``source``), so a
macro average keeps its four subsets and their sizes fixed, as the statistic it reports
does; a benchmark without a macro rule is one stratum.

What is recomputed. Each metric's whole corpus statistic, exactly as it is reported: its
per-problem statistics summed over the resampled clusters (``components.metrics.metric``),
its value per subset, the equal-weight mean over subsets and benchmarks, and, for a
language group, the mean over the group's languages, with the same rule for values that
are ``None``. One method for every metric keeps the intervals comparable, and LCPR (a
harmonic mean of two ratios) or a macro average has no closed-form standard error.

What is reported. ``stderr``: the standard deviation of the bootstrap distribution
(``ddof=1``); ``low``/``high``: its 2.5th and 97.5th percentiles (the percentile interval:
BCa's jackknife costs a statistic evaluation per problem and is undefined on the discrete,
often degenerate distributions of small evaluations); ``n``: what the value averages
(``Metric.n_stat``) summed over the cell. Resamples where a metric has nothing to judge
(e.g. no trace passing the line level, so no WPR) are left out of its distribution. A
stratum with a single cluster contributes no variance; a cell with fewer than two clusters
has no standard error (``None``).

Paired differences. A comparison of two models resamples the clusters both models
answered with the same draws for both (the rows of one cluster stay together across
models), and reports the difference of the two statistics on each resample: the paired
bootstrap, which removes the problem-difficulty variance the two models share.

``scipy.stats.bootstrap`` draws the resamples (one independent sample per stratum,
vectorized over batches); what is written here is the layout of problems into strata and
clusters, the statistic, and the NaN-aware summary of the distribution, which scipy's
interval does not do.

>>> rows = [{"lang": "fr", "id": str(i), "correct": c} for i, c in enumerate([True, False, False, False])]
>>> from components.metrics.table import metric_for
>>> (accuracy,) = estimate([[rows]], [metric_for("accuracy")], Bootstrap(resamples=2000))[0]
>>> accuracy.value, accuracy.n, (accuracy.low, accuracy.high)
(0.25, 4, (0.0, 0.75))
>>> abs(accuracy.stderr - (0.25 * 0.75 / 4) ** 0.5) < 0.01   # the ideal bootstrap's sqrt(p(1-p)/n)
True
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from components.metrics.metric import Metric, Row, as_number, by_problem
from components.metrics.table import macro_field

UNSPECIFIED = "unspecified"
_BATCH_ELEMENTS = 4_000_000  # floats per resampled batch (~32 MB)


@dataclass(frozen=True)
class Bootstrap:
    """Resamples, seed and confidence level of every interval."""

    resamples: int = 1000
    seed: int = 0
    confidence: float = 0.95


@dataclass(frozen=True)
class Estimate:
    """A value with its bootstrap standard error, percentile interval and n (``None``: not estimable)."""

    value: float | None
    stderr: float | None
    low: float | None
    high: float | None
    n: int

    @property
    def excludes_zero(self) -> bool:
        return self.low is not None and self.high is not None and (self.low > 0 or self.high < 0)


def stratum_of(row: Row, macro: bool) -> tuple[Any, str]:
    """``(benchmark, subset)``: the subset under the benchmark's macro rule, ``""`` without one."""
    field = macro_field(row.get("benchmark")) if macro else None
    return row.get("benchmark") if macro else None, "" if field is None else str(row.get(field) or UNSPECIFIED)


def _offsets(table: Sequence[Metric], problem: Sequence[Row]) -> list[slice]:
    sizes = [len(metric.problem_stats(problem)) for metric in table]
    starts = np.cumsum([0, *sizes])
    return [slice(int(a), int(b)) for a, b in zip(starts[:-1], starts[1:], strict=True)]


def _layout(groups: Sequence[Sequence[Sequence[Row]]], table: Sequence[Metric], macro: bool
            ) -> tuple[list[np.ndarray], list[int], list[slice]]:
    """Per stratum an array ``(models, members, stats, clusters)`` of summed problem statistics,
    the benchmark index of each stratum, and each metric's slice of the statistics axis."""
    problems = [[by_problem(rows) for rows in members] for members in groups]
    first = next(p for members in problems for member in members for p in member.values())
    slices = _offsets(table, first)
    clusters: dict[tuple[Any, str], dict[Any, int]] = {}
    for members in problems:
        for member in members:
            for samples in member.values():
                ids = clusters.setdefault(stratum_of(samples[0], macro), {})
                ids.setdefault(samples[0]["id"], len(ids))
    strata = list(clusters)
    arrays = [np.zeros((len(groups), len(groups[0]), slices[-1].stop, len(clusters[s]))) for s in strata]
    for m, members in enumerate(problems):
        for j, member in enumerate(members):
            for samples in member.values():
                stratum = stratum_of(samples[0], macro)
                column = clusters[stratum][samples[0]["id"]]
                stats = [value for metric in table for value in metric.problem_stats(samples)]
                arrays[strata.index(stratum)][m, j, :, column] += stats
    benchmarks = list(dict.fromkeys(s[0] for s in strata))
    return arrays, [benchmarks.index(s[0]) for s in strata], slices


def _mean(values: np.ndarray, axis: int, skip: np.ndarray) -> np.ndarray:
    """Mean along ``axis``; metrics with ``skip`` leave NaN parts out, the others are NaN with any."""
    with np.errstate(invalid="ignore", divide="ignore"):
        count = (~np.isnan(values)).sum(axis=axis)
        lenient = np.where(count > 0, np.nansum(values, axis=axis) / count, np.nan)
    strict = values.mean(axis=axis)
    return np.where(skip.reshape((-1,) + (1,) * (strict.ndim - 1)), lenient, strict)


class _Statistic:
    """Every metric's value from per-stratum statistics: ``(metrics, models, *batch)``."""

    def __init__(self, table: Sequence[Metric], slices: list[slice], benchmark_of: list[int]) -> None:
        self.table, self.slices, self.benchmark_of = table, slices, benchmark_of
        self.skip = np.array([metric.skip_none for metric in table])

    def __call__(self, totals: list[np.ndarray]) -> np.ndarray:
        per_stratum = []
        for summed in totals:  # (models, members, stats, *batch)
            stats_last = np.moveaxis(summed, 2, -1)
            with np.errstate(invalid="ignore", divide="ignore"):
                per_stratum.append(np.stack([m.value(stats_last[..., s]) for m, s in zip(self.table, self.slices,
                                                                                           strict=True)]))
        values = np.stack(per_stratum, axis=1)  # (metrics, strata, models, members, *batch)
        benchmarks = [_mean(values[:, [i for i, b in enumerate(self.benchmark_of) if b == index]], 1, self.skip)
                      for index in sorted(set(self.benchmark_of))]
        cell = _mean(np.stack(benchmarks, axis=1), 1, self.skip)  # (metrics, models, members, *batch)
        return _mean(cell, 2, self.skip)


def _distribution(arrays: list[np.ndarray], statistic: _Statistic, boot: Bootstrap) -> np.ndarray | None:
    """The bootstrap distribution ``(metrics, models, resamples)``, or None with fewer than two clusters."""
    from scipy.stats import DegenerateDataWarning, bootstrap

    drawn = [i for i, a in enumerate(arrays) if a.shape[-1] >= 2]
    if not drawn:
        return None
    fixed = {i: a.sum(axis=-1)[..., None] for i, a in enumerate(arrays) if i not in drawn}

    def resampled(*samples: np.ndarray, axis: int = -1) -> np.ndarray:
        sums = dict(zip(drawn, (s.sum(axis=axis) for s in samples), strict=True))
        batch = next(iter(sums.values())).shape[3:]
        totals = [sums[i] if i in sums else np.broadcast_to(fixed[i], fixed[i].shape[:3] + batch)
                  for i in range(len(arrays))]
        return statistic(totals)

    size = sum(a.size for a in arrays)
    with warnings.catch_warnings():  # scipy warns of NaN in its own interval; ours leaves NaN resamples out
        warnings.simplefilter("ignore", DegenerateDataWarning)
        result = bootstrap([arrays[i] for i in drawn], resampled, n_resamples=boot.resamples, axis=-1,
                           vectorized=True, paired=False, method="percentile", confidence_level=boot.confidence,
                           batch=max(1, min(boot.resamples, _BATCH_ELEMENTS // max(size, 1))), rng=boot.seed)
    return result.bootstrap_distribution


def _summary(point: float, distribution: np.ndarray | None, n: float, boot: Bootstrap) -> Estimate:
    value = as_number(point)
    if value is None or distribution is None or np.isnan(distribution).all():
        return Estimate(value, None, None, None, int(n))
    tail = 100 * (1 - boot.confidence) / 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        low, high = np.nanpercentile(distribution, [tail, 100 - tail])
        stderr = np.nanstd(distribution, ddof=1)
    return Estimate(value, *(as_number(np.round(x, 12)) for x in (stderr, low, high)), int(n))  # no 1e-17 noise


def _point_and_counts(arrays: list[np.ndarray], statistic: _Statistic, slices: list[slice],
                      table: Sequence[Metric]) -> tuple[np.ndarray, np.ndarray]:
    point = statistic([a.sum(axis=-1) for a in arrays])  # (metrics, models)
    summed = sum(a.sum(axis=(1, 3)) for a in arrays)  # (models, stats)
    counts = np.stack([summed[:, s.start + m.n_stat] for m, s in zip(table, slices, strict=True)])
    return point, counts


def estimate(groups: Sequence[Sequence[Sequence[Row]]], table: Sequence[Metric], boot: Bootstrap,
             *, macro: bool = True) -> list[list[Estimate]]:
    """Per model, per metric: the value over its members (languages, or one pooled member) with its
    standard error, percentile interval and n. ``groups[model][member]`` are rows."""
    if not any(rows for members in groups for rows in members):
        return [[Estimate(None, None, None, None, 0) for _ in table] for _ in groups]
    arrays, benchmark_of, slices = _layout(groups, table, macro)
    statistic = _Statistic(table, slices, benchmark_of)
    point, counts = _point_and_counts(arrays, statistic, slices, table)
    distribution = _distribution(arrays, statistic, boot)
    return [[_summary(point[k, m], None if distribution is None else distribution[k, m], counts[k, m], boot)
             for k in range(len(table))] for m in range(len(groups))]


def paired_difference(first: Sequence[Row], second: Sequence[Row], table: Sequence[Metric], boot: Bootstrap,
                      *, macro: bool = True, languages: Sequence[str] | None = None) -> tuple[list[Estimate], int]:
    """``first`` minus ``second`` per metric, over the problems both answered, with a paired bootstrap
    interval; and the number of those shared problems. ``n`` of each estimate is ``first``'s.

    With ``languages`` the statistic is a language group's: each language's value on its own rows, then
    their mean (a language none of the shared problems reaches is left out); a problem's translations
    are drawn together, as in :func:`estimate`."""
    shared = set(by_problem(first)) & set(by_problem(second))
    pair = [[row for row in rows if (row.get("benchmark"), row["lang"], row["id"]) in shared]
            for rows in (first, second)]
    if not shared:
        return [Estimate(None, None, None, None, 0) for _ in table], 0
    present = [lang for lang in (languages or []) if any(row["lang"] == lang for row in pair[1])]
    members = [[[row for row in rows if row["lang"] == lang] for lang in present] for rows in pair] if present \
        else [[pair[0]], [pair[1]]]
    arrays, benchmark_of, slices = _layout(members, table, macro)
    statistic = _Statistic(table, slices, benchmark_of)
    point, counts = _point_and_counts(arrays, statistic, slices, table)
    difference = _Difference(statistic)
    distribution = _distribution(arrays, difference, boot)
    delta = point[:, 0] - point[:, 1]
    return [_summary(delta[k], None if distribution is None else distribution[k], counts[k, 0], boot)
            for k in range(len(table))], len(shared)


class _Difference:
    """The first model's statistic minus the second's, on the same resample."""

    def __init__(self, statistic: _Statistic) -> None:
        self.statistic = statistic

    def __call__(self, totals: list[np.ndarray]) -> np.ndarray:
        values = self.statistic(totals)
        return values[:, 0] - values[:, 1]
