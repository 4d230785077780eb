"""The headline of a model comparison: what a recipe run is about, in a few lines that fit a terminal.

The full comparison (``components.reports.comparison``) has a block per metric and a line per
language and language group, each cell with its error and its paired delta: on the embedded
demo four metrics by six lines, 178 characters wide. A recipe is about how its trained
models move the language of the reasoning, and the accuracy beside it, in the languages the
training means to change; the headline is that part of the table:

* per benchmark, one group: ``in_domain`` (the languages of ``evaluation.scoring.in_domain``
  the benchmark evaluates) when the comparison has it, else ``all``, else ``overall``; without any, each language;
* two metrics: the benchmark kind's language metric (``LANGUAGE_METRIC``: LCPR for math,
  CLR for QA), then the accuracy the comparison leads with (its rows' ``headline``);
* each model with its value, interval and n, and each delta with the model it is
  minus (``reference``), its paired 95% interval, the mark and the problems judged for both, as
  the table writes them (``value_text``, ``delta_text``).

Written by hand: no library renders this selection; the cells are the table's own texts.

>>> rows = [{"benchmark": "mgsm", "lang": "in_domain", "model": "base", "headline": "accuracy", "lcpr": 0.5,
...          "lcpr_stderr": 0.1, "lcpr_n": 8, "accuracy": 0.25},
...         {"benchmark": "mgsm", "lang": "in_domain", "model": "grpo", "headline": "accuracy", "lcpr": 0.75,
...          "lcpr_n": 8, "reference": "base", "lcpr_delta": 0.25, "lcpr_delta_low": 0.1, "lcpr_delta_high": 0.4,
...          "lcpr_delta_significant": True, "lcpr_n_both": 8, "accuracy": 0.25, "accuracy_delta": 0.0,
...          "accuracy_n_both": 8}]
>>> print("\\n".join(headline_lines(rows, ["fr", "ja"])[1:]))
lcpr      base  0.500 [0.318, 0.682] (n 8)
          grpo  0.750 (n 8)                 grpo - base  Δ +0.250 [+0.100, +0.400]* (n_both 8)
accuracy  base  0.250
          grpo  0.250                       grpo - base  Δ +0.000 (n_both 8)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from components.reports.comparison import MIN_SHARED, aligned, delta_text, value_text
from components.data.benchmarks import benchmark_kind as kind_of
from components.metrics.registry import LANGUAGE_METRIC

CHART_SECTION = "evaluation/"  # the headline's charts: one "/", so MLflow's first section
GROUPS = ("in_domain", "all", "overall")  # the group a headline is about, in order of preference
LEGEND = ("value [95% interval] (n problems); Δ [paired 95% interval] (n_both: problems judged for both);\n"
          f"* = the interval excludes 0 on {MIN_SHARED}+ problems; the methods: the full table's legend")


def headline_groups(rows: Sequence[Mapping[str, Any]], benchmark: str) -> list[str]:
    """What the headline of ``benchmark`` is about: its first group of ``GROUPS``, else each of its languages."""
    langs = list(dict.fromkeys(r["lang"] for r in rows if r["benchmark"] == benchmark))
    found = [group for group in GROUPS if group in langs]
    return found[:1] or langs


def headline_metrics(rows: Sequence[Mapping[str, Any]], benchmark: str) -> list[str]:
    """The language metric of the benchmark's kind, then the accuracy its comparison leads with."""
    accuracy = next((r.get("headline") for r in rows if r["benchmark"] == benchmark and r.get("headline")), "accuracy")
    return list(dict.fromkeys((LANGUAGE_METRIC[kind_of(benchmark)], accuracy)))


def group_text(group: str, in_domain: Sequence[str] | None) -> str:
    """``in-domain (fr, ja, th)``, ``all languages``, ``overall`` or the language itself."""
    if group == "in_domain":
        return f"in-domain ({', '.join(in_domain)})" if in_domain else "in-domain languages"
    return {"all": "all languages", "overall": "overall"}.get(group, group)


def headline_lines(rows: Sequence[Mapping[str, Any]], in_domain: Sequence[str] | None = None) -> list[str]:
    """Per benchmark: a title, then per headline metric one line per model (value, and its delta)."""
    lines = []
    for benchmark in dict.fromkeys(r["benchmark"] for r in rows):
        for group in headline_groups(rows, benchmark):
            cells = [r for r in rows if r["benchmark"] == benchmark and r["lang"] == group]
            table = []
            for metric in headline_metrics(rows, benchmark):
                for index, row in enumerate(cells):  # an unmeasured value shows as "-", as in the table
                    against = f"{row['model']} - {row['reference']}" if delta_text(row, metric) else ""
                    table.append(["" if index else metric, row["model"], value_text(row, metric), against,
                                  delta_text(row, metric)])
            langs = {r["lang"] for r in rows if r["benchmark"] == benchmark}  # the group's languages evaluated here
            members = [lang for lang in in_domain or [] if lang in langs] or None
            lines += [f"{benchmark}, {group_text(group, members)}:", *aligned(table)]
    return lines


def where_the_table_is(run_id: str | None, command: str = "recipe") -> list[str]:
    """Where the full table is: the comparison command, the MLflow run's artifact, ``--json``."""
    return ["the full table (every metric, language and group):",
            f"  polyreason compare {run_id or 'RUN_ID'}  (--baseline base: against the base model)",
            "  the MLflow run below: artifact comparison/comparison.txt",
            f"  polyreason {command} ... --json: the machine-readable result, its rows included"]


def headline_text(rows: Sequence[Mapping[str, Any]], run_id: str | None, in_domain: Sequence[str] | None = None,
                  command: str = "recipe") -> str:
    """The headline, its legend and where the full table is, as lines that fit 100 columns."""
    lines = headline_lines(rows, in_domain)
    head = [LEGEND, "", *lines, ""] if lines else []
    return "\n".join([*head, *where_the_table_is(run_id, command)])


def headline_chart_metrics(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """The headline's values as MLflow metrics that MLflow's chart pages show first.

    MLflow 3's run page and compare view group a run's charts into sections named by the key without its last
    ``/`` part and list the sections alphabetically (a section inside another after it), so a recipe's run, whose
    keys are ``evaluation/<model>/<benchmark>/<lang>/<metric>``, opened on the base model's first language and its
    counts. These keys have one ``/``: their section, ``evaluation``, comes first, and holds only the headline,
    each model's value, the chart named ``<benchmark> <group> <metric> <model>``. Each is logged instead of its
    cell's key (``logged_comparison``: one key per value); the cell's interval, n and deltas stay in the cell's
    section, and ``as_cells`` reads the run's metrics back with every value under its cell's key.

    >>> rows = [{"benchmark": "mgsm", "lang": "in_domain", "model": "grpo", "lcpr": 0.75, "accuracy": 0.25},
    ...         {"benchmark": "mgsm", "lang": "fr", "model": "grpo", "lcpr": 1.0, "accuracy": 0.0},
    ...         {"benchmark": "mgsm", "lang": "in_domain", "model": "base", "lcpr": None, "accuracy": 0.5}]
    >>> headline_chart_metrics(rows)
    {'evaluation/mgsm in_domain lcpr grpo': 0.75, 'evaluation/mgsm in_domain accuracy grpo': 0.25, \
'evaluation/mgsm in_domain accuracy base': 0.5}
    """
    out = {}
    for benchmark in dict.fromkeys(r["benchmark"] for r in rows):
        groups = headline_groups(rows, benchmark)
        for metric in headline_metrics(rows, benchmark):
            for row in rows:
                value = row.get(metric)
                if row["benchmark"] == benchmark and row["lang"] in groups and isinstance(value, (int, float)) \
                        and not isinstance(value, bool):
                    out[f"{CHART_SECTION}{benchmark} {row['lang']} {metric} {row['model']}"] = float(value)
    return out


def cell_key(chart: str) -> str:
    """The comparison cell's key (``evaluation/<model>/<benchmark>/<lang>/<metric>``) a headline chart stands for.

    >>> cell_key("evaluation/mgsm in_domain lcpr grpo")
    'evaluation/grpo/mgsm/in_domain/lcpr'
    """
    benchmark, group, metric, model = chart[len(CHART_SECTION):].split(" ", 3)
    return f"{CHART_SECTION}{model}/{benchmark}/{group}/{metric}"


def logged_comparison(rows: Sequence[Mapping[str, Any]], cells: Mapping[str, float]) -> dict[str, float]:
    """What a comparison logs to MLflow: the headline charts, then every other cell metric of ``cells``
    (``comparison_metrics``); a value the headline shows is logged once, under its chart's key.

    >>> rows = [{"benchmark": "mgsm", "lang": "in_domain", "model": "grpo", "lcpr": 0.75, "lcpr_n": 8}]
    >>> logged_comparison(rows, {"evaluation/grpo/mgsm/in_domain/lcpr": 0.75, "evaluation/grpo/mgsm/in_domain/lcpr_n": 8})
    {'evaluation/mgsm in_domain lcpr grpo': 0.75, 'evaluation/grpo/mgsm/in_domain/lcpr_n': 8}
    """
    charts = headline_chart_metrics(rows)
    shown = {cell_key(chart) for chart in charts}
    return {**charts, **{key: value for key, value in cells.items() if key not in shown}}


def as_cells(metrics: Mapping[str, float]) -> dict[str, float]:
    """A comparison run's metrics with each headline chart read back under its cell's key (the inverse of
    ``logged_comparison``); other keys as they are.

    >>> as_cells({"evaluation/mgsm in_domain lcpr grpo": 0.75, "evaluation/grpo/mgsm/in_domain/lcpr_n": 8})
    {'evaluation/grpo/mgsm/in_domain/lcpr': 0.75, 'evaluation/grpo/mgsm/in_domain/lcpr_n': 8}
    """
    return {cell_key(key) if is_headline_chart(key) else key: value for key, value in metrics.items()}


def is_headline_chart(key: str) -> bool:
    """Whether ``key`` is one of ``headline_chart_metrics``'.

    >>> is_headline_chart("evaluation/mgsm in_domain lcpr grpo"), is_headline_chart("evaluation/mgsm/fr/lcpr")
    (True, False)
    """
    return key.startswith(CHART_SECTION) and "/" not in key[len(CHART_SECTION):]
