"""Models side by side: per-language values with their errors, paired deltas to a baseline, the Pareto plot.

Input: for each model (a tag such as ``base``, ``sft``, ``grpo``, or a registered version)
the per-language tables of its benchmark reports (``components.reports.benchmark``: each
metric with ``_stderr`` and ``_n``), and, where available, its scored rows (a ``scores.json``
or an evaluation run's joined generations table). Output:

* rows ``benchmark, lang, model`` with the compared metrics (``comparison_columns``: the
  accuracy the baseline's reports lead with, their ``headline``, e.g. ``pass_at_4`` for
  AdaMame, then ``accuracy`` when that is another one, ``lcpr`` and the LCPRs of rules scored
  beside it, then the metric table's other ``compared`` entries; for a QA benchmark the QA
  table's: ``fem``, ``c3recall``, ``clr``), each with its standard
  error and n, and, for
  every model but the baseline, ``<metric>_delta`` (minus its ``reference``: the baseline, or with
  ``baseline="previous"`` the model listed before it) with a paired 95% confidence interval
  ``<metric>_delta_low`` / ``_delta_high``, ``<metric>_delta_significant`` (see "The mark"
  below), ``<metric>_n_both`` (the independent units both models were judged on, over which the
  delta is taken) and ``n_shared`` (the units both models answered);
* MLflow metrics ``evaluation/<model>/<benchmark>/<lang>/<metric>`` (errors, counts, deltas
  and their bounds included), so a recipe's parent run holds every model's numbers under one
  naming;
* a text table (one block per metric, models as columns, a benchmark's line only under the
  metrics it has) and an accuracy-against-LCPR plot per benchmark (QA: fEM against CLR): one colour per model, one standard error on each axis, a line joining the
  same language across models in the given order (how training moved it), each model's
  Pareto front (no other point of that model is at least as good on both axes and better on
  one) dashed.

The delta's interval. Two models evaluated on the same prompts are compared, per metric, on
the problems *both were judged on* (``components.metrics.bootstrap.paired_difference``): for
accuracy the problems both answered, for a metric undefined on some problems (LCPR and WPR
need a judgeable line) only those where both have something to judge, so the point and its
interval never compare two different subsets. ``<metric>_n_both`` counts those independent
units (a problem's samples and translations are one unit: a group of three languages over 16
problems is 16), ``n_shared`` the units both answered. The interval of a rate is Newcombe's
square-and-add interval from the two models' Wilson intervals (``components.metrics.intervals``),
correlated as the two statistics are over a paired bootstrap (with Newcombe's continuity
correction of that correlation; problems, their samples and their translations resampled
together, within the macro rule's subsets; the same draws for both models; 2,000 seeded
resamples): pairing removes the variance of problem difficulty that
both models share, and the score intervals keep their width where the bootstrap's own
percentiles collapse (four of four problems improving: ``[+1, +1]``). An unbounded metric (TTC)
keeps the paired bootstrap's percentiles. Without scored rows (a run logged before its rows
were) the delta is the plain difference and its interval is ``None``.

The mark. A delta is marked significant (``*``) when its interval excludes zero and
``n_both`` is at least ``MIN_SHARED`` (6). Below that no paired test can reject "no
difference" at the 5% level: swapping the two models' results unit by unit (a sign-flip
test over the independent units both were judged on), the most extreme of the 2^n
arrangements still has probability 2/2^n > 0.05 for n < 6, so on so few units the bounds
are shown but not read as a test.

>>> tables = {"base": {"mgsm": [{"lang": "fr", "accuracy": 0.25, "lcpr": 0.5, "ttc": 0.1, "slc_and_acc": 0.2}]},
...           "sft": {"mgsm": [{"lang": "fr", "accuracy": 0.5, "lcpr": 0.75, "ttc": 0.1, "slc_and_acc": None}]}}
>>> rows = comparison_rows(tables, baseline="base")
>>> [(r["model"], r["accuracy"], r.get("accuracy_delta"), r.get("accuracy_delta_low")) for r in rows]
[('base', 0.25, None, None), ('sft', 0.5, 0.25, None)]
>>> comparison_metrics(rows)["evaluation/sft/mgsm/fr/lcpr_delta"]
0.25
>>> comparison_columns({"base": {"msvamp": [{"lang": "fr", "headline": "pass_at_4", "lcpr_adamame": 0.5}]}}, "base")
('pass_at_4', 'accuracy', 'lcpr', 'lcpr_adamame', 'slc_and_acc', 'ttc')
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from components.data.benchmarks import SCHEMES
from components.metrics.aggregate import COUNT, GROUP_NAMES, IN_DOMAIN_LANGUAGES, STDERR, language_groups
from components.metrics.bootstrap import Bootstrap, Estimate, paired_difference
from components.metrics.intervals import as_rate, rate_interval
from components.metrics.registry import (
    LANGUAGE_METRIC, beside_columns, compared, headline_for, kind_of, macro_fields, metric_for,
)  # fmt: skip
from components.reports.plot_labels import label_offsets, merged_labels

Tables = Mapping[str, Mapping[str, Sequence[Mapping[str, Any]]]]  # model -> benchmark -> language rows
Scored = Mapping[str, Mapping[str, Sequence[Mapping[str, Any]]]]  # model -> benchmark -> scored rows
METRIC = re.compile(r"^evaluation/(?P<benchmark>[^/]+)/(?P<lang>[^/]+)/(?P<metric>[^/]+)$")
PAIRED = Bootstrap(resamples=2000, seed=0)
MIN_SHARED = 6  # fewest units judged for both on which a sign-flip test can reach 5% (2 / 2**6 < 0.05)
OVERALL = "overall"
LEGEND_WIDTH = 110  # the text table's legend is wrapped to this many characters
PREVIOUS = "previous"  # the baseline meaning "each model against the one listed before it"
LEGEND = ("value [95% interval] (n = independent units: problems, a problem's samples and translations "
          "counted once); rates: Wilson score interval, others ±1 bootstrap standard error; Δ = minus {baseline}, "
          "over the units both were judged on (n_both), Newcombe's paired interval for a rate, the paired bootstrap's "
          f"percentiles otherwise; * = it excludes 0 on {MIN_SHARED}+ units")


def references(models: Sequence[str], baseline: str) -> dict[str, str | None]:
    """The model each model's deltas are taken against (``None``: it has none).

    A named baseline serves every other model. ``previous`` chains them in the order given, so a
    recipe's table shows what each stage added to the one before it (SFT against the base model,
    GRPO against SFT) instead of every stage's total against the base model.

    >>> references(["base", "sft", "grpo"], "base")
    {'base': None, 'sft': 'base', 'grpo': 'base'}
    >>> references(["base", "sft", "grpo"], "previous")
    {'base': None, 'sft': 'base', 'grpo': 'sft'}
    """
    if baseline == PREVIOUS:
        return {model: models[index - 1] if index else None for index, model in enumerate(models)}
    return {model: None if model == baseline else baseline for model in models}


def baseline_text(models: Sequence[str], baseline: str) -> str:
    """What the deltas are minus, in words: ``base``, or ``the model before it (sft - base, grpo - sft)``.

    >>> baseline_text(["base", "sft", "grpo"], "previous")
    'the model before it (sft - base, grpo - sft)'
    """
    if baseline != PREVIOUS:
        return baseline
    pairs = [f"{model} - {reference}" for model, reference in references(models, baseline).items() if reference]
    return f"the model before it ({', '.join(pairs)})"


def check_baseline(models: Sequence[str], baseline: str) -> None:
    """Refuse a baseline that is neither one of the compared models nor ``previous``."""
    if baseline != PREVIOUS and baseline not in models:
        raise ValueError(f"baseline {baseline!r} is not among the compared models ({', '.join(models)}) "
                         f"nor {PREVIOUS!r} (each model against the one before it)")


def language_tables(metrics: Mapping[str, float], headline: str = "accuracy") -> dict[str, list[dict]]:
    """An evaluation run's ``evaluation/<benchmark>/<lang>/<metric>`` metrics (``components.reports.benchmark``'s
    keys) read back as per-benchmark language rows, the input of ``comparison_rows``; ``headline``: the
    accuracy its scoring section led with (the run's ``evaluation.scoring.headline`` parameter).

    >>> language_tables({"evaluation/mgsm/fr/accuracy": 0.5, "evaluation/mgsm/fr/lcpr": 1.0, "grpo/train/kl": 0.1})
    {'mgsm': [{'lang': 'fr', 'headline': 'accuracy', 'accuracy': 0.5, 'lcpr': 1.0}]}
    """
    rows: dict[str, dict[str, dict]] = {}
    for key, value in sorted(metrics.items()):
        match = METRIC.match(key)
        if match:
            row = rows.setdefault(match["benchmark"], {}).setdefault(
                match["lang"], {"lang": match["lang"], "headline": headline_for(match["benchmark"], SCHEMES, headline)})
            row[match["metric"]] = value
    return {benchmark: list(langs.values()) for benchmark, langs in rows.items()}


def benchmark_columns(benchmark: str | None, rows: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """The metrics compared on one benchmark: for math its reports' headline accuracy, ``accuracy`` when
    that is another one, LCPR and the LCPRs scored beside it, then the table's other compared metrics;
    for QA the QA table's compared metrics (fEM first)."""
    if kind_of(benchmark, SCHEMES) == "qa":
        return compared("qa")
    headline = next((row["headline"] for row in rows if row.get("headline")), "accuracy")
    accuracy = (headline,) if headline == "accuracy" else (headline, "accuracy")
    beside = beside_columns(name for row in rows for name in row)
    return (*accuracy, "lcpr", *beside, *(m for m in compared() if m not in ("accuracy", "lcpr")))


def comparison_columns(tables: Tables, baseline: str) -> tuple[str, ...]:
    """The metrics compared: each benchmark's of the baseline (``benchmark_columns``; with ``previous``, of the
    first model), in order, once each."""
    first = next(iter(tables), baseline) if baseline == PREVIOUS else baseline
    found = [benchmark_columns(bench, rows) for bench, rows in tables.get(first, {}).items()]
    return tuple(dict.fromkeys(name for names in found or [benchmark_columns(None, [])] for name in names))


def read_scored_rows(path: str | Path, benchmark: str) -> list[dict[str, Any]]:
    """The scored rows of one benchmark: a ``scores.json`` (its ``rows``) or a JSONL of joined generations."""
    path = Path(path)
    if path.suffix == ".json":
        rows = json.loads(path.read_text(encoding="utf-8"))["rows"]
    else:
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [{**row, "benchmark": row.get("benchmark") or benchmark} for row in rows]


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _cell_rows(rows: Sequence[Mapping[str, Any]], lang: str) -> list[Mapping[str, Any]]:
    return list(rows) if lang == OVERALL else [row for row in rows if row["lang"] == lang]


def _members(rows: Sequence[Mapping[str, Any]], lang: str,
             in_domain: Sequence[str]) -> list[list[Mapping[str, Any]]] | None:
    """The rows of a language group's member languages, one list per language (``None``: not a group).

    A group's value is the mean of its languages' values (``components.metrics.aggregate``), so its
    paired interval resamples problems with every member language kept as its own part."""
    groups = language_groups({row["lang"] for row in rows}, in_domain)
    if lang not in groups or lang == OVERALL:
        return None
    return [[row for row in rows if row["lang"] == member] for member in groups[lang]]


def _paired(mine: Sequence[Mapping[str, Any]], theirs: Sequence[Mapping[str, Any]], lang: str,
            table: Sequence[Any], bootstrap: Bootstrap,
            in_domain: Sequence[str]) -> tuple[list[Estimate], int]:
    """The paired difference of one cell: a language, ``overall`` (rows pooled) or a language group."""
    members = _members(theirs, lang, in_domain)
    if members is None:
        return paired_difference(_cell_rows(mine, lang), _cell_rows(theirs, lang), table, bootstrap,
                                 macro=macro_fields(SCHEMES))
    languages = [part[0]["lang"] for part in members if part]
    return paired_difference([r for r in mine if r["lang"] in languages], [r for r in theirs if r["lang"] in languages],
                             table, bootstrap, macro=macro_fields(SCHEMES), languages=languages)


def _deltas(entry: dict, reference: Mapping[str, Any], names: Sequence[str],
            paired: tuple[list[Estimate], int] | None) -> None:
    """Add each metric's delta to ``entry``: paired over what both were judged on when rows exist, else plain."""
    for index, name in enumerate(names):
        if paired is not None and paired[1]:
            found = paired[0][index]
            significant = None if found.low is None else found.excludes_zero and found.n >= MIN_SHARED
            entry.update({f"{name}_delta": None if found.value is None else round(found.value, 10),
                          f"{name}_delta_low": found.low, f"{name}_delta_high": found.high,
                          f"{name}_delta_significant": significant, f"{name}_n_both": found.n})
        else:
            a, b = entry[name], _number(reference.get(name))
            entry.update({f"{name}_delta": None if a is None or b is None else round(a - b, 10),
                          f"{name}_delta_low": None, f"{name}_delta_high": None, f"{name}_delta_significant": None,
                          f"{name}_n_both": None})
    entry["n_shared"] = paired[1] if paired is not None else None


def comparison_rows(tables: Tables, baseline: str, metrics: Sequence[str] | None = None,
                    scored: Scored | None = None, bootstrap: Bootstrap = PAIRED,
                    in_domain: Sequence[str] = IN_DOMAIN_LANGUAGES) -> list[dict[str, Any]]:
    """One row per (benchmark, language, model), in model order, with paired deltas to ``baseline`` (a model,
    or ``previous``: ``references``) and the model they are minus as ``reference``; a language group's row
    (``in_domain``, ``all``, a resource level) pairs over its member languages."""
    names = tuple(metrics or comparison_columns(tables, baseline))
    scored = scored or {}
    against = references(list(tables), baseline)
    out = []
    for model, benchmarks in tables.items():
        reference_model = against[model]
        base = {(bench, row["lang"]): row for bench, rows in tables.get(reference_model, {}).items() for row in rows}
        for bench, rows in benchmarks.items():
            own = [name for name in names if metric_for(name).kind == kind_of(bench, SCHEMES)]  # a QA cell has no LCPR
            for row in rows:
                entry = {"benchmark": bench, "lang": row["lang"], "model": model,
                         **{key: _number(row.get(key)) for m in names for key in (m, m + STDERR, m + COUNT)}}
                reference = base.get((bench, row["lang"]))
                if reference is not None:
                    mine, theirs = scored.get(model, {}).get(bench), scored.get(reference_model, {}).get(bench)
                    paired = None if mine is None or theirs is None else _paired(
                        mine, theirs, row["lang"], [metric_for(name) for name in own], bootstrap, in_domain)
                    _deltas(entry, reference, own, paired)
                    entry["reference"] = reference_model
                out.append(entry)
    return sorted(out, key=lambda r: (r["benchmark"], *lang_order(r["lang"]), list(tables).index(r["model"])))


def lang_order(lang: str) -> tuple[int, str]:
    """Languages first (alphabetically), then the groups of several (``in_domain`` ... ``all``), ``overall`` last.

    >>> sorted(["overall", "th", "in_domain", "en"], key=lang_order)
    ['en', 'th', 'in_domain', 'overall']
    """
    if lang == OVERALL:
        return 2, ""
    return (1, f"{GROUP_NAMES.index(lang):02d}") if lang in GROUP_NAMES else (0, lang)


def comparison_metrics(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """MLflow metrics ``evaluation/<model>/<benchmark>/<lang>/<metric>`` (deltas, their bounds and whether
    the interval excludes zero as 0/1 included; ``None`` left out)."""
    def number(value: Any) -> float | None:
        return float(value) if isinstance(value, bool) else _number(value)

    return {f"evaluation/{r['model']}/{r['benchmark']}/{r['lang']}/{key}": number(value)
            for r in rows for key, value in r.items() if number(value) is not None}


def pareto_front(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """The points no other point dominates (both coordinates higher is better).

    >>> pareto_front([(0.1, 0.9), (0.5, 0.5), (0.4, 0.4), (0.9, 0.1)])
    [(0.1, 0.9), (0.5, 0.5), (0.9, 0.1)]
    """
    def dominated(p):
        return any(q[0] >= p[0] and q[1] >= p[1] and q != p for q in points)

    return sorted({p for p in points if not dominated(p)})


def comparison_figure(rows: Sequence[Mapping[str, Any]], benchmark: str, accuracy: str = "accuracy"):
    """Accuracy (the ``accuracy`` metric: the headline one) against LCPR (QA: CLR) on one benchmark: a point
    per (model, language) with one standard error on each axis, a line per language. Built on
    ``matplotlib.figure.Figure`` (no pyplot state)."""
    from matplotlib.figure import Figure

    language = LANGUAGE_METRIC[kind_of(benchmark, SCHEMES)]
    mine = [r for r in rows
            if r["benchmark"] == benchmark and r.get(accuracy) is not None and r.get(language) is not None]
    models = list(dict.fromkeys(r["model"] for r in mine))
    fig = Figure(figsize=(6, 4.5))
    ax = fig.subplots()
    ends = []
    for lang in sorted({r["lang"] for r in mine}):
        path = [r for r in mine if r["lang"] == lang]
        ax.plot([r[language] for r in path], [r[accuracy] for r in path], color="0.8", linewidth=1, zorder=1)
        ends.append((lang, path[-1][language], path[-1][accuracy]))
    labels = merged_labels(ends)  # languages ending at one point share one label; close labels are stacked
    for (text, x, y), offset in zip(labels, label_offsets(labels)):
        ax.annotate(text, (x, y), xytext=offset, textcoords="offset points", fontsize=8)
    for index, model in enumerate(models):
        points = [r for r in mine if r["model"] == model]
        ax.errorbar([r[language] for r in points], [r[accuracy] for r in points], fmt="o", capsize=3,
                    xerr=[r.get(language + STDERR) or 0.0 for r in points], label=model, color=f"C{index}",
                    yerr=[r.get(accuracy + STDERR) or 0.0 for r in points], zorder=2)
        front = pareto_front([(r[language], r[accuracy]) for r in points])
        ax.plot(*zip(*front), color=f"C{index}", linestyle="--", linewidth=1, zorder=1)
    ax.set(xlabel=language.upper(), ylabel=accuracy, xlim=(-0.05, 1.05), ylim=(-0.05, 1.05))
    ax.set_title(f"{benchmark}: {accuracy} vs {language.upper()} by model (bars: ±1 standard error)", fontsize=9)
    if models:
        ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    return fig


def value_text(row: Mapping[str, Any], name: str) -> str:
    """``0.750 [0.409, 0.927] (n 8)``: a rate with Wilson's interval, another value with ±1 standard error."""
    value, stderr, n = row.get(name), row.get(name + STDERR), row.get(name + COUNT)
    if value is None:
        return "-"
    units = "" if n is None else f" (n {int(n)})"
    if as_rate(metric_for(name).bounded, value):
        low, high = rate_interval(value, stderr, int(n or 0))
        return f"{value:.3f}" + ("" if low is None else f" [{low:.3f}, {high:.3f}]") + units
    return f"{value:.3f}" + ("" if stderr is None else f" ±{stderr:.3f}") + units


def delta_text(row: Mapping[str, Any], name: str) -> str:
    """``Δ +0.250 [+0.021, +0.448]* (n_both 8)``."""
    delta = row.get(f"{name}_delta")
    if delta is None:
        return ""
    low, high = row.get(f"{name}_delta_low"), row.get(f"{name}_delta_high")
    mark = "*" if row.get(f"{name}_delta_significant") else ""
    interval = "" if low is None else f" [{low:+.3f}, {high:+.3f}]{mark}"
    both = row.get(f"{name}_n_both")
    return f"Δ {delta:+.3f}{interval}" + ("" if both is None else f" (n_both {int(both)})")


def format_table(rows: Sequence[Mapping[str, Any]], baseline: str, metrics: Sequence[str] | None = None) -> str:
    """The comparison as fixed-width text: one block per metric, one line per (benchmark, language)."""
    models = list(dict.fromkeys(r["model"] for r in rows))
    cells = list(dict.fromkeys((r["benchmark"], r["lang"]) for r in rows))
    lines = textwrap.wrap(LEGEND.format(baseline=baseline_text(models, baseline)), width=LEGEND_WIDTH)
    for name in metrics or compared():
        measured = [cell for cell in cells if any(r.get(name) is not None for r in rows
                                                  if (r["benchmark"], r["lang"]) == cell)]
        if not measured:  # a metric of another kind of benchmark
            continue
        table = [["benchmark", "lang", *models]]
        for bench, lang in measured:
            found = {r["model"]: r for r in rows if (r["benchmark"], r["lang"]) == (bench, lang)}
            table.append([bench, lang, *((value_text(found[m], name) + "  " + delta_text(found[m], name)).strip()
                                         if m in found else "-" for m in models)])
        lines += ["", name, *aligned(table)]
    return "\n".join(lines)


def aligned(table: Sequence[Sequence[str]]) -> list[str]:
    """Rows of cells as lines, each column padded to its widest cell (two spaces between columns).

    >>> aligned([["lang", "base"], ["in_domain", "0.5"]])
    ['lang       base', 'in_domain  0.5']
    """
    widths = [max(len(cell) for cell in column) for column in zip(*table)]
    return ["  ".join(f"{cell:<{width}}" for cell, width in zip(row, widths)).rstrip() for row in table]


def in_domain_row(benchmark: str, metrics: Mapping[str, float], headline: str) -> list[dict[str, Any]]:
    """The ``in_domain`` group's row of a benchmark report's metrics (empty when it has none).

    >>> in_domain_row("mgsm", {"evaluation/mgsm/in_domain/lcpr": 0.5, "evaluation/mgsm/fr/lcpr": 1.0}, "accuracy")
    [{'lang': 'in_domain', 'headline': 'accuracy', 'lcpr': 0.5}]
    """
    group = {key: value for key, value in metrics.items() if key.startswith(f"evaluation/{benchmark}/in_domain/")}
    return language_tables(group, headline).get(benchmark, [])


def write_comparison(tables: Tables, baseline: str, out_dir: str | Path,
                     scored: Mapping[str, Mapping[str, str | Path]] | None = None,
                     in_domain: Sequence[str] = IN_DOMAIN_LANGUAGES) -> list[dict[str, Any]]:
    """Write ``comparison.json``, ``comparison.txt`` and one ``<benchmark>_accuracy_vs_lcpr.png`` per
    benchmark into ``out_dir``; return the rows. The baseline must be one of the models or ``previous``;
    ``scored`` names each model's scored-rows file per benchmark (``read_scored_rows``)."""
    check_baseline(list(tables), baseline)
    rows_of = {model: {bench: read_scored_rows(path, bench) for bench, path in files.items()}
               for model, files in (scored or {}).items()}
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    columns = comparison_columns(tables, baseline)
    first = next(iter(tables)) if baseline == PREVIOUS else baseline
    headline = {bench: benchmark_columns(bench, bench_rows)[0] for bench, bench_rows in tables[first].items()}
    rows = [{**row, "headline": headline.get(row["benchmark"], columns[0])}
            for row in comparison_rows(tables, baseline=baseline, metrics=columns, scored=rows_of, in_domain=in_domain)]
    (out / "comparison.json").write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")
    (out / "comparison.txt").write_text(format_table(rows, baseline, columns) + "\n", encoding="utf-8")
    for benchmark in sorted({r["benchmark"] for r in rows}):
        comparison_figure(rows, benchmark, headline.get(benchmark, columns[0])).savefig(
            out / f"{benchmark}_accuracy_vs_lcpr.png", dpi=100)
    return rows
