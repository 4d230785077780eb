"""Corpus metrics from scored rows: per language, overall, per benchmark and language groups.

What each metric is over one set of rows is defined in ``components.metrics.registry`` (the
table of the rows' kind: math, or QA); this module decides which rows go together, by one
rule for every metric:

* **A cell** (``summarize``) splits its rows by benchmark. A benchmark whose scheme declares a
  macro field (``schemes``, handed in by the caller from the benchmarks' specs,
  ``components.data.benchmarks.SCHEMES``; MMATH: the ``source`` field, its four subsets) gets each
  metric computed on each subset and the subsets averaged with equal weight (the reason is
  in ``components.metrics.registry``); any other benchmark pools its rows. Rows of several benchmarks
  in one cell (a mixed score file) are averaged over benchmarks with equal weight. Rows
  without the subset field form one subset of their own (``"unspecified"``).
* **Per language**: the cell of that language's rows. **overall**: the cell of all rows
  pooled over languages (the subset rule then sees every language's rows of a subset at once).
* **Groups** (``all``, ``in_domain``, ``out_of_domain``, and AdaMame's resource levels of
  table 14: low th bn sw te, mid ja ko pt ru de, high fr en es zh): the mean of the
  per-language values of the group's languages present, as AdaMame's tables average
  languages; a group cell lists its ``languages``.
* Every metric is computed on each subset and then averaged, ratios included: a macro LCPR
  is the mean of the subsets' LCPRs (not the harmonic mean of the macro LPR and WPR), a group
  LCPR the mean of its languages' LCPRs.
* ``None`` means nothing to judge (a language whose traces hold no letter has no LPR): means
  over subsets, benchmarks and languages leave such parts out, except for metrics whose value
  is missing rather than inapplicable (pass@k): there the mean is ``None`` too.
* pass@k needs k samples of every problem. When a cell has problems with fewer, its
  ``pass_at_<k>`` is ``None``, ``n_short_pass_at_<k>`` counts those problems, and ``notes``
  turns the counts into messages (nothing is dropped silently).

Every value comes with ``<metric>_stderr`` and ``<metric>_n``: the bootstrap standard error
of exactly that statistic (problems resampled within the macro rule's subsets, a problem's
samples and its translations together, the group mean recomputed on each resample;
``components.metrics.bootstrap``) and its number of independent units: the problems it
judged (a problem with a verdict; for WPR one with a trace passing the line level), a
problem's samples and its translations counted once, so a group of three languages over 16
problems has ``n`` 16 and 40 problems of 2 samples ``n`` 40 (``n_rows`` counts the rows beside
it). Its 95% interval is not stored: it follows from value, standard error and n
(``components.metrics.intervals.rate_interval``: Wilson's at the effective n for a rate);
``with_intervals`` adds it as ``<metric>_low``/``<metric>_high`` for a reader of the JSON.

A cell under a macro rule also carries ``macro_over`` (the field), ``subsets`` (each subset's
pooled values and counts) and ``pooled`` (every metric over all the cell's rows pooled, the
number a row-weighted report would give), each value with its standard error and n too.
Counts: ``n_rows``, ``n_problems`` (a problem is ``(benchmark, lang, id)``).

>>> rows = [{"lang": "fr", "id": "a", "correct": True, "line_pass": True, "word_pass": False},
...         {"lang": "fr", "id": "a", "correct": False, "line_pass": False, "word_pass": True}]
>>> s = summarize(rows, pass_k=(1, 2, 3))
>>> s["accuracy"], s["pass_at_1"], s["pass_at_2"], s["avg_at_2"], s["lpr"], s["wpr"], s["lcpr"]
(0.5, 0.5, 1.0, 0.5, 0.5, 0.0, 0.0)
>>> s["accuracy_n"], s["accuracy_stderr"], s["wpr_n"], s["n_rows"]   # one problem: nothing to resample
(1, None, 1, 2)
>>> s["pass_at_3"], s["n_short_pass_at_3"], notes({"fr": s})
(None, 1, ['fr: pass_at_3 is None: 1 of 1 problems have fewer than 3 samples'])
>>> sorted(language_groups(["fr", "en", "th", "xx"]).items())[:3]
[('all', ['en', 'fr', 'th', 'xx']), ('high', ['en', 'fr']), ('in_domain', ['fr', 'th'])]
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from components.metrics.bootstrap import Bootstrap, Estimate, Macro, estimate, stratum_of
from components.metrics.intervals import as_rate, rate_interval
from components.metrics.problems import Problems, joined
from components.metrics.registry import Schemes, beside_rules, kind_of_rows, macro_fields, metric_for, metrics

IN_DOMAIN_LANGUAGES: tuple[str, ...] = ("fr", "pt", "ja", "ko", "th")
RESOURCE_LEVELS: dict[str, tuple[str, ...]] = {
    "low": ("th", "bn", "sw", "te"),
    "mid": ("ja", "ko", "pt", "ru", "de"),
    "high": ("fr", "en", "es", "zh"),
}
GROUP_NAMES: tuple[str, ...] = ("in_domain", "out_of_domain", *RESOURCE_LEVELS, "all")  # ``language_groups``' keys
SHORT_PREFIX = "n_short_"
STDERR, COUNT = "_stderr", "_n"
BREAKDOWNS = ("macro_over", "subsets", "pooled", "languages")
NO_SCHEMES: Schemes = {}  # every benchmark math, pooled: rows of no registered benchmark

Row = Mapping[str, Any]


def _values(names: Sequence[str], estimates: Sequence[Estimate]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, found in zip(names, estimates, strict=True):
        out.update({name: found.value, name + STDERR: found.stderr, name + COUNT: found.n})
    return out


Cell = Sequence[Row] | Problems  # a cell's rows, or its problems already reduced (``components.metrics.problems``)


def problems_of(cell: Cell, pass_k: Sequence[int], schemes: Schemes) -> Problems:
    """A cell's problems: as given, or its rows reduced under the table of their kind and LCPR rules."""
    if isinstance(cell, Problems):
        return cell
    return Problems.of_rows(cell, metrics(pass_k, beside_rules(cell), kind_of_rows(cell, schemes)))


def _cell(members: Sequence[Problems], bootstrap: Bootstrap, macro: Macro) -> dict[str, Any]:
    table = members[0].table
    names = [joined(members).output_name(metric) for metric in table]
    return _values(names, estimate([members], table, bootstrap, macro=macro)[0])


def summarize(rows: Cell, *, pass_k: Sequence[int] = (1,), bootstrap: Bootstrap = Bootstrap(),
              schemes: Schemes = NO_SCHEMES) -> dict[str, Any]:
    """Every metric of the table over one cell of rows, under the benchmarks' macro rules (``schemes``:
    benchmark -> its scheme; one it does not name is math, pooled). ``rows`` may be the cell's problems,
    reduced under the table they are reported with."""
    if not len(rows):
        return {"n_rows": 0, "n_problems": 0}
    problems = problems_of(rows, pass_k, schemes)
    macro = macro_fields(schemes)
    out = _cell([problems], bootstrap, macro)
    shortfalls = {SHORT_PREFIX + problems.output_name(metric): short for metric in problems.table
                  if (short := problems.short(metric.min_samples))}
    out.update(n_rows=problems.n_rows, n_problems=len(problems), **shortfalls)
    benchmarks = {item.head.get("benchmark") for item in problems.items}
    field = macro.get(next(iter(benchmarks)))
    if len(benchmarks) == 1 and field is not None:
        subsets = problems.split(lambda head: stratum_of(head, macro)[1])
        out["macro_over"] = field
        out["subsets"] = {subset: {**_cell([part], bootstrap, None), "n_rows": part.n_rows,
                                   "n_problems": len(part)} for subset, part in sorted(subsets.items())}
        out["pooled"] = _cell([problems], bootstrap, None)
    return out


def _by(rows: Cell, key: str, default: Any = None) -> dict[Any, Cell]:
    """A cell's rows (or problems) by one identity field."""
    if isinstance(rows, Problems):
        return rows.split(lambda head: head.get(key) or default)
    out: dict[Any, list[Row]] = defaultdict(list)
    for row in rows:
        out[row.get(key) or default].append(row)
    return out


def per_language(rows: Cell, *, pass_k: Sequence[int] = (1,), bootstrap: Bootstrap = Bootstrap(),
                 schemes: Schemes = NO_SCHEMES) -> dict[str, dict[str, Any]]:
    """``summarize`` per language plus ``"overall"`` (all rows, pooled over languages)."""
    by_lang = _by(rows, "lang")
    options = {"pass_k": pass_k, "bootstrap": bootstrap, "schemes": schemes}
    out = {lang: summarize(by_lang[lang], **options) for lang in sorted(by_lang)}
    out["overall"] = summarize(rows, **options)
    return out


def per_benchmark(rows: Cell, *, pass_k: Sequence[int] = (1,), bootstrap: Bootstrap = Bootstrap(),
                  schemes: Schemes = NO_SCHEMES) -> dict[str, dict[str, Any]]:
    """``per_language`` for each benchmark (rows without one go under ``"default"``)."""
    by_bench = _by(rows, "benchmark", "default")
    return {name: per_language(by_bench[name], pass_k=pass_k, bootstrap=bootstrap, schemes=schemes)
            for name in sorted(by_bench)}


def language_groups(languages: Iterable[str],
                    in_domain: Sequence[str] = IN_DOMAIN_LANGUAGES) -> dict[str, list[str]]:
    """Group name -> the given languages in it (empty groups left out)."""
    present = sorted(set(languages))
    groups = {
        "all": present,
        "in_domain": [lang for lang in present if lang in in_domain],
        "out_of_domain": [lang for lang in present if lang not in in_domain],
        **{level: [lang for lang in present if lang in members] for level, members in RESOURCE_LEVELS.items()},
    }
    return {name: members for name, members in groups.items() if members}


def metric_names(cell: Mapping[str, Any]) -> list[str]:
    """The keys of a cell that are metrics of the table (their errors, counts and breakdowns left out)."""
    out = [name for name in cell if name + STDERR in cell]
    for name in out:
        metric_for(name)  # an unknown key is a bug in the caller: fail loudly
    return out


def group_means(rows: Cell, in_domain: Sequence[str] = IN_DOMAIN_LANGUAGES, *,
                pass_k: Sequence[int] = (1,), bootstrap: Bootstrap = Bootstrap(),
                schemes: Schemes = NO_SCHEMES) -> dict[str, dict[str, Any]]:
    """Mean of the per-language values of each group, with the bootstrap error of that mean."""
    problems = problems_of(rows, pass_k, schemes)
    by_lang = problems.split(lambda head: head.get("lang"))
    out: dict[str, dict[str, Any]] = {}
    for name, members in language_groups(by_lang, in_domain).items():
        out[name] = _cell([by_lang[lang] for lang in members], bootstrap, macro_fields(schemes))
        out[name].update(n_languages=len(members), languages=list(members))
    return out


INTERVAL_METHOD = ("rates: Wilson's 95% score interval at the effective number of problems, p (1 - p) / "
                   "stderr^2 from the bootstrap's standard error (the problems judged when it shows no spread), as "
                   "in the comparison tables; other metrics: their bootstrap standard error")


def cell_intervals(cell: Mapping[str, Any]) -> dict[str, float | None]:
    """``<metric>_low``/``<metric>_high`` of every rate of a cell (``rate_interval``: Wilson's at its effective n).

    >>> cell_intervals({"accuracy": 1.0, "accuracy_stderr": 0.0, "accuracy_n": 8, "ttc": 0.4, "ttc_stderr": 0.1,
    ...                 "ttc_n": 8})
    {'accuracy_low': 0.6755924351161198, 'accuracy_high': 1.0}
    """
    out: dict[str, float | None] = {}
    for name in metric_names(cell):
        value = cell[name]
        if value is not None and as_rate(metric_for(name).bounded, value):
            out[name + "_low"], out[name + "_high"] = rate_interval(value, cell.get(name + STDERR),
                                                                    int(cell.get(name + COUNT) or 0))
    return out


def with_intervals(result: Mapping[str, Any]) -> dict[str, Any]:
    """A scoring result whose every language, overall and group cell also holds its rates' 95% intervals, and
    ``interval_method`` saying how they are computed."""
    def cells(table: Mapping[str, Any]) -> dict[str, Any]:
        return {name: {**cell, **cell_intervals(cell)} for name, cell in table.items()}

    return {**result, "aggregate": cells(result.get("aggregate") or {}), "groups": cells(result.get("groups") or {}),
            "by_benchmark": {name: cells(table) for name, table in (result.get("by_benchmark") or {}).items()},
            "interval_method": INTERVAL_METHOD}


def notes(per_lang: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One message per metric a cell could not compute for lack of samples."""
    out = []
    for cell_name, cell in per_lang.items():
        for key, count in cell.items():
            if key.startswith(SHORT_PREFIX):
                name = key[len(SHORT_PREFIX):]
                out.append(f"{cell_name}: {name} is None: {count} of {cell['n_problems']} problems have fewer "
                           f"than {metric_for(name).min_samples} samples")
    return out
