"""Turn one benchmark's scores into MLflow-ready metrics, a language table and a plot.

Metric keys follow ``evaluation/<benchmark>/<lang>/<metric>`` plus the
``in_domain``/``out_of_domain``/``overall`` averages and AdaMame's resource
levels (table 14). MMATH's accuracy is the macro average over its four sources
(MATH500, AIME2024, AIME2025, CNMO), as the MMATH paper reports it; the
per-source accuracies are logged too. No ``@``/``&`` in names.

``write_report`` renders everything a benchmark logs into one directory (metrics,
language table, joined generations, the PNG), so the flow can cache rendering
like any other stage and a cached re-run only uploads files.

>>> key("mgsm", "fr", "pass_at_1")
'evaluation/mgsm/fr/pass_at_1'
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

MACRO_OVER_SOURCES = {"mmath"}
METRICS_FILE, LANGUAGES_FILE, FIGURE_FILE = "metrics.json", "languages.json", "accuracy_vs_lcpr.png"
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


def generations_file(benchmark: str) -> str:
    """Name of the joined generations table in a report directory."""
    return f"{benchmark}_generations.jsonl"


def write_report(benchmark: str, generations_path: str | Path, scores_path: str | Path, out_dir: str | Path,
                 in_domain: Sequence[str]) -> BenchmarkReport:
    """Render one benchmark's report into ``out_dir``: metrics, language table, generations, PNG."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    from components.scoring import read_jsonl_rows

    generations = [row for _, row in read_jsonl_rows(generations_path)[0]]  # bad lines: counted by scoring
    result = json.loads(Path(scores_path).read_text(encoding="utf-8"))
    report = benchmark_report(benchmark, generations, result, in_domain=in_domain)
    table = report.generations_table(generations, result)
    (out / generations_file(benchmark)).write_text(
        "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in table), encoding="utf-8")
    (out / METRICS_FILE).write_text(json.dumps(report.metrics, sort_keys=True), encoding="utf-8")
    (out / LANGUAGES_FILE).write_text(json.dumps(report.language_table, ensure_ascii=False), encoding="utf-8")
    report.figure().savefig(out / FIGURE_FILE, dpi=100)
    return report


def read_report(benchmark: str, out_dir: str | Path) -> BenchmarkReport:
    """The metrics and language table that ``write_report`` left in ``out_dir``."""
    out = Path(out_dir)
    report = BenchmarkReport(benchmark)
    report.metrics = json.loads((out / METRICS_FILE).read_text(encoding="utf-8"))
    report.language_table = json.loads((out / LANGUAGES_FILE).read_text(encoding="utf-8"))
    return report
