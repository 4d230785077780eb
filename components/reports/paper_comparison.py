"""A run held against its paper's table: measured against printed, row by row, with the measured value's interval.

Input: the rows of a paper table (``components.reports.paper_tables``: one ``PaperRow`` per table row,
benchmark, metric and language or group) and the measurements the compared runs offer, one
``Measurement`` per run: its ``role`` (a recipe's model tag ``base``/``sft``/``grpo``, ``evaluation``
for an evaluation run outside a recipe, ``audit``), its settings as logged (flattened
``key: value`` parameters, the recipe's included) and its metrics. Output: one entry per paper
row and run that measures it, or one ``missing`` entry saying why nothing does — no row is
dropped.

Which run measures a row. A row is measured by a run of its ``measured_by`` role whose settings
are the row's: the run has every setting the row's ``overrides`` name (``key=value``, values read
as YAML, a mapping or list compared key by key and item by item, numbers by value), and none of
the settings of the table's other rows of that role unless the row's own overrides include
them (so a run of the shipped profile measures the rows without overrides, and an ablation's run
its ablation's rows). Only the overridden keys are compared: a CPU twin (other model, smaller
counts) measures the rows of the setting it shares.

The numbers. ``measured`` is the metric the run logged under ``PaperRow.key`` (on the project's
0-1 scale), with its bootstrap standard error and n, its independent units (``<key>_stderr``,
``<key>_n``, the same numbers the run's reports show); ``ci_low``/``ci_high`` its 95% interval
(``components.metrics.intervals``: Wilson's at its effective n for a rate, ±1.96 standard
errors otherwise). ``difference`` is ``measured − paper``.

Matching the paper is a test. A printed value is an estimate too: the paper's run had its own
sampling error, at its own n (``paper_n``: the table file's ``problems`` for the benchmark,
the problems per language it evaluated). An exact reproduction therefore differs from the
printed value by the sampling error of *both*, and asking whether the printed value lies in
the measured interval alone rejects exact reproductions far more often than 5% (always at 0
or 1, where the measured interval can be a point). The difference's interval
``difference_low``/``difference_high`` is Newcombe's square-and-add interval of two
independent rates: the measured Wilson interval and the paper's, at the paper's effective n
(its ``problems`` times the measured design effect, ``n_eff / n``: the same clustering of
samples and translations assumed for both runs; ``problems`` itself where the measurement
has none). An unbounded metric adds the two variances, the paper's standard error being the
measured one scaled to the paper's n. ``consistent_with_paper`` says whether that interval
holds 0: at the 5% level, the measurement does not contradict the paper. Where the table does
not give the paper's n the paper's error is left out (``paper_n`` is ``None``; the text marks
the entry ``~``). A run that logged no standard error (an audit's rates) has no interval and no
verdict. The text table prints every value on the paper's own scale (percent for
``scale: 100``).

The table's own corrections and other row kinds (``components.reports.paper_tables``). A cell the
paper prints inconsistently is held against its ``corrected`` value; the entry keeps the
printed one (``printed``) and the ``evidence``, and the text prints both. A bound (``relation``
``>``/``<``: "over 95 %") is consistent when the measured interval reaches past it
(``ci_high > bound`` for ``>``). A ``before`` value is carried and printed (``0.647→0.735``);
the run is held against the after value. A row marked ``unmeasured`` gets one ``unmeasured``
entry with its reason, and is never compared.

>>> rows = [PaperRow("T2", "Ours", "M", "grpo", "mkqa", "fem", "all", 41.2, 100.0, problems=500)]
>>> run = Measurement("grpo", "grpo", "r1", {}, {"evaluation/mkqa/all/fem": 0.3, "evaluation/mkqa/all/fem_stderr": 0.05,
...                                            "evaluation/mkqa/all/fem_n": 48})
>>> [(e["status"], e["measured"], e["difference"], round(e["difference_low"], 3), round(e["difference_high"], 3),
...   e["consistent_with_paper"]) for e in paper_entries(rows, [run])]
[('measured', 0.3, -0.112, -0.205, -0.002, False)]
>>> paper_entries(rows, [])[0]["reason"]
'no grpo evaluation among the compared runs'
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from components.config import parse_override
from components.metrics.intervals import Z95, as_rate, effective_n, newcombe, wilson
from components.reports.paper_tables import PaperRow

_MISSING = object()


@dataclass(frozen=True)
class Measurement:
    """One compared run: what it measures (``role``), its label and id, its logged settings and metrics."""

    role: str
    label: str
    run_id: str
    params: Mapping[str, Any]
    metrics: Mapping[str, float]


def _read(value: Any) -> Any:
    """A logged parameter back as a value: MLflow keeps text (``''`` for None, JSON for lists)."""
    if not isinstance(value, str):
        return value
    if value in ("", "None"):
        return None
    try:
        return yaml.safe_load(value)
    except yaml.YAMLError:
        return value


def setting_value(params: Mapping[str, Any], path: Sequence[str]) -> Any:
    """The value at a dotted ``path`` in flattened ``params`` (lists are one JSON parameter); ``_MISSING``.

    >>> setting_value({"grpo.rewards": '[{"name": "lcrl", "params": {"penalty_weight": 0.02}}]'},
    ...               ["grpo", "rewards", "0", "params", "penalty_weight"])
    0.02
    >>> setting_value({"evaluation.prompt.style": "plain", "evaluation.prompt.instruction": "after"},
    ...               ["evaluation", "prompt"])
    {'style': 'plain', 'instruction': 'after'}
    """
    for cut in range(len(path), 0, -1):
        key = ".".join(path[:cut])
        if key in params:
            node = _read(params[key])
            for part in path[cut:]:
                if isinstance(node, list) and part.isdigit() and int(part) < len(node):
                    node = node[int(part)]
                elif isinstance(node, dict) and part in node:
                    node = node[part]
                else:
                    return _MISSING
            return node
    prefix = ".".join(path) + "."
    nested: dict[str, Any] = {}
    for key, value in params.items():
        if key.startswith(prefix):
            node = nested
            *parents, leaf = key[len(prefix):].split(".")
            for part in parents:
                node = node.setdefault(part, {})
            node[leaf] = _read(value)
    return nested or _MISSING


def matches(expected: Any, actual: Any) -> bool:
    """``actual`` has every key and item of ``expected`` (numbers by value, text by equality).

    >>> matches({"mode": "none"}, {"mode": "none", "baseline": "group"}), matches(0, 0.0), matches([["query"]], [["en"]])
    (True, True, False)
    """
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and matches(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list):
        return isinstance(actual, list) and len(expected) == len(actual) and all(map(matches, expected, actual))
    numbers = (int, float)
    if isinstance(expected, numbers) and isinstance(actual, numbers) and not isinstance(expected, bool) \
            and not isinstance(actual, bool):
        return float(expected) == float(actual)
    return expected == actual


def has_overrides(params: Mapping[str, Any], overrides: Sequence[str]) -> bool:
    """Whether a run logged with ``params`` has every setting of ``overrides``."""
    for text in overrides:
        path, value = parse_override(text)
        found = setting_value(params, path)
        if found is _MISSING or not matches(value, found):
            return False
    return True


def runs_setting(row: PaperRow, params: Mapping[str, Any], others: Sequence[tuple[str, ...]]) -> bool:
    """Whether a run is of the row's setting: its overrides, and none of the other rows' (see the docstring)."""
    if not has_overrides(params, row.overrides):
        return False
    return not any(other and not set(other) <= set(row.overrides) and has_overrides(params, other)
                   for other in others)


def _bounded(metric: str) -> bool:
    """Whether a paper row's metric is a rate (its values in [0, 1]); audit rates are."""
    from components.metrics.registry import metric_for

    try:
        return metric_for(metric).bounded
    except KeyError:
        return True


def _measured_interval(value: float, stderr: float | None, n: int | None,
                       bounded: bool) -> tuple[float | None, float | None]:
    if stderr is None:
        return None, None
    if bounded:
        return wilson(value, effective_n(value, stderr, n or 1))
    return value - Z95 * stderr, value + Z95 * stderr


def difference_interval(value: float, stderr: float | None, n: int | None, paper: float, paper_n: int | None,
                        bounded: bool = True) -> tuple[float | None, float | None]:
    """The 95% interval of ``value - paper`` with both runs' sampling errors (the paper's left out without
    ``paper_n``); see the module docstring.

    >>> [round(x, 3) for x in difference_interval(1.0, 0.0, 8, 1.0, 8)]   # 8/8 both: no contradiction
    [-0.324, 0.324]
    """
    low, high = _measured_interval(value, stderr, n, bounded)
    if low is None:
        return None, None
    if paper_n is None:
        return low - paper, high - paper
    if not bounded:
        paper_error = stderr * (max(n or 1, 1) / paper_n) ** 0.5
        half = Z95 * (stderr ** 2 + paper_error ** 2) ** 0.5
        return value - paper - half, value - paper + half
    design = effective_n(value, stderr, n or 1) / max(n or 1, 1)
    paper_limits = wilson(paper, paper_n * design if stderr and 0 < value < 1 else paper_n)
    return newcombe(value, (low, high), paper, paper_limits)


def _why_not_logged(row: PaperRow, metrics: Mapping[str, float]) -> str:
    """Why a run that measures a row's setting has no value at its key."""
    parts = row.key.split("/")
    for depth, what in ((2, f"benchmark {parts[1]}"), (3, f"{parts[2]} on {parts[1]}")):
        if depth < len(parts) and not any(k.startswith("/".join(parts[:depth]) + "/") for k in metrics):
            return f"not evaluated: the run has no {what}"
    return f"not logged: the run reports no {row.metric} there ({row.key})"


def _entry(row: PaperRow, status: str, reason: str | None = None, run: Measurement | None = None) -> dict[str, Any]:
    entry = {"table": row.table, "row": row.row, "model": row.model, "measured_by": row.measured_by,
             "overrides": list(row.overrides), "benchmark": row.benchmark, "language": row.language,
             "metric": row.metric, "key": None if row.unmeasured else row.key, "paper": row.held,
             "printed": row.value, "corrected": row.corrected, "evidence": row.evidence, "relation": row.relation,
             "before": row.before, "scale": row.scale, "paper_value": row.fraction, "status": status,
             "reason": reason, "run": run.label if run else None, "run_id": run.run_id if run else None}
    empty = {"measured": None, "stderr": None, "n": None, "ci_low": None, "ci_high": None, "difference": None,
             "paper_n": row.problems, "difference_low": None, "difference_high": None, "consistent_with_paper": None}
    if status != "measured":
        return {**entry, **empty}
    value, stderr, n = (run.metrics.get(row.key + suffix) for suffix in ("", "_stderr", "_n"))
    n = None if n is None else int(n)
    bounded = as_rate(_bounded(row.metric), value, row.fraction)
    low, high = _measured_interval(value, stderr, n, bounded)
    d_low, d_high = difference_interval(value, stderr, n, row.fraction, row.problems, bounded)
    rounded = [None if x is None else round(x, 10) for x in (low, high, d_low, d_high)]
    return {**entry, "measured": value, "stderr": stderr, "n": n, "ci_low": rounded[0], "ci_high": rounded[1],
            "difference": round(value - row.fraction, 10), "paper_n": row.problems,
            "difference_low": rounded[2], "difference_high": rounded[3],
            "consistent_with_paper": _verdict(row, low, high, d_low, d_high)}


def _verdict(row: PaperRow, low: float | None, high: float | None, d_low: float | None,
             d_high: float | None) -> bool | None:
    """Consistent with the paper: the difference's interval holds 0, or, for a bound, the measured interval
    reaches past it; ``None`` without an interval."""
    if row.relation == ">":
        return None if high is None else high > row.fraction
    if row.relation == "<":
        return None if low is None else low < row.fraction
    return None if d_low is None else d_low <= 0 <= d_high


def paper_entries(rows: Sequence[PaperRow], runs: Sequence[Measurement]) -> list[dict[str, Any]]:
    """One entry per (paper row, run measuring it), or one ``missing`` entry with the reason (see the docstring)."""
    compared = [r for r in rows if r.unmeasured is None]
    others = {role: sorted({r.overrides for r in compared if r.measured_by == role})
              for role in {r.measured_by for r in compared}}
    out = []
    for row in rows:
        if row.unmeasured is not None:
            out.append(_entry(row, "unmeasured", row.unmeasured))
            continue
        candidates = [run for run in runs if run.role == row.measured_by]
        if not candidates:
            kind = "audit run" if row.measured_by == "audit" else f"{row.measured_by} evaluation"
            out.append(_entry(row, "missing", f"no {kind} among the compared runs"))
            continue
        mine = [run for run in candidates if runs_setting(row, run.params, others[row.measured_by])]
        if not mine:
            setting = "; ".join(row.overrides) or "the profile as shipped"
            out.append(_entry(row, "missing", f"another setting: this row is measured with {setting}"))
            continue
        for run in mine:
            logged = run.metrics.get(row.key) is not None
            out.append(_entry(row, "measured", run=run) if logged else
                       _entry(row, "missing", _why_not_logged(row, run.metrics), run))
    return out


def _on_scale(value: float | None, scale: float, signed: bool = False) -> str:
    if value is None:
        return "-"
    shown = value * scale
    return (f"{shown:+.1f}" if signed else f"{shown:.1f}") if scale == 100 else (
        f"{shown:+.3f}" if signed else f"{shown:.3f}")


def _paper_text(entry: Mapping[str, Any]) -> str:
    """The paper's cell: the held value, a bound's relation, a before→after pair."""
    scale = entry["scale"]
    text = (entry["relation"] or "") + _on_scale(entry["paper_value"], scale)
    if entry["before"] is not None:
        text = f"{_on_scale(entry['before'] / scale, scale)}→{text}"
    return text


def _printed_text(entry: Mapping[str, Any]) -> str:
    """Where the held value is a correction: the printed value and the evidence."""
    if entry["corrected"] is None:
        return ""
    return f"  (printed {_on_scale(entry['printed'] / entry['scale'], entry['scale'])}: {entry['evidence']})"


def _measured_text(entry: Mapping[str, Any]) -> str:
    if entry["status"] == "unmeasured":
        return f"not measured here: {entry['reason']}"
    if entry["status"] != "measured":
        return f"missing: {entry['reason']}"
    scale = entry["scale"]
    error = "" if entry["stderr"] is None else f" ±{_on_scale(entry['stderr'], scale)}"
    n = "" if entry["n"] is None else f" (n {entry['n']})"
    interval = "" if entry["ci_low"] is None else \
        f"  [{_on_scale(entry['ci_low'], scale)}, {_on_scale(entry['ci_high'], scale)}]"
    difference = f"  Δ {_on_scale(entry['difference'], scale, True)}"
    if entry["difference_low"] is not None:
        difference += f" [{_on_scale(entry['difference_low'], scale, True)}, " \
                      f"{_on_scale(entry['difference_high'], scale, True)}]"
    mark = {False: "  !", True: "", None: ""}[entry["consistent_with_paper"]]
    unknown = "  ~" if entry["paper_n"] is None and entry["difference_low"] is not None else ""
    return f"{_on_scale(entry['measured'], scale)}{error}{n}{interval}{difference}{mark}{unknown}"


def format_paper_table(entries: Sequence[Mapping[str, Any]], title: str) -> str:
    """The entries as fixed-width text, on the paper's scale, one line per entry, missing rows with their reason."""
    counted = sum(e["status"] == "measured" for e in entries)
    lines = [f"paper: {title}",
             f"{counted} of {len(entries)} values measured. Values on the paper's scale; measured ±1 standard error "
             "(n: problems) [95% interval: Wilson's for a rate]; Δ = measured - paper [95% interval with both runs' "
             "sampling errors, the paper's at its n (Newcombe's for a rate)]; ! = not consistent with the paper "
             "(the interval excludes 0; for a bound >x or <x, the measured interval does not reach past it); "
             "~ = the paper's n is not in its table, its error left out; (printed …) = the paper prints another "
             "value in this cell, the run is held against the one its other cells imply; a→b = before→after",
             "  ".join(f"{h:<{w}}" for h, w in zip(HEADER, WIDTHS)) + "  measured"]
    for e in entries:
        cells = [e["table"], e["row"], e["run"] or e["measured_by"], e["benchmark"], e["language"], e["metric"],
                 _paper_text(e)]
        lines.append("  ".join(f"{str(c)[:w]:<{w}}" for c, w in zip(cells, WIDTHS)) + "  " + _measured_text(e)
                     + _printed_text(e))
    return "\n".join(lines)


HEADER = ("table", "row", "run", "benchmark", "lang", "metric", "paper")
WIDTHS = (14, 28, 10, 10, 13, 16, 12)


def paper_report(entries: Sequence[Mapping[str, Any]], title: str) -> tuple[str, str]:
    """``(paper.json text, paper.txt text)`` of the entries."""
    return json.dumps(list(entries), ensure_ascii=False, indent=1), format_paper_table(entries, title) + "\n"
