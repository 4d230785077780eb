"""The metric table: every metric polyreason reports, each defined once, both halves in one entry.

``METRICS`` is the registry: name -> :class:`components.metrics.metric.Metric`, or a family
(:class:`PerK`, :class:`PerRule`) that expands into several. An entry holds the row fields it needs
with their sample-level scorers, the per-problem statistics, the corpus value, whether it
is a column of the per-language table (``column``) or of the model comparison
(``compared``), and whether higher is better. The families: pass@k, one per requested k,
and the LCPRs of rules scored beside the main one. Scoring writes the row fields of every
entry (``row_fields()``), ``components.metrics.aggregate`` computes every entry's value,
standard error and n under the benchmark's macro rule and averages languages into groups,
reporting and the comparison take their columns from here. Adding a metric is adding one entry.

Values over one set of rows (``None`` per row = not applicable, left out):

* ``accuracy``: mean correctness of the rows (samples).
* ``pass_at_<k>``: unbiased pass@k (Chen et al., 2021, eq. 1) per problem, averaged over
  problems; a problem is ``(benchmark, lang, id)``. Needs k samples of every problem
  (``min_samples``): otherwise the value is ``None`` and the aggregation counts the short
  problems.
* ``avg_at_<n>``: mean over problems of their mean correctness (PCS reports avg@4 on
  MMATH); named after the sample count, ``avg_at_n`` when problems have different counts.
* ``lpr``: share of traces with a line-level verdict that pass (a failing row carries ``failed_lines``:
  each failing line with the language detected, ``components.metrics.lcpr_lines``); ``wpr``: share of the traces
  passing the line level whose word level passes; ``lcpr``: their harmonic mean (AdaMame
  appendix C.3), 0 when ``lpr`` is 0 and ``lpr`` itself when no trace has a word level
  (rule ``lcb`` on Latin-script languages). ``lcpr_<rule>``, ``lpr_<rule>``, ``wpr_<rule>``:
  the same under a rule scored beside the main one (``lcpr_metrics``; the rows carry
  ``line_pass_<rule>``/``word_pass_<rule>``), so a paper's own definition and the corrected
  one sit in one table.
* ``slc``: mean step-level language consistency; ``slc_and_acc``: share of all rows correct
  with SLC at or above the threshold (PCS); ``language_consistency``: share of traces whose
  top-1 detected language is the query language.
* ``ttc`` / ``ttc_chars``: mean share of the context window used (AdaMame section 4); a cost,
  so lower is better.
* ``fallback_share``: share of rows whose answer only a lenient fallback finds (an answer
  phrase, the last number, a short response) — strict extraction (the last ``\\boxed{}``
  after ``</think>``) finds none; what lenient scoring adds, or strict scoring drops.

Schemes. How a benchmark's rows are scored is its ``Scheme``: its kind and its macro field,
which its spec declares (``components.data.benchmark_spec``) and the callers hand in as
``schemes`` (benchmark -> scheme; ``components.data.benchmarks.SCHEMES``): the metrics package sits
below the benchmarks and imports none. A benchmark without a scheme is scored as ``math``, pooled.

Kinds. The entries above are the ``math`` kind: answers a verifier checks, traces whose
language is judged. Open-domain QA benchmarks (MKQA, XOR-TyDi, the offline set) are the ``qa``
kind, with LcRL's metrics (``components.metrics.qa_registry.QA_METRICS``: ``fem``, ``c3recall``,
``clr``, ``em``, ``searches``); their reports lead with ``fem`` and plot it against ``clr``, as
math reports plot the headline accuracy against ``lcpr`` (``headline_for``, ``LANGUAGE_METRIC``).
Rows of one scoring call are of one kind (``kind_of_rows``).

The macro rule: a benchmark may declare a row field whose values are subsets reported with
equal weight (its scheme's ``macro_field``). MMATH: the PCS paper's evaluation setup
macro-averages its metrics (SLC, Acc, SLC&Acc, avg@4) over the four subsets MATH500, CNMO,
AIME2024 and AIME2025 to account for their different difficulty; pooled, MATH500 (311 of 374
problems) would decide nearly every number.

>>> [m.name for m in metrics((1, 4))][:4]
['accuracy', 'pass_at_1', 'pass_at_4', 'avg_at_k']
>>> metric_for("pass_at_8").higher_is_better, metric_for("ttc").higher_is_better
(True, False)
>>> columns()
('accuracy', 'lcpr', 'lpr', 'wpr', 'slc', 'slc_and_acc', 'ttc', 'ttc_chars')
>>> table_columns({"pass_at_4": 0.9, "lcpr_adamame": 0.5}, headline="pass_at_4")[:4]
('pass_at_4', 'accuracy', 'lcpr', 'lcpr_adamame')
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from components.metrics.accuracy import avg_at_key, pass_at_k, pass_at_key
from components.metrics.lcpr import RULES as LCPR_RULES
from components.metrics.metric import Metric, Row, RowField, problem_mean, ratio, row_mean
from components.metrics.qa_registry import QA_METRICS
from components.metrics.slc import slc_and_acc
from components.metrics.ttc import ttc_chars, ttc_tokens


@dataclass(frozen=True)
class Scheme:
    """How a benchmark's rows are scored: the metric table's ``kind`` (``math`` or ``qa``) and the row field whose
    subsets are averaged with equal weight (``None``: pooled). Any object with these two attributes serves (a
    benchmark's spec does, ``components.data.benchmark_spec.BenchmarkSpec``)."""

    kind: str = "math"
    macro_field: str | None = None


Schemes = Mapping[str, Any]  # benchmark -> its scheme (a ``Scheme``, or anything with its two attributes)
MATH = Scheme()
LANGUAGE_METRIC: Mapping[str, str] = {"math": "lcpr", "qa": "clr"}  # the language axis of a kind's plots
QA_HEADLINE = "fem"


def _ttc(sample: Any) -> float | None:
    context = sample.row.get("max_context") or sample.rules.max_context
    if sample.row.get("num_tokens") is None or not context:
        return None
    return ttc_tokens(sample.row["num_tokens"], context)


CORRECT = RowField("correct", lambda s: s.verdict["correct"])
FALLBACK = RowField("fallback", lambda s: s.verdict["fallback"])
LINE_PASS = RowField("line_pass", lambda s: s.line_pass())
FAILED_LINES = RowField("failed_lines", lambda s: s.failed_lines(), evidence=True)  # beside a failing line level
WORD_PASS = RowField("word_pass", lambda s: s.word_pass())
SLC = RowField("slc", lambda s: s.slc)
SLC_AND_ACC = RowField("slc_and_acc", lambda s: slc_and_acc(s.verdict["correct"], s.slc, s.rules.slc_threshold))
LANG_DETECTED = RowField("lang_detected", lambda s: s.detected_language())
TTC = RowField("ttc", _ttc)
TTC_CHARS = RowField("ttc_chars", lambda s: ttc_chars(s.completion))


@dataclass(frozen=True)
class PerK:
    """A family of metrics, one per requested k (pass@k)."""

    build: Callable[[int], Metric]
    pattern: str

    def instances(self, pass_k: Sequence[int], beside: Sequence[str]) -> tuple[Metric, ...]:
        return tuple(self.build(k) for k in sorted(set(pass_k)))

    def match(self, name: str) -> Metric | None:
        found = re.fullmatch(self.pattern, name)
        return self.build(int(found.group(1))) if found else None


@dataclass(frozen=True)
class PerRule:
    """A family of metrics, a few per LCPR rule scored beside the main one."""

    build: Callable[[str], tuple[Metric, ...]]

    def instances(self, pass_k: Sequence[int], beside: Sequence[str]) -> tuple[Metric, ...]:
        return tuple(metric for rule in beside for metric in self.build(rule))

    def match(self, name: str) -> Metric | None:
        rules = "|".join(sorted(LCPR_RULES, key=len, reverse=True))
        found = re.fullmatch(rf"(?:lcpr|lpr|wpr)_({rules})", name)
        return {m.name: m for m in self.build(found.group(1))}[name] if found else None


def _pass_at(k: int) -> Callable[[list[bool]], float]:
    return lambda samples: pass_at_k(len(samples), sum(samples), k) if len(samples) >= k else float("nan")


def pass_metric(k: int) -> Metric:
    """The pass@k entry for one k."""
    return problem_mean(pass_at_key(k), CORRECT, _pass_at(k), min_samples=k, skip_none=False, n_stat=1)


def _avg_name(samples_per_problem: Sequence[int]) -> str:
    counts = set(samples_per_problem)
    return avg_at_key(counts.pop()) if len(counts) == 1 else "avg_at_n"


def _lcpr_value(totals: np.ndarray) -> np.ndarray:
    """The harmonic mean of LPR and WPR (``lcpr_from_rates``, vectorized); LPR alone without a word level."""
    lpr, wpr = ratio(totals, 0, 1), ratio(totals, 2, 3)
    with np.errstate(invalid="ignore", divide="ignore"):
        harmonic = np.where(lpr + wpr > 0, 2 * lpr * wpr / (lpr + wpr), 0.0)
    return np.where(np.isnan(wpr), lpr, harmonic)


def _lcpr_family(suffix: str, line: RowField, word: RowField, *, main: bool) -> tuple[Metric, Metric, Metric]:
    """LCPR, LPR and WPR over the line and word verdicts in ``line``/``word`` (WPR over passing lines); the main
    rule's LPR also writes each failing row's ``failed_lines``."""
    evidence = (line, FAILED_LINES) if main else line
    lpr = row_mean(f"lpr{suffix}", evidence, lambda row: row.get(line.name), column=main)
    wpr = row_mean(f"wpr{suffix}", (line, word), lambda row: row.get(word.name) if row.get(line.name) is True
                   else None, column=main)
    lcpr = Metric(f"lcpr{suffix}", (line, word), lambda rows: (*lpr.problem_stats(rows), *wpr.problem_stats(rows)),
                  _lcpr_value, column=True, compared=main)
    return lcpr, lpr, wpr


def lcpr_metrics(rule: str) -> tuple[Metric, ...]:
    """``lcpr_<rule>`` (a table column), ``lpr_<rule>`` and ``wpr_<rule>`` of a rule scored beside the main one.

    >>> [m.name for m in lcpr_metrics("adamame")], lcpr_metrics("adamame")[0].row_fields
    (['lcpr_adamame', 'lpr_adamame', 'wpr_adamame'], ('line_pass_adamame', 'word_pass_adamame'))
    """
    line = RowField(f"line_pass_{rule}", lambda s: s.beside(rule)["line_pass"])
    word = RowField(f"word_pass_{rule}", lambda s: s.beside(rule)["word_pass"])
    return _lcpr_family(f"_{rule}", line, word, main=False)


def _consistent(row: Row) -> Any:
    return None if row.get("lang_detected") is None else row["lang_detected"] == row["lang"]


LCPR, LPR, WPR = _lcpr_family("", LINE_PASS, WORD_PASS, main=True)

METRICS: dict[str, Metric | PerK | PerRule] = {
    "accuracy": row_mean("accuracy", CORRECT, lambda row: bool(row["correct"]), column=True, compared=True),
    "pass_at_k": PerK(pass_metric, r"pass_at_(\d+)"),
    "avg_at_k": problem_mean("avg_at_k", CORRECT, lambda s: sum(s) / len(s), label=_avg_name,
                             pattern=r"avg_at_(\d+|n)"),
    "lcpr": LCPR,
    "lpr": LPR,
    "wpr": WPR,
    "slc": row_mean("slc", SLC, lambda row: row.get("slc"), column=True),
    "slc_and_acc": row_mean("slc_and_acc", SLC_AND_ACC, lambda row: bool(row.get("slc_and_acc")), column=True,
                            compared=True),
    "language_consistency": row_mean("language_consistency", LANG_DETECTED, _consistent),
    "ttc": row_mean("ttc", TTC, lambda row: row.get("ttc"), column=True, compared=True, higher_is_better=False,
                   bounded=False),
    "ttc_chars": row_mean("ttc_chars", TTC_CHARS, lambda row: row.get("ttc_chars"), column=True,
                          higher_is_better=False, bounded=False),
    "fallback_share": row_mean("fallback_share", FALLBACK, lambda row: row.get("fallback"), higher_is_better=False),
    "lcpr_beside": PerRule(lcpr_metrics),
    "fem": QA_METRICS["fem"],  # open-domain QA (kind qa): components.metrics.qa_registry
    "c3recall": QA_METRICS["c3recall"],
    "clr": QA_METRICS["clr"],
    "em": QA_METRICS["em"],
    "searches": QA_METRICS["searches"],
}


def scheme_of(benchmark: str | None, schemes: Schemes) -> Scheme:
    """The scheme of a benchmark's rows (``math``, pooled, for one ``schemes`` does not name)."""
    return schemes.get(benchmark, MATH) if benchmark is not None else MATH


def kind_of(benchmark: str | None, schemes: Schemes) -> str:
    """The metric table's kind of a benchmark's rows.

    >>> schemes = {"mkqa": Scheme("qa")}
    >>> kind_of("mkqa", schemes), kind_of("mgsm", schemes), kind_of(None, schemes)
    ('qa', 'math', 'math')
    """
    return scheme_of(benchmark, schemes).kind


def kind_of_rows(rows: Iterable[Row], schemes: Schemes) -> str:
    """The one kind of ``rows`` (``math`` when there are none); ``ValueError`` when they mix kinds."""
    kinds = {row.get("benchmark"): kind_of(row.get("benchmark"), schemes) for row in rows}
    if len(set(kinds.values())) > 1:
        qa = sorted(name for name, kind in kinds.items() if kind == "qa")
        raise ValueError("rows of QA benchmarks and of other benchmarks cannot be scored together (their metrics "
                         f"differ): score each benchmark's rows apart ({', '.join(qa)} are QA)")
    return set(kinds.values()).pop() if kinds else "math"


def headline_for(benchmark: str | None, schemes: Schemes, headline: str = "accuracy") -> str:
    """The accuracy a benchmark's reports lead with: the scoring section's for math, ``fem`` for QA."""
    return QA_HEADLINE if kind_of(benchmark, schemes) == "qa" else headline


def metrics(pass_k: Sequence[int] = (1,), beside: Sequence[str] = (), kind: str = "math") -> tuple[Metric, ...]:
    """The table of one kind for the requested pass@k values and LCPR rules scored beside, in report order."""
    out: list[Metric] = []
    for entry in METRICS.values():
        if isinstance(entry, Metric):
            out.extend((entry,) if entry.kind == kind else ())
        elif kind == "math":  # the pass@k and beside-rule families
            out.extend(entry.instances(pass_k, beside))
    return tuple(out)


def columns(kind: str = "math") -> tuple[str, ...]:
    """The per-language table's metric columns."""
    return tuple(m.name for m in metrics(kind=kind) if m.column)


def compared(kind: str = "math") -> tuple[str, ...]:
    """The metrics the model comparison puts side by side."""
    return tuple(m.name for m in metrics(kind=kind) if m.compared)


def row_fields(beside: Sequence[str] = (), kind: str = "math") -> dict[str, RowField]:
    """Every row field the table reads, once each; two entries naming one field must share its scorer."""
    fields: dict[str, RowField] = {}
    for metric in metrics(beside=beside, kind=kind):
        for field in metric.fields:
            if fields.setdefault(field.name, field) is not field:
                raise ValueError(f"metrics {metric.name!r} and another define row field {field.name!r} twice")
    return fields


def metric_for(name: str) -> Metric:
    """The entry behind an output name (``pass_at_8``, ``avg_at_4``, ``lcpr_adamame`` included)."""
    for entry in METRICS.values():
        if isinstance(entry, Metric):
            if entry.name == name or (entry.pattern is not None and re.fullmatch(entry.pattern, name)):
                return entry
        elif (found := entry.match(name)) is not None:
            return found
    raise KeyError(f"unknown metric {name!r}")


def beside_rules(rows: Iterable[Row]) -> list[str]:
    """The LCPR rules whose verdicts the rows carry beside the main rule's (``line_pass_<rule>``).

    >>> beside_rules([{"line_pass": True, "line_pass_adamame": None}])
    ['adamame']
    """
    keys = {key for row in rows for key in row}
    return [rule for rule in sorted(LCPR_RULES) if f"line_pass_{rule}" in keys]


def beside_columns(names: Iterable[str]) -> list[str]:
    """The ``lcpr_<rule>`` names among ``names`` (not a subset's ``lcpr_math500`` nor ``lcpr_micro``).

    >>> beside_columns(["lcpr", "lcpr_adamame", "lcpr_math500", "lpr_adamame", "lcpr_adamame_stderr"])
    ['lcpr_adamame']
    """
    return sorted({name for name in names if name.startswith("lcpr_") and name.removeprefix("lcpr_") in LCPR_RULES})


def table_columns(cell: Mapping[str, Any], headline: str = "accuracy", kind: str = "math") -> tuple[str, ...]:
    """The language table's columns for a cell: the headline accuracy first, then ``columns()`` with the
    LCPRs of rules scored beside placed after ``lcpr`` (a QA cell: the QA columns)."""
    if kind == "qa":
        return columns("qa")
    ordered = [headline, *(c for c in columns() if c != headline)]
    at = ordered.index("lcpr") + 1
    return tuple(ordered[:at] + beside_columns(cell) + ordered[at:])


def macro_fields(schemes: Schemes) -> dict[str, str]:
    """Benchmark -> the row field whose subsets it averages with equal weight, for those that do."""
    return {name: scheme.macro_field for name, scheme in schemes.items() if scheme.macro_field is not None}
