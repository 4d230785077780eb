"""Turn one benchmark's scores into MLflow-ready metrics, a language table and a plot.

Metric keys follow ``evaluation/<benchmark>/<lang or group>/<metric>`` (no ``@``/``&``): every
numeric value of each language cell and of ``overall`` (``scoring.score_rows``'
``aggregate``) and of each language group (its ``groups``, computed with the profile's
in-domain languages at scoring time), each metric with its ``<metric>_stderr`` and
``<metric>_n``. Reporting computes no metric: the numbers, MMATH's macro average over its
subsets and the standard errors included, come from ``components.metrics.aggregate``. A cell
under a macro rule adds each subset's values as ``<metric>_<subset>`` (``accuracy_math500``,
``accuracy_math500_stderr``) and the row-pooled values as ``<metric>_micro``. The language
table's columns are the metric table's columns (``components.metrics.registry.table_columns``),
each with its standard error and n: the scores' ``headline`` accuracy first (``accuracy``
unless the scoring section names a pass@k; every row says which under ``headline``), the
LCPRs of rules scored beside the main rule after ``lcpr``. The plot draws the headline
accuracy against LCPR with one standard error on both axes. A QA benchmark's table has the QA
columns (fEM first, c3Recall, CLR, EM, searches) and its plot draws fEM against CLR, the
answer-language rate (``components.metrics.registry.LANGUAGE_METRIC``).

``failed_lines_table`` lists every line that failed the LCPR line level, one record each (the row's id,
language and sample, the line and the language detected in it), so a low LCPR can be read line by line; the
evaluation logs it as an MLflow table beside the language table.

``write_report`` renders everything a benchmark logs into one directory (metrics,
language table, failed lines, joined generations, the PNG), so the flow can cache rendering
like any other stage and a cached re-run only uploads files.

>>> key("mgsm", "fr", "pass_at_1")
'evaluation/mgsm/fr/pass_at_1'
>>> cell_metrics({"accuracy": 0.5, "accuracy_stderr": 0.1, "accuracy_n": 3, "pass_at_4": None, "n_rows": 3,
...               "macro_over": "source", "subsets": {"AIME 2024": {"accuracy": 1.0, "accuracy_n": 1}},
...               "pooled": {"accuracy": 0.25}})  # doctest: +NORMALIZE_WHITESPACE
{'accuracy': 0.5, 'accuracy_stderr': 0.1, 'accuracy_n': 3.0, 'n_rows': 3.0, 'accuracy_aime_2024': 1.0,
 'accuracy_aime_2024_n': 1.0, 'accuracy_micro': 0.25}
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from components.metrics.aggregate import COUNT, STDERR
from components.data.benchmarks import benchmark_kind as kind_of
from components.metrics.registry import LANGUAGE_METRIC, table_columns

METRICS_FILE, LANGUAGES_FILE, FIGURE_FILE = "metrics.json", "languages.json", "accuracy_vs_lcpr.png"
FAILED_LINES_FILE = "failed_lines.json"


def key(benchmark: str, group: str, metric: str) -> str:
    return f"evaluation/{benchmark}/{group}/{metric}"


def _row_key(row: Mapping[str, Any]) -> tuple:
    return (str(row.get("id")), row.get("lang"), row.get("sample_index") or 0)


def _suffix(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def _suffixed(values: Mapping[str, Any], suffix: str) -> dict[str, float]:
    """``<metric>_<suffix>`` with its ``_stderr``/``_n`` after the suffix; counts as ``<count>_<suffix>``."""
    out = {}
    for name, value in values.items():
        if not _numeric(value):
            continue
        for tail in (STDERR, COUNT):
            if name.endswith(tail) and name[: -len(tail)] in values:
                out[f"{name[: -len(tail)]}_{suffix}{tail}"] = float(value)
                break
        else:
            out[f"{name}_{suffix}"] = float(value)
    return out


def cell_metrics(cell: Mapping[str, Any]) -> dict[str, float]:
    """The numeric values of one language or group cell, subsets and pooled values suffixed."""
    out = {name: float(value) for name, value in cell.items() if _numeric(value)}
    for subset, values in (cell.get("subsets") or {}).items():
        out.update(_suffixed(values, _suffix(subset)))
    out.update(_suffixed(cell.get("pooled") or {}, "micro"))
    return out


def _numeric(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass
class BenchmarkReport:
    benchmark: str
    metrics: dict[str, float] = field(default_factory=dict)
    language_table: list[dict[str, Any]] = field(default_factory=list)
    headline: str = "accuracy"
    failed_lines: list[dict[str, Any]] = field(default_factory=list)

    def generations_table(self, generations: Sequence[Mapping[str, Any]], result: Mapping[str, Any]) -> list[dict]:
        """Generation rows joined with every verdict of their scored row."""
        verdicts = {_row_key(row): row for row in result.get("rows", [])}
        joined = []
        for row in generations:
            verdict = verdicts.get(_row_key(row), {})
            extra = {k: v for k, v in verdict.items() if k not in row}
            joined.append({**row, **extra})
        return joined

    def figure(self):
        """Accuracy against LCPR (QA: fEM against CLR), one point per language, with one standard error on
        each axis.

        Built on ``matplotlib.figure.Figure`` directly (no pyplot: no GUI backend,
        no global figure registry, and about a second less to import).
        """
        from matplotlib.figure import Figure

        fig = Figure(figsize=(5, 4))
        ax = fig.subplots()
        accuracy, language = self.headline, LANGUAGE_METRIC[kind_of(self.benchmark)]
        for row in self.language_table:
            if _numeric(row.get(accuracy)) and _numeric(row.get(language)):
                ax.errorbar(row[language], row[accuracy], xerr=row.get(language + STDERR),
                            yerr=row.get(accuracy + STDERR), fmt="o", capsize=3)
                ax.annotate(row["lang"], (row[language], row[accuracy]))
        ax.set_xlabel(language.upper())
        ax.set_ylabel(accuracy)
        ax.set_xlim(-0.05, 1.05)
        ax.set_ylim(-0.05, 1.05)
        ax.set_title(f"{self.benchmark}: {accuracy} vs {language.upper()} (bars: ±1 standard error)", fontsize=9)
        fig.tight_layout()
        return fig


def benchmark_report(benchmark: str, result: Mapping[str, Any]) -> BenchmarkReport:
    """Metrics per language, per group and overall, plus the per-language table."""
    report = BenchmarkReport(benchmark, headline=result.get("headline") or "accuracy")
    cells = {**(result.get("aggregate") or {}), **(result.get("groups") or {})}
    for name, cell in cells.items():
        for metric, value in cell_metrics(cell).items():
            report.metrics[key(benchmark, name, metric)] = value
    report.language_table = [_language_row(lang, values, report.headline, kind_of(benchmark))
                             for lang, values in (result.get("aggregate") or {}).items()]
    return report


def failed_lines_table(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One record per line that failed the LCPR line level: the row (id, language, sample) and the line with the
    language detected in it, from the scored rows' ``failed_lines``.

    >>> failed_lines_table({"rows": [{"id": "q1", "lang": "fr", "sample_index": 0,
    ...                               "failed_lines": [{"line": "Wait, let me check.", "detected": "en"}]},
    ...                              {"id": "q2", "lang": "fr", "sample_index": 0, "failed_lines": None}]})
    [{'id': 'q1', 'lang': 'fr', 'sample_index': 0, 'line': 'Wait, let me check.', 'detected': 'en'}]
    """
    return [{"id": row.get("id"), "lang": row.get("lang"), "sample_index": row.get("sample_index"), **line}
            for row in result.get("rows", []) for line in row.get("failed_lines") or []]


def _language_row(lang: str, values: Mapping[str, Any], headline: str, kind: str = "math") -> dict[str, Any]:
    names = [name for m in table_columns(values, headline, kind) for name in (m, m + STDERR, m + COUNT)]
    return {"lang": lang, "headline": headline, **{name: values.get(name) for name in names},
            "n_rows": values.get("n_rows")}


def generations_file(benchmark: str) -> str:
    """Name of the joined generations table in a report directory."""
    return f"{benchmark}_generations.jsonl"


def write_report(benchmark: str, generations_path: str | Path, scores_path: str | Path,
                 out_dir: str | Path) -> BenchmarkReport:
    """Render one benchmark's report into ``out_dir``: metrics, language table, generations, PNG."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    from components.scoring import read_jsonl_rows

    generations = [row for _, row in read_jsonl_rows(generations_path)[0]]  # bad lines: counted by scoring
    result = json.loads(Path(scores_path).read_text(encoding="utf-8"))
    report = benchmark_report(benchmark, result)
    report.failed_lines = failed_lines_table(result)
    table = report.generations_table(generations, result)
    (out / generations_file(benchmark)).write_text(
        "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in table), encoding="utf-8")
    (out / METRICS_FILE).write_text(json.dumps(report.metrics, sort_keys=True), encoding="utf-8")
    (out / LANGUAGES_FILE).write_text(json.dumps(report.language_table, ensure_ascii=False), encoding="utf-8")
    (out / FAILED_LINES_FILE).write_text(json.dumps(report.failed_lines, ensure_ascii=False), encoding="utf-8")
    report.figure().savefig(out / FIGURE_FILE, dpi=100)
    return report


def read_report(benchmark: str, out_dir: str | Path) -> BenchmarkReport:
    """The metrics and language table that ``write_report`` left in ``out_dir``."""
    out = Path(out_dir)
    report = BenchmarkReport(benchmark)
    report.metrics = json.loads((out / METRICS_FILE).read_text(encoding="utf-8"))
    report.language_table = json.loads((out / LANGUAGES_FILE).read_text(encoding="utf-8"))
    report.headline = next((row["headline"] for row in report.language_table if row.get("headline")), "accuracy")
    failed = out / FAILED_LINES_FILE
    report.failed_lines = json.loads(failed.read_text(encoding="utf-8")) if failed.is_file() else []
    return report
