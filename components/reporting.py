"""Turn one benchmark's scores into MLflow-ready metrics, a language table and a plot.

Metric keys follow ``evaluation/<benchmark>/<lang>/<metric>`` plus the
``in_domain``/``out_of_domain``/``overall`` averages and AdaMame's resource
levels (table 14). MMATH's accuracy is the macro average over its four sources
(MATH500, AIME2024, AIME2025, CNMO), as the MMATH paper reports it; the
per-source accuracies are logged too. No ``@``/``&`` in names.

>>> key("mgsm", "fr", "pass_at_1")
'evaluation/mgsm/fr/pass_at_1'
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

MACRO_OVER_SOURCES = {"mmath"}
TABLE_METRICS = ("accuracy", "lcpr", "lpr", "wpr", "slc", "slc_and_acc", "ttc", "ttc_chars")


def key(benchmark: str, group: str, metric: str) -> str:
    return f"evaluation/{benchmark}/{group}/{metric}"


def _row_key(row: Mapping[str, Any]) -> tuple:
    return (str(row.get("id")), row.get("lang"), row.get("sample_index") or 0)


def source_accuracy(generations: Sequence[Mapping[str, Any]], scored: Sequence[Mapping[str, Any]]) -> dict:
    """Accuracy per (lang, source) and its macro average per language.

    >>> gens = [{"id": "1", "lang": "en", "sample_index": 0, "source": "A"},
    ...         {"id": "2", "lang": "en", "sample_index": 0, "source": "A"},
    ...         {"id": "3", "lang": "en", "sample_index": 0, "source": "B"}]
    >>> rows = [{"id": "1", "lang": "en", "sample_index": 0, "correct": True},
    ...         {"id": "2", "lang": "en", "sample_index": 0, "correct": False},
    ...         {"id": "3", "lang": "en", "sample_index": 0, "correct": True}]
    >>> source_accuracy(gens, rows)["en"]["macro"]
    0.75
    """
    sources = {_row_key(g): g.get("source") for g in generations}
    counts: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for row in scored:
        source = sources.get(_row_key(row))
        if source is None:
            continue
        cell = counts[row["lang"]][source]
        cell[0] += int(bool(row.get("correct")))
        cell[1] += 1
    out: dict[str, dict[str, float]] = {}
    for lang, per_source in counts.items():
        accuracies = {source: hits / total for source, (hits, total) in per_source.items()}
        out[lang] = {**accuracies, "macro": sum(accuracies.values()) / len(accuracies)}
    return out


def _numeric(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass
class BenchmarkReport:
    benchmark: str
    metrics: dict[str, float] = field(default_factory=dict)
    language_table: list[dict[str, Any]] = field(default_factory=list)

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
        """Accuracy against LCPR, one point per language.

        Built on ``matplotlib.figure.Figure`` directly (no pyplot: no GUI backend,
        no global figure registry, and about a second less to import).
        """
        from matplotlib.figure import Figure

        fig = Figure(figsize=(5, 4))
        ax = fig.subplots()
        for row in self.language_table:
            if _numeric(row.get("accuracy")) and _numeric(row.get("lcpr")):
                ax.scatter(row["lcpr"], row["accuracy"])
                ax.annotate(row["lang"], (row["lcpr"], row["accuracy"]))
        ax.set_xlabel("LCPR")
        ax.set_ylabel("accuracy")
        ax.set_xlim(-0.05, 1.05)
        ax.set_ylim(-0.05, 1.05)
        ax.set_title(f"{self.benchmark}: accuracy vs LCPR")
        fig.tight_layout()
        return fig


def benchmark_report(benchmark: str, generations: Sequence[Mapping[str, Any]], result: Mapping[str, Any],
                     in_domain: Sequence[str]) -> BenchmarkReport:
    """Metrics per language, per group and overall, plus the per-language table."""
    report = BenchmarkReport(benchmark)
    aggregate = dict(result.get("aggregate", {}))
    if benchmark in MACRO_OVER_SOURCES:
        aggregate = _with_macro_accuracy(aggregate, source_accuracy(generations, result.get("rows", [])), report)
    for group, values in aggregate.items():
        for metric, value in values.items():
            if _numeric(value):
                report.metrics[key(benchmark, group, metric)] = float(value)
    for group, values in (result.get("groups") or {}).items():
        for metric, value in (values or {}).items():
            if _numeric(value):
                report.metrics[key(benchmark, group, metric)] = float(value)
    report.language_table = [
        {"lang": lang, **{m: values.get(m) for m in TABLE_METRICS}, "n_rows": values.get("n_rows")}
        for lang, values in aggregate.items()
    ]
    return report


def _with_macro_accuracy(aggregate: dict, per_source: dict, report: BenchmarkReport) -> dict:
    out = {}
    for group, values in aggregate.items():
        values = dict(values)
        if group in per_source:
            values["accuracy_micro"] = values.get("accuracy")
            values["accuracy"] = per_source[group]["macro"]
            for source, accuracy in per_source[group].items():
                if source != "macro":
                    report.metrics[key(report.benchmark, group, f"accuracy_{source.lower()}")] = accuracy
        out[group] = values
    macro = [v["macro"] for v in per_source.values()]
    if "overall" in out and macro:
        out["overall"] = {**out["overall"], "accuracy_micro": out["overall"].get("accuracy"),
                          "accuracy": sum(macro) / len(macro)}
    return out
