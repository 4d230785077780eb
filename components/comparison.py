"""Models side by side: a per-language comparison table with deltas to a baseline, and the Pareto plot.

Input: for each model (a tag such as ``base``, ``sft``, ``grpo``, or a registered
version) the per-language tables of its benchmark reports
(``components.reporting``). Output:

* rows ``benchmark, lang, model`` with the headline metrics (accuracy, LCPR, TTC,
  SLC&Acc) and, for every model but the baseline, ``<metric>_delta`` = its value
  minus the baseline's on the same benchmark and language;
* MLflow metrics ``evaluation/<model>/<benchmark>/<lang>/<metric>`` (and the deltas),
  so a recipe's parent run holds every model's numbers under one naming;
* an accuracy-against-LCPR plot per benchmark, one colour per model and a line
  joining the same language across models in the given order (how training moved
  it), with each model's Pareto front (no other point of that model is at least as
  good on both axes and better on one) marked. Both axes are "higher is better"
  (``components.metrics.table``).

>>> tables = {"base": {"mgsm": [{"lang": "fr", "accuracy": 0.25, "lcpr": 0.5, "ttc": 0.1, "slc_and_acc": 0.2}]},
...           "sft": {"mgsm": [{"lang": "fr", "accuracy": 0.5, "lcpr": 0.75, "ttc": 0.1, "slc_and_acc": None}]}}
>>> rows = comparison_rows(tables, baseline="base")
>>> [(r["model"], r["accuracy"], r.get("accuracy_delta"), r.get("slc_and_acc_delta")) for r in rows]
[('base', 0.25, None, None), ('sft', 0.5, 0.25, None)]
>>> comparison_metrics(rows)["evaluation/sft/mgsm/fr/lcpr_delta"]
0.25
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

HEADLINE = ("accuracy", "lcpr", "ttc", "slc_and_acc")
Tables = Mapping[str, Mapping[str, Sequence[Mapping[str, Any]]]]  # model -> benchmark -> language rows
METRIC = re.compile(r"^evaluation/(?P<benchmark>[^/]+)/(?P<lang>[^/]+)/(?P<metric>[^/]+)$")


def language_tables(metrics: Mapping[str, float]) -> dict[str, list[dict]]:
    """An evaluation run's ``evaluation/<benchmark>/<lang>/<metric>`` metrics (``components.reporting``'s
    keys) read back as per-benchmark language rows, the input of ``comparison_rows``.

    >>> language_tables({"evaluation/mgsm/fr/accuracy": 0.5, "evaluation/mgsm/fr/lcpr": 1.0, "grpo/train/kl": 0.1})
    {'mgsm': [{'lang': 'fr', 'accuracy': 0.5, 'lcpr': 1.0}]}
    """
    rows: dict[str, dict[str, dict]] = {}
    for key, value in sorted(metrics.items()):
        match = METRIC.match(key)
        if match:
            row = rows.setdefault(match["benchmark"], {}).setdefault(match["lang"], {"lang": match["lang"]})
            row[match["metric"]] = value
    return {benchmark: list(langs.values()) for benchmark, langs in rows.items()}


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def comparison_rows(tables: Tables, baseline: str, metrics: Sequence[str] = HEADLINE) -> list[dict[str, Any]]:
    """One row per (benchmark, language, model), in model order, with deltas to ``baseline``."""
    base = {(bench, row["lang"]): row for bench, rows in tables.get(baseline, {}).items() for row in rows}
    out = []
    for model, benchmarks in tables.items():
        for bench, rows in benchmarks.items():
            for row in rows:
                entry = {"benchmark": bench, "lang": row["lang"], "model": model,
                         **{m: _number(row.get(m)) for m in metrics}}
                reference = base.get((bench, row["lang"]))
                if model != baseline and reference is not None:
                    for m in metrics:
                        a, b = entry[m], _number(reference.get(m))
                        entry[f"{m}_delta"] = None if a is None or b is None else round(a - b, 10)
                out.append(entry)
    return sorted(out, key=lambda r: (r["benchmark"], r["lang"], list(tables).index(r["model"])))


def comparison_metrics(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """MLflow metrics ``evaluation/<model>/<benchmark>/<lang>/<metric>`` (deltas included; ``None`` left out)."""
    skip = ("benchmark", "lang", "model")
    return {f"evaluation/{r['model']}/{r['benchmark']}/{r['lang']}/{key}": value
            for r in rows for key, value in r.items() if key not in skip and value is not None}


def pareto_front(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """The points no other point dominates (both coordinates higher is better).

    >>> pareto_front([(0.1, 0.9), (0.5, 0.5), (0.4, 0.4), (0.9, 0.1)])
    [(0.1, 0.9), (0.5, 0.5), (0.9, 0.1)]
    """
    def dominated(p):
        return any(q[0] >= p[0] and q[1] >= p[1] and q != p for q in points)

    return sorted({p for p in points if not dominated(p)})


def comparison_figure(rows: Sequence[Mapping[str, Any]], benchmark: str):
    """Accuracy against LCPR on one benchmark: a point per (model, language), a line per language.

    Built on ``matplotlib.figure.Figure`` (no pyplot state, safe in worker threads).
    """
    from matplotlib.figure import Figure

    mine = [r for r in rows if r["benchmark"] == benchmark and r["accuracy"] is not None and r["lcpr"] is not None]
    models = list(dict.fromkeys(r["model"] for r in mine))
    fig = Figure(figsize=(6, 4.5))
    ax = fig.subplots()
    for lang in sorted({r["lang"] for r in mine}):
        path = [r for r in mine if r["lang"] == lang]
        ax.plot([r["lcpr"] for r in path], [r["accuracy"] for r in path], color="0.8", linewidth=1, zorder=1)
        ax.annotate(lang, (path[-1]["lcpr"], path[-1]["accuracy"]), fontsize=8)
    for index, model in enumerate(models):
        points = [(r["lcpr"], r["accuracy"]) for r in mine if r["model"] == model]
        ax.scatter(*zip(*points), label=model, color=f"C{index}", zorder=2)
        front = pareto_front(points)
        ax.plot(*zip(*front), color=f"C{index}", linestyle="--", linewidth=1, zorder=1)
    ax.set(xlabel="LCPR", ylabel="accuracy", xlim=(-0.05, 1.05), ylim=(-0.05, 1.05),
           title=f"{benchmark}: accuracy vs LCPR by model")
    if models:
        ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    return fig


def format_table(rows: Sequence[Mapping[str, Any]], metrics: Sequence[str] = HEADLINE) -> str:
    """The comparison as fixed-width text (for a terminal)."""
    header = ["benchmark", "lang", "model", *metrics]
    lines = ["  ".join(f"{h:>11}" for h in header)]
    for r in rows:
        cells = [str(r["benchmark"]), str(r["lang"]), str(r["model"])]
        for m in metrics:
            value, delta = r.get(m), r.get(f"{m}_delta")
            text = "-" if value is None else f"{value:.3f}"
            cells.append(text + (f" ({delta:+.3f})" if delta is not None else ""))
        lines.append("  ".join(f"{c:>11}" for c in cells))
    return "\n".join(lines)


def write_comparison(tables: Tables, baseline: str, out_dir: str | Path) -> list[dict[str, Any]]:
    """Write ``comparison.json``, ``comparison.txt`` and one ``<benchmark>_accuracy_vs_lcpr.png`` per
    benchmark into ``out_dir``; return the rows. The baseline must be one of the models."""
    if baseline not in tables:
        raise ValueError(f"baseline {baseline!r} is not among the compared models ({', '.join(tables)})")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = comparison_rows(tables, baseline=baseline)
    (out / "comparison.json").write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")
    (out / "comparison.txt").write_text(format_table(rows) + "\n", encoding="utf-8")
    for benchmark in sorted({r["benchmark"] for r in rows}):
        comparison_figure(rows, benchmark).savefig(out / f"{benchmark}_accuracy_vs_lcpr.png", dpi=100)
    return rows
