"""What a stage's flow run shows on its Prefect page: its MLflow metrics per language, and the recipe's summary.

Prefect 3 renders a *table artifact* (a list of rows, each a mapping of column to
value) as a table on the flow run's Artifacts tab, and a *markdown artifact* as
rendered markdown. This module builds both from what a run already holds, so
the numbers on the Prefect page are exactly the MLflow run's:

* ``language_table(metrics)``: one row per metric of an MLflow run (its latest
  values), one column per language (the key segment that is an ISO 639-1 code
  lingua detects, or a cell of several languages: ``overall`` and the groups of
  ``components.metrics.aggregate``, which come first), and a ``value`` column for metrics
  logged without a language (a loss, a count; in ``overall`` when the table has that column). A metric's companions are folded into its
  cell, never shown as rows of their own: ``<m>_stderr`` and ``<m>_n`` (one
  standard error, the number of independent units: problems) and, for a comparison's
  delta ``<m>_delta``, its paired 95% interval ``_delta_low``/``_delta_high``, the
  ``_delta_significant`` mark and ``<m>_n_both``, the units both models were judged on.
* ``recipe_summary(...)``: the recipe's markdown: the registered version and where its
  MLflow run is, then the headline (the in-domain languages' LCPR, then accuracy) and every
  compared metric: ``components.reports.comparison``'s rows, each value with its interval and n, each
  delta with its paired interval and n_both, one narrow table per metric (a row per model).
* ``nightly_summary(...)``: a nightly evaluation of a registered version against the version's
  previous evaluation, the same way.

>>> rows = language_table({"evaluation/mgsm/fr/accuracy": 0.5, "evaluation/mgsm/fr/accuracy_stderr": 0.25,
...                        "evaluation/mgsm/fr/accuracy_n": 4, "evaluation/mgsm/load_errors": 0})
>>> rows  # doctest: +NORMALIZE_WHITESPACE
[{'metric': 'evaluation/mgsm/accuracy', 'value': '', 'fr': '0.5 ±0.25 (n 4)'},
 {'metric': 'evaluation/mgsm/load_errors', 'value': '0', 'fr': ''}]
>>> language_table({"evaluation/mgsm/fr/lcpr": 1.0, "evaluation/mgsm/in_domain/lcpr": 1.0,
...                 "evaluation/mgsm/overall/lcpr": 0.5, "evaluation/mgsm/load_errors": 0})  # doctest: +NORMALIZE_WHITESPACE
[{'metric': 'evaluation/mgsm/lcpr', 'in_domain': '1', 'overall': '0.5', 'fr': '1'},
 {'metric': 'evaluation/mgsm/load_errors', 'in_domain': '', 'overall': '0', 'fr': ''}]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from components.reports.comparison import LEGEND, PREVIOUS, baseline_text, delta_text, value_text
from components.reports.comparison_headline import as_cells
from components.language import is_supported
from components.metrics.aggregate import COUNT, STDERR

GROUPS = ("overall", "all", "in_domain", "out_of_domain", "low", "mid", "high")  # cells of several languages
VALUE = "value"  # the column of metrics logged without a language
DELTA = "_delta"
BOTH = "_n_both"  # the units a delta is over (components.reports.comparison)
COMPANIONS = (STDERR, COUNT, f"{DELTA}_low", f"{DELTA}_high", f"{DELTA}_significant", BOTH)


def is_language_cell(segment: str) -> bool:
    """A key segment naming a language (ISO 639-1, as lingua knows it) or a cell of several languages."""
    return segment in GROUPS or is_supported(segment)


def split_key(key: str) -> tuple[str, str]:
    """``(metric row, column)``: the key without its language segment, and that segment (``value`` without one).

    >>> split_key("grpo/audit/math_verify/fnr/ja"), split_key("sft/loss"), split_key("data/traces/rate/overall")
    (('grpo/audit/math_verify/fnr', 'ja'), ('sft/loss', 'value'), ('data/traces/rate', 'overall'))
    """
    parts = key.split("/")
    for index, segment in enumerate(parts[1:], start=1):  # the first segment is the stage
        if is_language_cell(segment):
            return "/".join(parts[:index] + parts[index + 1:]), segment
    return key, VALUE


def companion_of(key: str, metrics: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(metric key, suffix)`` when ``key`` is another metric's standard error, count or interval bound.

    >>> companion_of("a/fr/accuracy_n", {"a/fr/accuracy": 1}), companion_of("a/fr/n_rows", {"a/fr/n": 1})
    (('a/fr/accuracy', '_n'), None)
    """
    for suffix in COMPANIONS:
        if key.endswith(suffix):
            owner = key[: -len(suffix)] + (DELTA if suffix.startswith(DELTA) or suffix == BOTH else "")
            if owner != key and owner in metrics:
                return owner, suffix
    return None


def number_text(value: float) -> str:
    """A metric value as a person reads it: whole numbers without decimals, four significant digits otherwise.

    >>> number_text(4.0), number_text(0.123456), number_text(2e-05)
    ('4', '0.1235', '2e-05')
    """
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e15 else f"{value:.4g}"


def cell_text(value: float, parts: Mapping[str, float]) -> str:
    """A value with what came with it: ``±stderr (n N)``, or a delta's ``[low, high]`` and ``*``.

    >>> cell_text(0.25, {"_delta_low": -0.1, "_delta_high": 0.5, "_delta_significant": 0.0})
    '0.25 [-0.1, 0.5]'
    """
    text = number_text(value)
    if STDERR in parts:
        text += f" ±{number_text(parts[STDERR])}"
    if f"{DELTA}_low" in parts and f"{DELTA}_high" in parts:
        text += f" [{number_text(parts[f'{DELTA}_low'])}, {number_text(parts[f'{DELTA}_high'])}]"
    if parts.get(f"{DELTA}_significant"):
        text += "*"
    if COUNT in parts:
        text += f" (n {number_text(parts[COUNT])})"
    if BOTH in parts:
        text += f" (n_both {number_text(parts[BOTH])})"
    return text


LEADING = ("lcpr", "accuracy", "reward", "loss")  # a table's first rows: the numbers a person looks for first
HIDDEN = ("system/",)  # the machine's samples: MLflow's system-metrics charts show them, not a table


def row_order(metric: str) -> tuple[int, str]:
    """Rows ordered with the headline metrics first (``LEADING``), then by name.

    >>> sorted(["evaluation/mgsm/ttc", "evaluation/mgsm/lcpr", "evaluation/mgsm/accuracy"], key=row_order)
    ['evaluation/mgsm/lcpr', 'evaluation/mgsm/accuracy', 'evaluation/mgsm/ttc']
    """
    last = metric.rsplit("/", 1)[-1]
    return (LEADING.index(last) if last in LEADING else len(LEADING), metric)


def language_table(metrics: Mapping[str, float]) -> list[dict[str, str]]:
    """The rows of a run's metrics table (see the module docstring), every row with every column: the cells of
    several languages first (``in_domain``, the headline, then ``overall`` …), then each language, so the headline
    shows at the left of a narrow page; a metric without a language goes in ``overall`` when the table has that
    column (a count over the whole benchmark), else in ``value``; ``system/*`` samples are left to MLflow."""
    metrics = {key: value for key, value in as_cells(metrics).items() if not key.startswith(HIDDEN)}
    parts: dict[str, dict[str, float]] = {}
    for key, value in metrics.items():
        found = companion_of(key, metrics)
        if found is not None:
            parts.setdefault(found[0], {})[found[1]] = value
    cells: dict[str, dict[str, str]] = {}
    for key in sorted(metrics):
        if companion_of(key, metrics) is None:
            row, column = split_key(key)
            cells.setdefault(row, {})[column] = cell_text(metrics[key], parts.get(key, {}))
    found_columns = {column for row in cells.values() for column in row}
    if "overall" in found_columns and VALUE in found_columns:
        for row in cells.values():
            if VALUE in row and "overall" not in row:
                row["overall"] = row.pop(VALUE)
        found_columns = {column for row in cells.values() for column in row}
    groups = [g for g in ("in_domain", "overall", *GROUPS) if g in found_columns]
    languages = sorted(c for c in found_columns if c not in GROUPS and c != VALUE)
    columns = [*([VALUE] if VALUE in found_columns else []), *dict.fromkeys(groups), *languages]
    return [{"metric": row, **{column: cells[row].get(column, "") for column in columns}}
            for row in sorted(cells, key=row_order)]


def headline_names(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The metrics a summary leads with: LCPR (the reasoning's language), then the accuracy the reports lead with.

    >>> headline_names([{"headline": "pass_at_4", "lcpr": 0.5, "pass_at_4": 0.25}])
    ['lcpr', 'pass_at_4']
    """
    names = ["lcpr", *dict.fromkeys(str(r.get("headline") or "accuracy") for r in rows)]
    return [name for name in dict.fromkeys(names) if any(r.get(name) is not None for r in rows)]


def metric_table(rows: Sequence[Mapping[str, Any]], name: str, against: str) -> list[str]:
    """One metric as markdown lines: a row per benchmark, language and model, five narrow columns (value with its
    interval and n; the delta with its paired interval and n_both), so the table fits a page's width."""
    measured = [r for r in rows if r.get(name) is not None]
    if not measured:
        return []
    out = ["", f"**{name}**", "", f"| benchmark | lang | model | value [95% interval] (n) | Δ to {against} (n_both) |",
           "|---|---|---|---|---|"]
    for row in measured:
        delta = delta_text(row, name).removeprefix("Δ ") or "-"
        out.append(f"| {row['benchmark']} | {row['lang']} | {row['model']} | {value_text(row, name)} | {delta} |")
    return out


def comparison_markdown(rows: Sequence[Mapping[str, Any]], baseline: str,
                        names: Sequence[str] | None = None) -> str:
    """The comparison's rows as markdown: the legend, then one table per metric (``names``: these, in this order;
    default every compared metric), ``components.reports.comparison``'s texts in each cell."""
    models = list(dict.fromkeys(r["model"] for r in rows))
    names = names or list(dict.fromkeys(k for r in rows for k in r if k + STDERR in r and not k.endswith(DELTA)))
    against = "the model before" if baseline == PREVIOUS else baseline
    out = [LEGEND.format(baseline=baseline_text(models, baseline))]
    for name in names:
        out += metric_table(rows, name, against)
    return "\n".join(out)


def headline_rows(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The rows of the languages a summary leads with: the in-domain group, else ``overall``, else every row."""
    for group in ("in_domain", "overall"):
        picked = [r for r in rows if r["lang"] == group]
        if picked:
            return picked
    return list(rows)


def registered_text(registered: Mapping[str, Any] | None) -> str:
    """One line on the registered version (``RegisteredModel``'s fields), or that nothing was registered.

    >>> registered_text({"uri": "models:/demo/3", "alias": "candidate", "reused": True, "merged": None})
    '`models:/demo/3` (alias `candidate`; an existing version with the same weights)'
    """
    if not registered:
        return "nothing registered (the profile has no registry section, or the recipe stopped before it)"
    notes = [f"alias `{registered['alias']}`"]
    if registered.get("reused"):
        notes.append("an existing version with the same weights")
    if registered.get("merged"):
        notes.append(f"merged copy `{registered['merged']['uri']}`")
    return f"`{registered['uri']}` ({'; '.join(notes)})"


def recipe_summary(profile: str, run_link: str, rows: Sequence[Mapping[str, Any]] | None, baseline: str,
                   registered: Mapping[str, Any] | None) -> str:
    """The recipe's markdown summary: the registered version and the MLflow run, the headline (in-domain LCPR, then
    accuracy, each model against ``baseline``), then every compared metric and language."""
    against = "the model before each" if baseline == PREVIOUS else baseline
    head = [f"# Recipe {profile}", "", f"Registered: {registered_text(registered)}", "", f"MLflow run: {run_link}"]
    if not rows:
        return "\n".join([*head, "", "no models were evaluated", ""])
    top = headline_rows(rows)
    group = top[0]["lang"] if len(top) < len(rows) else "every language"
    return "\n".join([*head, "", f"## Headline: {group}, compared to {against}", "",
                      comparison_markdown(top, baseline, headline_names(top)), "",
                      f"## Every metric and language, compared to {against}", "", comparison_markdown(rows, baseline),
                      ""])


def nightly_summary(reference: str, day: str, run_link: str, model_link: str, previous: Mapping[str, Any] | None,
                    rows: Sequence[Mapping[str, Any]] | None) -> str:
    """A nightly evaluation of one registered version: which version, its MLflow run and logged model, and its
    metrics against the version's previous evaluation (``previous``: its ``label`` and ``link``), deltas with their
    paired intervals; without a previous evaluation, its metrics alone."""
    head = [f"# Nightly {day}: `{reference}`", "", f"Version evaluated: `{reference}`, logged model {model_link}", "",
            f"MLflow run: {run_link}", ""]
    if previous is None:
        head += ["No earlier evaluation of this version: nothing to compare with.", ""]
    else:
        head += [f"Compared to its previous evaluation ({previous['label']}: {previous['link']}).", ""]
    if not rows:
        return "\n".join([*head, "(no metrics)", ""])
    baseline = next(iter(dict.fromkeys(r["model"] for r in rows)))
    top = headline_rows(rows)
    return "\n".join([*head, comparison_markdown(top, baseline, headline_names(top)), "",
                      "Every metric and language: the MLflow run.", ""])
