"""The metric object: one value that owns both halves, the per-row scorer and the corpus reduction.

Modelled on lighteval's metrics, which pair a sample-level function with a corpus-level
aggregation in one object, so that a task lists metrics and nothing else. Here a
:class:`Metric` holds

* ``fields``: the row fields it needs, each a :class:`RowField` with the sample-level
  scorer that fills it from a :class:`components.metrics.sample.Sample` (the verdict,
  the trace's line and word levels, its steps …). Scoring writes exactly the fields the
  metric table's entries declare; two entries that read one field share its
  ``RowField`` object.
* ``problem_stats``: the additive statistics of one problem's samples (a problem is
  ``(benchmark, lang, id)``), e.g. ``(correct samples, samples)``.
* ``value``: the corpus value from the *sums* of those statistics over problems,
  vectorized over leading axes (NaN: nothing to judge).

Asking every corpus value to be a function of summed per-problem statistics is what lets
one resampling engine (``components.metrics.bootstrap``) give every metric its standard
error: a bootstrap resample of problems is a re-weighting of those sums, computed for a
thousand resamples at once with numpy. Means over rows are ratios of two sums; pass@k and
avg@k are means over problems of a per-problem number; LCPR is a function of four sums.
``n_stat`` names the statistic that counts what the value averages (rows with a verdict,
traces passing the line level, problems); ``<metric>_n`` is the number of independent units
where it is above 0: the problems (a problem's samples and translations one cluster) the
metric judged.

>>> correct = RowField("correct", lambda sample: sample.verdict["correct"])
>>> acc = row_mean("accuracy", correct, lambda row: bool(row["correct"]))
>>> acc.compute([{"lang": "fr", "id": "a", "correct": True}, {"lang": "fr", "id": "a", "correct": False}])
0.5
>>> acc.problem_stats([{"correct": True}, {"correct": False}])
(1.0, 2.0)
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from components.metrics.sample import Sample

Row = Mapping[str, Any]
Problem = tuple[Any, Any, Any]


@dataclass(frozen=True)
class RowField:
    """One field of a scored row and the sample-level scorer that fills it; ``evidence``: written for a reader
    beside the statistics (a failing trace's lines), never read by them."""

    name: str
    score: Callable[["Sample"], Any]
    evidence: bool = False


@dataclass(frozen=True)
class Metric:
    """One corpus metric: its row fields (sample half), per-problem statistics and corpus value.

    ``min_samples``: samples every problem needs (pass@k), else the value is ``None`` and the
    short problems are counted; ``skip_none``: a mean over subsets or languages leaves out
    parts where the value is ``None`` (not applicable there); when False such a mean is
    ``None`` (the value is missing). ``label`` names the output from the problems' sample counts
    when the name depends on them (avg@k); ``pattern`` (a regular expression) recognises those names.
    ``bounded``: every value lies in [0, 1] (a rate, a share), so its interval is Wilson's score
    interval and a difference's Newcombe's (``components.metrics.intervals``); an unbounded one
    (a count, TTC, which is not capped at 1) keeps the bootstrap's percentiles.
    ``column``: a column of the per-language table; ``compared``:
    a column of the model comparison. ``kind``: the benchmarks it is computed on
    (``math``: answers checked by a verifier; ``qa``: short answers of open-domain QA).
    """

    name: str
    fields: tuple[RowField, ...]
    problem_stats: Callable[[Sequence[Row]], tuple[float, ...]]
    value: Callable[[np.ndarray], np.ndarray]
    higher_is_better: bool = True
    column: bool = False
    compared: bool = False
    n_stat: int = 1
    min_samples: int = 0
    skip_none: bool = True
    label: Callable[[Sequence[int]], str] | None = None
    pattern: str | None = None
    kind: str = "math"
    bounded: bool = True

    @property
    def row_fields(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    def output_name(self, rows: Sequence[Row]) -> str:
        return self.name if self.label is None else self.label([len(s) for s in by_problem(rows).values()])

    def totals(self, rows: Sequence[Row]) -> np.ndarray:
        """The statistics summed over the problems of ``rows``."""
        return np.sum([self.problem_stats(samples) for samples in by_problem(rows).values()], axis=0)

    def compute(self, rows: Sequence[Row]) -> float | None:
        """The value over ``rows`` pooled (``None``: nothing to judge)."""
        if not rows:
            return None
        return as_number(self.value(self.totals(rows)))


def as_number(value: Any) -> float | None:
    """A numpy scalar as a float, NaN as ``None``."""
    value = float(value)
    return None if np.isnan(value) else value


def problem_of(row: Row) -> Problem:
    """The problem a sample belongs to: ids are shared across languages and benchmarks."""
    return row.get("benchmark"), row["lang"], row["id"]


def by_problem(rows: Sequence[Row]) -> dict[Problem, list[Row]]:
    """Rows grouped by problem, in first-seen order."""
    out: dict[Problem, list[Row]] = defaultdict(list)
    for row in rows:
        out[problem_of(row)].append(row)
    return out


def ratio(totals: np.ndarray, num: int = 0, den: int = 1) -> np.ndarray:
    """``totals[..., num] / totals[..., den]``, NaN where the denominator is 0."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(totals[..., den] > 0, totals[..., num] / totals[..., den], np.nan)


def row_mean(name: str, field: RowField | tuple[RowField, ...], value: Callable[[Row], Any], **options: Any) -> Metric:
    """A mean over rows of ``value(row)``; rows where it is ``None`` are left out.

    Statistics per problem: (sum of values, rows counted); the value is their ratio.
    """
    fields = field if isinstance(field, tuple) else (field,)

    def stats(samples: Sequence[Row]) -> tuple[float, float]:
        kept = [float(v) for v in map(value, samples) if v is not None]
        return float(sum(kept)), float(len(kept))

    return Metric(name, fields, stats, ratio, **options)


def problem_mean(name: str, field: RowField, per_problem: Callable[[list[bool]], float], **options: Any) -> Metric:
    """A mean over problems of ``per_problem(correctness of its samples)`` (pass@k, avg@k).

    A problem where ``per_problem`` is undefined returns NaN, which makes the value ``None``.
    """
    def stats(samples: Sequence[Row]) -> tuple[float, float]:
        return float(per_problem([bool(row[field.name]) for row in samples])), 1.0

    return Metric(name, (field,), stats, ratio, **options)
