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
does; a benchmark without a macro rule is one stratum. ``macro`` names each benchmark's
subset field (``components.metrics.registry.macro_fields`` of the benchmarks' schemes);
``None`` pools every row into one stratum.

What is recomputed. Each metric's whole corpus statistic, exactly as it is reported: its
per-problem statistics summed over the resampled clusters (``components.metrics.metric``),
its value per subset, the equal-weight mean over subsets and benchmarks, and, for a
language group, the mean over the group's languages, with the same rule for values that
are ``None``. One method for every metric keeps the intervals comparable, and LCPR (a
harmonic mean of two ratios) or a macro average has no closed-form standard error.

What is reported. ``stderr``: the standard deviation of the bootstrap distribution
(``ddof=1``); ``n``: the number of independent units the value is over, the clusters (a
problem, its samples and translations together) where the metric has something to judge
(``Metric.n_stat`` above 0), not rows: 40 problems of 2 samples are ``n`` 40. ``low``/``high``:
for a rate (``Metric.bounded``) Wilson's score interval at the estimate's effective n
(``components.metrics.intervals``), which keeps its width at 0 and 1 where the bootstrap
collapses (8 of 8 correct: ``[0.676, 1]``, not ``[1, 1]``); for an unbounded metric the
2.5th and 97.5th percentiles of the bootstrap distribution. Resamples where a metric has
nothing to judge (e.g. no trace passing the line level, so no WPR) are left out of its
distribution. A stratum with a single cluster contributes no variance; a value over fewer
than two units has no standard error nor interval (``None``).

Paired differences. A comparison of two models resamples the clusters both models
answered with the same draws for both (the rows of one cluster stay together across
models). Per metric, only what *both* were judged on enters: a (language, problem) part one
model has nothing to judge on (no judgeable line for LCPR or WPR) is left out for both, and
the estimate's ``n`` is ``n_both``, the units left. The difference of a rate gets Newcombe's
square-and-add interval from the two Wilson intervals, with the correlation of the two
statistics over the paired resamples, continuity-corrected as Newcombe's paired method does
(pairing removes the problem-difficulty variance the two models share); an unbounded metric gets the percentiles of the paired differences.

``scipy.stats.bootstrap`` draws the resamples (one independent sample of cluster indices per
stratum, vectorized over batches of a fixed number of values, so memory does not grow with the
input); what is written here is the layout of problems into strata and clusters, the weighting of
their statistics by the draws, the statistic, and the NaN-aware summary of the distribution, which
scipy's interval does not do.

>>> rows = [{"lang": "fr", "id": str(i), "correct": c} for i, c in enumerate([True, False, False, False])]
>>> from components.metrics.registry import metric_for
>>> (accuracy,) = estimate([[rows]], [metric_for("accuracy")], Bootstrap(resamples=2000))[0]
>>> accuracy.value, accuracy.n
(0.25, 4)
>>> abs(accuracy.low - 0.046) < 0.01 and abs(accuracy.high - 0.699) < 0.02   # Wilson's for 1 of 4: [0.046, 0.699]
True
>>> abs(accuracy.stderr - (0.25 * 0.75 / 4) ** 0.5) < 0.01   # the ideal bootstrap's sqrt(p(1-p)/n)
True
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from components.metrics.intervals import excludes_zero as interval_excludes_zero
from components.metrics.intervals import as_rate, corrected_correlation, effective_n, newcombe, rate_interval, wilson
from components.metrics.metric import Metric, Row, as_number, by_problem
from components.metrics.problems import Problems

Macro = Mapping[str, str] | None  # benchmark -> the row field naming its subsets; None: one stratum (pooled)

UNSPECIFIED = "unspecified"
_BATCH_ELEMENTS = 250_000  # numbers per resampled batch (~2 MB): drawn indices and sums


@dataclass(frozen=True)
class Bootstrap:
    """Resamples, seed and confidence level of every interval."""

    resamples: int = 1000
    seed: int = 0
    confidence: float = 0.95


@dataclass(frozen=True)
class Estimate:
    """A value with its bootstrap standard error, 95% interval and n, its independent units (``None``: not estimable)."""

    value: float | None
    stderr: float | None
    low: float | None
    high: float | None
    n: int

    @property
    def excludes_zero(self) -> bool:
        return interval_excludes_zero(self.low, self.high)


def stratum_of(row: Row, macro: Macro) -> tuple[Any, str]:
    """``(benchmark, subset)``: the subset under the benchmark's macro rule, ``""`` without one; ``(None, "")`` for
    every row when ``macro`` is ``None`` (pooled)."""
    if macro is None:
        return None, ""
    field = macro.get(row.get("benchmark"))
    return row.get("benchmark"), "" if field is None else str(row.get(field) or UNSPECIFIED)


def _layout(groups: Sequence[Sequence[Sequence[Row] | Problems]], table: Sequence[Metric], macro: Macro
            ) -> tuple[list[np.ndarray], list[int], list[slice]]:
    """Per stratum an array ``(models, members, stats, clusters)`` of summed problem statistics,
    the benchmark index of each stratum, and each metric's slice of the statistics axis. A member is
    rows, or its problems already reduced under ``table`` (``components.metrics.problems``)."""
    problems = [[member if isinstance(member, Problems) else Problems.of_rows(member, table) for member in members]
                for members in groups]
    slices = list(next(member.slices for members in problems for member in members if len(member)))
    clusters: dict[tuple[Any, str], dict[Any, int]] = {}
    for members in problems:
        for member in members:
            for item in member.items:
                ids = clusters.setdefault(stratum_of(item.head, macro), {})
                ids.setdefault(item.head["id"], len(ids))
    strata = list(clusters)
    arrays = [np.zeros((len(groups), len(groups[0]), slices[-1].stop, len(clusters[s]))) for s in strata]
    for m, members in enumerate(problems):
        for j, member in enumerate(members):
            for item in member.items:
                stratum = stratum_of(item.head, macro)
                arrays[strata.index(stratum)][m, j, :, clusters[stratum][item.head["id"]]] += item.stats
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


def _cluster_counts(drawn: np.ndarray, clusters: int) -> np.ndarray:
    """How often each cluster is in each resample: ``(*batch, clusters)`` from drawn indices ``(*batch, clusters)``."""
    batch = drawn.shape[:-1]
    offsets = clusters * np.arange(int(np.prod(batch)), dtype=drawn.dtype).reshape(batch + (1,))
    flat = np.bincount((drawn + offsets).ravel(), minlength=drawn.size)
    return flat.reshape(drawn.shape).astype(float)


def _distribution(arrays: list[np.ndarray], statistic: _Statistic, boot: Bootstrap) -> np.ndarray | None:
    """The bootstrap distribution ``(metrics, models, resamples)``, or None with fewer than two clusters.

    scipy resamples each stratum's cluster *indices*, not the statistics: a resample's sums are the
    statistics weighted by how often it drew each cluster (one matrix product), so no array of the
    resampled statistics ``(models, members, stats, batch, clusters)`` is ever built. A batch holds
    about ``_BATCH_ELEMENTS`` numbers (the drawn indices and each resample's sums), whatever the size
    of the input; scipy keeps one batch's draws while it makes the next."""
    from scipy.stats import DegenerateDataWarning, bootstrap

    drawn = [i for i, a in enumerate(arrays) if a.shape[-1] >= 2]
    if not drawn:
        return None
    fixed = {i: a.sum(axis=-1)[..., None] for i, a in enumerate(arrays) if i not in drawn}
    flat = {i: arrays[i].reshape(-1, arrays[i].shape[-1]) for i in drawn}  # (models * members * stats, clusters)

    def resampled(*indices: np.ndarray, axis: int = -1) -> np.ndarray:
        sums = {}
        for i, chosen in zip(drawn, indices, strict=True):
            counts = _cluster_counts(np.moveaxis(chosen, axis, -1), arrays[i].shape[-1])  # (*batch, clusters)
            sums[i] = np.tensordot(flat[i], counts, axes=([1], [-1])).reshape(arrays[i].shape[:3] + counts.shape[:-1])
        batch = next(iter(sums.values())).shape[3:]
        totals = [sums[i] if i in sums else np.broadcast_to(fixed[i], fixed[i].shape[:3] + batch)
                  for i in range(len(arrays))]
        return statistic(totals)

    per_resample = sum(2 * arrays[i].shape[-1] + arrays[i].size // arrays[i].shape[-1] for i in drawn)
    with warnings.catch_warnings():  # scipy warns of NaN in its own interval; ours leaves NaN resamples out
        warnings.simplefilter("ignore", DegenerateDataWarning)
        result = bootstrap([np.arange(arrays[i].shape[-1]) for i in drawn], resampled, n_resamples=boot.resamples,
                           axis=-1, vectorized=True, paired=False, method="percentile",
                           confidence_level=boot.confidence, rng=boot.seed,
                           batch=max(1, min(boot.resamples, _BATCH_ELEMENTS // per_resample)))
    return result.bootstrap_distribution


def _spread(distribution: np.ndarray | None) -> float | None:
    """The bootstrap standard error (``ddof=1``) of a distribution, NaN resamples left out."""
    if distribution is None or np.isnan(distribution).all():
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return as_number(np.round(np.nanstd(distribution, ddof=1), 12))  # no 1e-17 noise


def _percentiles(distribution: np.ndarray, boot: Bootstrap) -> tuple[float | None, float | None]:
    tail = 100 * (1 - boot.confidence) / 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        low, high = np.nanpercentile(distribution, [tail, 100 - tail])
    return as_number(np.round(low, 12)), as_number(np.round(high, 12))


def _summary(point: float, distribution: np.ndarray | None, n: int, metric: Metric, boot: Bootstrap) -> Estimate:
    """A value with its standard error and interval: Wilson's for a rate, the percentiles otherwise."""
    value, stderr = as_number(point), _spread(distribution)
    if value is None or stderr is None or n < 2:
        return Estimate(value, None, None, None, int(n))
    if as_rate(metric.bounded, value):
        low, high = rate_interval(value, stderr, n, boot.confidence)
    else:
        low, high = _percentiles(distribution, boot)
    return Estimate(value, stderr, *(None if x is None else round(x, 12) for x in (low, high)), int(n))


def _units(arrays: list[np.ndarray], slices: list[slice], table: Sequence[Metric]) -> np.ndarray:
    """Independent units judged, ``(metrics, models)``: clusters where a member has something the metric
    counts (its ``n_stat`` above 0); a problem's samples and translations are one unit."""
    out = np.zeros((len(table), arrays[0].shape[0]), dtype=int)
    for k, (metric, part) in enumerate(zip(table, slices, strict=True)):
        for summed in arrays:  # (models, members, stats, clusters)
            out[k] += (summed[:, :, part.start + metric.n_stat, :] > 0).any(axis=1).sum(axis=-1)
    return out


def _point(arrays: list[np.ndarray], statistic: _Statistic) -> np.ndarray:
    return statistic([a.sum(axis=-1) for a in arrays])  # (metrics, models)


def estimate(groups: Sequence[Sequence[Sequence[Row] | Problems]], table: Sequence[Metric], boot: Bootstrap,
             *, macro: Macro = {}) -> list[list[Estimate]]:  # noqa: B006 - never mutated
    """Per model, per metric: the value over its members (languages, or one pooled member) with its
    standard error, interval and n (independent units judged). ``groups[model][member]`` are rows, or their
    problems reduced under ``table``."""
    if not any(len(rows) for members in groups for rows in members):
        return [[Estimate(None, None, None, None, 0) for _ in table] for _ in groups]
    arrays, benchmark_of, slices = _layout(groups, table, macro)
    statistic = _Statistic(table, slices, benchmark_of)
    point, units = _point(arrays, statistic), _units(arrays, slices, table)
    distribution = _distribution(arrays, statistic, boot)
    return [[_summary(point[k, m], None if distribution is None else distribution[k, m], units[k, m], metric, boot)
             for k, metric in enumerate(table)] for m in range(len(groups))]


def judged_by_both(arrays: list[np.ndarray], slices: list[slice], table: Sequence[Metric]) -> list[np.ndarray]:
    """The statistics of two models with, per metric, only the (member, cluster) parts both were judged on:
    a part one model has nothing to judge on (no line verdict for LCPR) is zeroed for both."""
    out = []
    for summed in arrays:  # (2, members, stats, clusters)
        kept = summed.copy()
        for metric, part in zip(table, slices, strict=True):
            both = (summed[:, :, part.start + metric.n_stat, :] > 0).all(axis=0)  # (members, clusters)
            kept[:, :, part, :] = np.where(both[None, :, None, :], summed[:, :, part, :], 0.0)
        out.append(kept)
    return out


def _correlation(first: np.ndarray, second: np.ndarray) -> float:
    """Pearson's correlation of two statistics over the resamples both have (0 without variance)."""
    kept = ~(np.isnan(first) | np.isnan(second))
    a, b = first[kept], second[kept]
    if len(a) < 3 or np.std(a) == 0 or np.std(b) == 0:
        return 0.0
    return float(np.round(np.corrcoef(a, b)[0, 1], 12))


def _paired_summary(point: np.ndarray, distribution: np.ndarray | None, n_both: int, metric: Metric,
                    boot: Bootstrap) -> Estimate:
    """``point[0] - point[1]`` with its interval: Newcombe's from the two Wilson intervals for a rate
    (correlated as the paired resamples are), the percentiles of the paired differences otherwise."""
    delta = as_number(point[0] - point[1])
    if distribution is None or delta is None or n_both < 2:
        return Estimate(delta, None, None, None, n_both)
    differences = distribution[0] - distribution[1]
    stderr = _spread(differences)
    if stderr is None:
        return Estimate(delta, None, None, None, n_both)
    values = [float(point[0]), float(point[1])]
    if not as_rate(metric.bounded, *values):
        return Estimate(delta, stderr, *_percentiles(differences, boot), n_both)
    limits = [wilson(v, effective_n(v, _spread(distribution[m]), n_both), boot.confidence)
              for m, v in enumerate(values)]
    low, high = newcombe(values[0], limits[0], values[1], limits[1],
                         corrected_correlation(_correlation(distribution[0], distribution[1]), *values, n_both))
    return Estimate(delta, stderr, round(low, 12), round(high, 12), n_both)


def paired_difference(first: Sequence[Row], second: Sequence[Row], table: Sequence[Metric], boot: Bootstrap,
                      *, macro: Macro = {}, languages: Sequence[str] | None = None  # noqa: B006 - never mutated
                      ) -> tuple[list[Estimate], int]:
    """``first`` minus ``second`` per metric over the problems both were judged on, with its interval; and
    the number of independent units (problem clusters) both answered. ``n`` of each estimate is
    ``n_both``: the units both models were judged on for that metric (fewer than both answered for a
    metric undefined on some problems, such as LCPR without a judgeable line).

    With ``languages`` the statistic is a language group's: each language's value on its own rows, then
    their mean (a language none of the shared problems reaches is left out); a problem's translations
    are drawn together, as in :func:`estimate`, and are one unit."""
    shared = set(by_problem(first)) & set(by_problem(second))
    pair = [[row for row in rows if (row.get("benchmark"), row["lang"], row["id"]) in shared]
            for rows in (first, second)]
    if not shared:
        return [Estimate(None, None, None, None, 0) for _ in table], 0
    present = [lang for lang in (languages or []) if any(row["lang"] == lang for row in pair[1])]
    members = [[[row for row in rows if row["lang"] == lang] for lang in present] for rows in pair] if present \
        else [[pair[0]], [pair[1]]]
    arrays, benchmark_of, slices = _layout(members, table, macro)
    clusters = sum(a.shape[-1] for a in arrays)
    arrays = judged_by_both(arrays, slices, table)
    statistic = _Statistic(table, slices, benchmark_of)
    point, units = _point(arrays, statistic), _units(arrays, slices, table)
    distribution = _distribution(arrays, statistic, boot)
    return [_paired_summary(point[k], None if distribution is None else distribution[k], int(units[k, 0]), metric,
                            boot) for k, metric in enumerate(table)], clusters
