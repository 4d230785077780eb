"""The metric table: every corpus metric polyreason reports, defined once.

Each entry names the metric (MLflow-safe: ``pass_at_1``, ``slc_and_acc``), the scored-row
fields it reads, how one set of rows is reduced to its value (``compute``), whether it is a
column of the per-language table, and whether higher is better (for deltas against a baseline
model and Pareto fronts). Scoring emits the row fields listed here (``ROW_FIELDS``),
``components.metrics.aggregate`` applies ``compute`` under the benchmark's macro rule and
averages languages into groups, and reporting takes its table columns from here. Nothing else
lists metrics.

Values over one set of rows (``compute``; ``None`` per row = not applicable, left out):

* ``accuracy``: mean correctness of the rows (samples).
* ``pass_at_<k>``: unbiased pass@k (Chen et al., 2021, eq. 1) per problem, averaged over
  problems; a problem is ``(benchmark, lang, id)``. Needs k samples of every problem
  (``min_samples``): otherwise the value is ``None`` and the aggregation counts the short
  problems.
* ``avg_at_<n>``: mean over problems of their mean correctness (PCS reports avg@4 on
  MMATH); named after the sample count, ``avg_at_n`` when problems have different counts.
* ``lpr``: share of traces with a line-level verdict that pass; ``wpr``: share of the traces
  passing the line level whose word level passes; ``lcpr``: their harmonic mean (AdaMame
  appendix C.3), 0 when ``lpr`` is 0 and ``lpr`` itself when no trace has a word level
  (rule ``lcb`` on Latin-script languages).
* ``slc``: mean step-level language consistency; ``slc_and_acc``: share of all rows correct
  with SLC at or above the threshold (PCS); ``language_consistency``: share of traces whose
  top-1 detected language is the query language.
* ``ttc`` / ``ttc_chars``: mean share of the context window used (AdaMame section 4); a cost,
  so lower is better.
* ``fallback_share``: share of rows whose answer only a lenient fallback finds (an answer
  phrase, the last number, a short response) — strict extraction (the last ``\\boxed{}``
  after ``</think>``) finds none; what lenient scoring adds, or strict scoring drops.

The macro rule: a benchmark may declare a row field whose values are subsets reported with
equal weight (``MACRO_RULES``). MMATH: the PCS paper's evaluation setup macro-averages its
metrics (SLC, Acc, SLC&Acc, avg@4) over the four subsets MATH500, CNMO, AIME2024 and
AIME2025 to account for their different difficulty; pooled, MATH500 (311 of 374 problems)
would decide nearly every number.

>>> [m.name for m in metrics((1, 4))][:4]
['accuracy', 'pass_at_1', 'pass_at_4', 'avg_at_k']
>>> metric_for("pass_at_8").higher_is_better, metric_for("ttc").higher_is_better
(True, False)
>>> COLUMNS
('accuracy', 'lcpr', 'lpr', 'wpr', 'slc', 'slc_and_acc', 'ttc', 'ttc_chars')
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from components.metrics.accuracy import avg_at_key, pass_at_k, pass_at_key
from components.metrics.lcpr import lcpr_from_rates

Row = Mapping[str, Any]

MACRO_RULES: Mapping[str, str] = {"mmath": "source"}  # benchmark -> row field naming its subsets


@dataclass(frozen=True)
class Metric:
    """One corpus metric.

    ``compute`` reduces a set of rows to the value (``None``: nothing to judge);
    ``min_samples``: samples every problem needs (pass@k), else the value is ``None``;
    ``skip_none``: a mean over subsets or languages leaves out parts where the value is
    ``None`` (not applicable there); when False such a mean is ``None`` (the value is missing,
    and averaging the other parts would report a different quantity). ``label`` names the
    output from the rows when the name depends on them (avg@k).
    """

    name: str
    row_fields: tuple[str, ...]
    compute: Callable[[Sequence[Row]], float | None]
    column: bool
    higher_is_better: bool
    min_samples: int = 0
    skip_none: bool = True
    label: Callable[[Sequence[Row]], str] | None = None

    def output_name(self, rows: Sequence[Row]) -> str:
        return self.name if self.label is None else self.label(rows)


def mean(values: Iterable[Any]) -> float | None:
    """Mean of the values that are not ``None``; ``None`` when none is left."""
    kept = [float(v) for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def problem_of(row: Row) -> tuple[Any, Any, Any]:
    """The problem a sample belongs to: ids are shared across languages and benchmarks."""
    return row.get("benchmark"), row["lang"], row["id"]


def problems(rows: Sequence[Row]) -> dict[tuple[Any, Any, Any], list[bool]]:
    """Correctness of each problem's samples."""
    out: dict[tuple[Any, Any, Any], list[bool]] = defaultdict(list)
    for row in rows:
        out[problem_of(row)].append(bool(row["correct"]))
    return out


def _accuracy(rows: Sequence[Row]) -> float | None:
    return mean(bool(row["correct"]) for row in rows)


def _pass_at(k: int) -> Callable[[Sequence[Row]], float | None]:
    def compute(rows: Sequence[Row]) -> float | None:
        samples = problems(rows).values()
        if any(len(s) < k for s in samples):
            return None
        return mean(pass_at_k(len(s), sum(s), k) for s in samples)

    return compute


def _avg(rows: Sequence[Row]) -> float | None:
    return mean(sum(s) / len(s) for s in problems(rows).values())


def _avg_name(rows: Sequence[Row]) -> str:
    counts = {len(s) for s in problems(rows).values()}
    return avg_at_key(counts.pop()) if len(counts) == 1 else "avg_at_n"


def _lpr(rows: Sequence[Row]) -> float | None:
    return mean(row.get("line_pass") for row in rows)


def _wpr(rows: Sequence[Row]) -> float | None:
    return mean(row.get("word_pass") for row in rows if row.get("line_pass") is True)


def _lcpr(rows: Sequence[Row]) -> float | None:
    lpr, wpr = _lpr(rows), _wpr(rows)
    if lpr is None:
        return None
    if wpr is None:
        return lpr
    return lcpr_from_rates(lpr, wpr)


def _field_mean(field: str) -> Callable[[Sequence[Row]], float | None]:
    return lambda rows: mean(row.get(field) for row in rows)


def _slc_and_acc(rows: Sequence[Row]) -> float | None:
    return mean(bool(row.get("slc_and_acc")) for row in rows)


def _consistency(rows: Sequence[Row]) -> float | None:
    return mean(None if row.get("lang_detected") is None else row["lang_detected"] == row["lang"] for row in rows)


def pass_metric(k: int) -> Metric:
    """The pass@k entry for one k."""
    return Metric(pass_at_key(k), ("correct",), _pass_at(k), column=False, higher_is_better=True,
                  min_samples=k, skip_none=False)


ACCURACY = Metric("accuracy", ("correct",), _accuracy, column=True, higher_is_better=True)
AVG = Metric("avg_at_k", ("correct",), _avg, column=False, higher_is_better=True, label=_avg_name)
LANGUAGE_METRICS = (
    Metric("lcpr", ("line_pass", "word_pass"), _lcpr, column=True, higher_is_better=True),
    Metric("lpr", ("line_pass",), _lpr, column=True, higher_is_better=True),
    Metric("wpr", ("line_pass", "word_pass"), _wpr, column=True, higher_is_better=True),
    Metric("slc", ("slc",), _field_mean("slc"), column=True, higher_is_better=True),
    Metric("slc_and_acc", ("slc_and_acc",), _slc_and_acc, column=True, higher_is_better=True),
    Metric("language_consistency", ("lang_detected",), _consistency, column=False, higher_is_better=True),
    Metric("ttc", ("ttc",), _field_mean("ttc"), column=True, higher_is_better=False),
    Metric("ttc_chars", ("ttc_chars",), _field_mean("ttc_chars"), column=True, higher_is_better=False),
    Metric("fallback_share", ("fallback",), _field_mean("fallback"), column=False, higher_is_better=False),
)


def metrics(pass_k: Sequence[int] = (1,)) -> tuple[Metric, ...]:
    """The table for the requested pass@k values, in report order."""
    return (ACCURACY, *(pass_metric(k) for k in sorted(set(pass_k))), AVG, *LANGUAGE_METRICS)


COLUMNS: tuple[str, ...] = tuple(m.name for m in metrics() if m.column)
ROW_FIELDS: tuple[str, ...] = tuple(dict.fromkeys(f for m in metrics() for f in m.row_fields))
_FAMILIES = {re.compile(r"pass_at_(\d+)"): lambda match: pass_metric(int(match.group(1))),
             re.compile(r"avg_at_(\d+|n)"): lambda match: AVG}


def metric_for(name: str) -> Metric:
    """The entry behind an output name (``pass_at_8``, ``avg_at_4`` included)."""
    for metric in metrics():
        if metric.name == name:
            return metric
    for pattern, build in _FAMILIES.items():
        match = pattern.fullmatch(name)
        if match:
            return build(match)
    raise KeyError(f"unknown metric {name!r}")


def macro_field(benchmark: str | None) -> str | None:
    """The row field whose subsets ``benchmark`` averages with equal weight (None: pooled)."""
    return MACRO_RULES.get(benchmark) if benchmark is not None else None
