"""Corpus metrics from scored rows: per language, per benchmark, and language groups.

Groups follow AdaMame §4 and table 14: in-domain (training) languages, by default
fr pt ja ko th, against all others present; resource levels low (th bn sw te), mid
(ja ko pt ru de), high (fr en es zh). Per-language numbers pool that language's rows; group
numbers (and ``all``) are the macro mean over the group's languages present, as AdaMame's
tables average languages, of the metrics every member reports (a ``pass_at_4`` missing in one
language is not averaged over the others). ``overall`` pools every row.

A scored row carries ``lang``, ``id``, ``correct`` and optionally ``benchmark``, ``line_pass``,
``word_pass``, ``slc``, ``slc_and_acc``, ``lang_detected``, ``ttc``, ``ttc_chars`` (``None`` = not
applicable, left out of that mean). Definitions:

* ``accuracy``: mean correctness over rows; samples of one problem are grouped by
  ``(benchmark, lang, id)`` (ids are shared across languages, records.py), and ``pass_at_<k>``
  (unbiased) is reported for each requested k when every
  problem has at least k samples; ``avg_at_<n>`` is the mean over problems of their mean
  correctness when all problems have n samples (``avg_at_n`` if the counts differ).
* ``lpr``: share of rows with a line-level verdict that pass; ``wpr``: share of rows passing the
  line level whose word level passes (AdaMame C.3); ``lcpr``: their harmonic mean, 0 when
  ``lpr`` is 0, and ``lpr`` itself when the word level applies to no row (rule ``lcb`` on
  Latin-script languages).
* ``slc``: mean SLC; ``slc_and_acc``: share of all rows that are correct with SLC >= threshold;
  ``language_consistency``: share of rows whose detected trace language is the query language.

>>> rows = [{"lang": "fr", "id": "a", "correct": True, "line_pass": True, "word_pass": False},
...         {"lang": "fr", "id": "a", "correct": False, "line_pass": False, "word_pass": True}]
>>> s = summarize(rows, pass_k=(1, 2))
>>> s["accuracy"], s["pass_at_1"], s["pass_at_2"], s["avg_at_2"], s["lpr"], s["wpr"], s["lcpr"]
(0.5, 0.5, 1.0, 0.5, 0.5, 0.0, 0.0)
>>> sorted(language_groups(["fr", "en", "th", "xx"]).items())[:3]
[('all', ['en', 'fr', 'th', 'xx']), ('high', ['en', 'fr']), ('in_domain', ['fr', 'th'])]
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from components.metrics.accuracy import avg_at_key, pass_at_k, pass_at_key
from components.metrics.lcpr import lcpr_from_rates

IN_DOMAIN_LANGUAGES: tuple[str, ...] = ("fr", "pt", "ja", "ko", "th")
RESOURCE_LEVELS: dict[str, tuple[str, ...]] = {
    "low": ("th", "bn", "sw", "te"),
    "mid": ("ja", "ko", "pt", "ru", "de"),
    "high": ("fr", "en", "es", "zh"),
}

Row = Mapping[str, Any]


def _mean(values: Iterable[Any]) -> float | None:
    kept = [float(v) for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def _problem(row: Row) -> tuple[Any, Any, Any]:
    return row.get("benchmark"), row["lang"], row["id"]


def _accuracy_metrics(rows: Sequence[Row], pass_k: Sequence[int]) -> dict[str, float | None]:
    problems: dict[tuple[Any, Any, Any], list[bool]] = defaultdict(list)
    for row in rows:
        problems[_problem(row)].append(bool(row["correct"]))
    counts = {len(samples) for samples in problems.values()}
    out: dict[str, float | None] = {"accuracy": _mean(bool(row["correct"]) for row in rows)}
    for k in pass_k:
        if counts and min(counts) >= k:
            out[pass_at_key(k)] = _mean(pass_at_k(len(s), sum(s), k) for s in problems.values())
    avg_name = avg_at_key(counts.pop()) if len(counts) == 1 else "avg_at_n"
    out[avg_name] = _mean(sum(s) / len(s) for s in problems.values())
    return out


def _language_metrics(rows: Sequence[Row]) -> dict[str, float | None]:
    lpr = _mean(row.get("line_pass") for row in rows)
    wpr = _mean(row.get("word_pass") for row in rows if row.get("line_pass") is True)
    if lpr is None:
        lcpr = None
    elif wpr is None:
        lcpr = 0.0 if lpr == 0 else lpr
    else:
        lcpr = lcpr_from_rates(lpr, wpr)
    consistency = (
        None if row.get("lang_detected") is None else row["lang_detected"] == row["lang"] for row in rows
    )
    return {
        "lpr": lpr, "wpr": wpr, "lcpr": lcpr,
        "slc": _mean(row.get("slc") for row in rows),
        "slc_and_acc": _mean(bool(row.get("slc_and_acc")) for row in rows),
        "language_consistency": _mean(consistency),
    }


def summarize(rows: Sequence[Row], *, pass_k: Sequence[int] = (1,)) -> dict[str, Any]:
    """All corpus metrics over ``rows`` (pooled); ``n_rows`` and ``n_problems`` included."""
    if not rows:
        return {"n_rows": 0, "n_problems": 0}
    return {
        **_accuracy_metrics(rows, pass_k),
        **_language_metrics(rows),
        "ttc": _mean(row.get("ttc") for row in rows),
        "ttc_chars": _mean(row.get("ttc_chars") for row in rows),
        "n_rows": len(rows),
        "n_problems": len({_problem(row) for row in rows}),
    }


def per_language(rows: Sequence[Row], *, pass_k: Sequence[int] = (1,)) -> dict[str, dict[str, Any]]:
    """``summarize`` per language plus ``"overall"`` (all rows pooled)."""
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


def group_means(per_lang: Mapping[str, Mapping[str, Any]],
                in_domain: Sequence[str] = IN_DOMAIN_LANGUAGES) -> dict[str, dict[str, float | None]]:
    """Macro mean of each metric every language of the group reports (``None`` values left out)."""
    languages = [lang for lang in per_lang if lang != "overall"]
    out = {}
    for name, members in language_groups(languages, in_domain).items():
        keys = [k for k in per_lang[members[0]] if not k.startswith("n_") and all(k in per_lang[m] for m in members)]
        out[name] = {key: _mean(per_lang[lang][key] for lang in members) for key in keys}
        out[name]["n_languages"] = len(members)
    return out
