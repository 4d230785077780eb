"""Corpus metrics from scored rows: per language, overall, per benchmark and language groups.

What each metric is over one set of rows is defined in ``components.metrics.table``; this
module decides which rows go together, by one rule for every metric:

* **A cell** (``summarize``) splits its rows by benchmark. A benchmark that declares a macro
  rule (``table.MACRO_RULES``; MMATH: the ``source`` field, its four subsets) gets each
  metric computed on each subset and the subsets averaged with equal weight (the reason is
  in ``components.metrics.table``); any other benchmark pools its rows. Rows of several benchmarks
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

A cell under a macro rule also carries ``macro_over`` (the field), ``subsets`` (each subset's
pooled values and counts) and ``pooled`` (every metric over all the cell's rows pooled, the
number a row-weighted report would give). Counts: ``n_rows``, ``n_problems`` (a problem is
``(benchmark, lang, id)``).

>>> rows = [{"lang": "fr", "id": "a", "correct": True, "line_pass": True, "word_pass": False},
...         {"lang": "fr", "id": "a", "correct": False, "line_pass": False, "word_pass": True}]
>>> s = summarize(rows, pass_k=(1, 2, 3))
>>> s["accuracy"], s["pass_at_1"], s["pass_at_2"], s["avg_at_2"], s["lpr"], s["wpr"], s["lcpr"]
(0.5, 0.5, 1.0, 0.5, 0.5, 0.0, 0.0)
>>> s["pass_at_3"], s["n_short_pass_at_3"], notes({"fr": s})
(None, 1, ['fr: pass_at_3 is None: 1 of 1 problems have fewer than 3 samples'])
>>> sorted(language_groups(["fr", "en", "th", "xx"]).items())[:3]
[('all', ['en', 'fr', 'th', 'xx']), ('high', ['en', 'fr']), ('in_domain', ['fr', 'th'])]
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from components.metrics.table import Metric, macro_field, mean, metric_for, metrics, problems

IN_DOMAIN_LANGUAGES: tuple[str, ...] = ("fr", "pt", "ja", "ko", "th")
RESOURCE_LEVELS: dict[str, tuple[str, ...]] = {
    "low": ("th", "bn", "sw", "te"),
    "mid": ("ja", "ko", "pt", "ru", "de"),
    "high": ("fr", "en", "es", "zh"),
}
UNSPECIFIED = "unspecified"
SHORT_PREFIX = "n_short_"

Row = Mapping[str, Any]
Parts = dict[Any, dict[str, list[Row]]]  # benchmark -> subset -> rows


def _parts(rows: Sequence[Row]) -> Parts:
    parts: Parts = defaultdict(lambda: defaultdict(list))
    for row in rows:
        field = macro_field(row.get("benchmark"))
        subset = "" if field is None else str(row.get(field) or UNSPECIFIED)
        parts[row.get("benchmark")][subset].append(row)
    return parts


def _combine(metric: Metric, values: Sequence[float | None]) -> float | None:
    if not metric.skip_none and any(value is None for value in values):
        return None
    return mean(values)


def _value(metric: Metric, parts: Parts) -> float | None:
    per_benchmark = [_combine(metric, [metric.compute(rows) for rows in subsets.values()])
                     for subsets in parts.values()]
    return _combine(metric, per_benchmark)


def _short(rows: Sequence[Row], min_samples: int) -> int:
    if min_samples <= 1:
        return 0
    return sum(len(samples) < min_samples for samples in problems(rows).values())


def _pooled(rows: Sequence[Row], table: Sequence[Metric], names: Sequence[str]) -> dict[str, Any]:
    return {name: metric.compute(rows) for metric, name in zip(table, names, strict=True)}


def summarize(rows: Sequence[Row], *, pass_k: Sequence[int] = (1,)) -> dict[str, Any]:
    """Every metric of the table over one cell of rows, under the benchmarks' macro rules."""
    if not rows:
        return {"n_rows": 0, "n_problems": 0}
    table = metrics(pass_k)
    names = [metric.output_name(rows) for metric in table]
    parts = _parts(rows)
    out: dict[str, Any] = {}
    shortfalls = {}
    for metric, name in zip(table, names, strict=True):
        short = _short(rows, metric.min_samples)
        out[name] = None if short else _value(metric, parts)
        if short:
            shortfalls[SHORT_PREFIX + name] = short
    out.update(n_rows=len(rows), n_problems=len(problems(rows)), **shortfalls)
    fields = {macro_field(benchmark) for benchmark in parts}
    if len(parts) == 1 and fields != {None}:
        (subsets,) = parts.values()
        out["macro_over"] = fields.pop()
        out["subsets"] = {subset: {**_pooled(part, table, names), "n_rows": len(part),
                                   "n_problems": len(problems(part))} for subset, part in sorted(subsets.items())}
        out["pooled"] = _pooled(rows, table, names)
    return out


def per_language(rows: Sequence[Row], *, pass_k: Sequence[int] = (1,)) -> dict[str, dict[str, Any]]:
    """``summarize`` per language plus ``"overall"`` (all rows, pooled over languages)."""
    by_lang: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        by_lang[row["lang"]].append(row)
    out = {lang: summarize(by_lang[lang], pass_k=pass_k) for lang in sorted(by_lang)}
    out["overall"] = summarize(rows, pass_k=pass_k)
    return out


def per_benchmark(rows: Sequence[Row], *, pass_k: Sequence[int] = (1,)) -> dict[str, dict[str, Any]]:
    """``per_language`` for each benchmark (rows without one go under ``"default"``)."""
    by_bench: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        by_bench[row.get("benchmark") or "default"].append(row)
    return {name: per_language(by_bench[name], pass_k=pass_k) for name in sorted(by_bench)}


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
    """The keys of a cell that are metrics of the table (counts and breakdowns left out)."""
    out = []
    for name in cell:
        if name.startswith("n_") or name in ("macro_over", "subsets", "pooled"):
            continue
        metric_for(name)  # an unknown key is a bug in the caller: fail loudly
        out.append(name)
    return out


def group_means(per_lang: Mapping[str, Mapping[str, Any]],
                in_domain: Sequence[str] = IN_DOMAIN_LANGUAGES) -> dict[str, dict[str, Any]]:
    """Mean of the per-language values of each group, for the metrics every member reports."""
    languages = [lang for lang in per_lang if lang != "overall"]
    out: dict[str, dict[str, Any]] = {}
    for name, members in language_groups(languages, in_domain).items():
        names = [k for k in metric_names(per_lang[members[0]]) if all(k in per_lang[m] for m in members)]
        out[name] = {k: _combine(metric_for(k), [per_lang[lang][k] for lang in members]) for k in names}
        out[name].update(n_languages=len(members), languages=list(members))
    return out


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
