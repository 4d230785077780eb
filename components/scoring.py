"""Score generation rows: correctness, LCPR, SLC, TTC per row, then corpus metrics per language.

The ``polyreason score`` driver. Rows are ``{"id", "lang", "gold", "completion"}`` plus
optional ``benchmark``, ``source`` (a benchmark's subset, e.g. MMATH's MATH500), ``sample_index``,
``max_context``, ``num_tokens``, ``answers`` (every accepted answer of a QA row). Rows of a QA
benchmark (MKQA, XOR-TyDi, the offline set) are scored with the QA metrics (fEM, c3Recall, CLR:
``components.metrics.qa``) on their last ``<answer>`` block, the rows of one call being of one kind
(``components.metrics.registry.kind_of_rows``, by each benchmark's spec: ``components.data.benchmarks.SCHEMES``). The completion is split at ``</think>``
(``components.verification.split_think``); language metrics look at the reasoning trace, the
verifier at the whole completion, TTC at the whole completion. A scored row holds the row
fields of every metric of the table, each filled by that metric's own scorer
(``components.metrics.registry.row_fields``, over a ``components.metrics.sample.Sample``), the
verdict's ``extracted``/``normalized`` answer, and the row's identity (``source`` only when
given); ``components.metrics.aggregate`` turns them into corpus metrics with their standard
errors. The rules come as the profile's ``ScoringSettings`` section.

Bad input never stops a run: a row that is not JSON, lacks a field, has a field of the wrong
type, an unknown language or a gold that is not a finite number (``NaN``) becomes an entry of
``errors`` naming file, line and field, and every other row is still scored (``bad_rows`` counts
rows, not problems). A row repeating an earlier row's ``(benchmark, id, lang, sample_index)``
is counted once, and a row without ``benchmark`` among rows that name theirs is left out, each
named (``components.scoring_input``, which also reads the file twice, one line at a time, so
completions are never all held). Booleans are JSON
``true``/``false`` only: ``"expected": "false"`` is an error, not a truthy string. A UTF-8
byte-order mark before the first row is skipped. An empty completion is scored as incorrect.

One lingua detector (``BASE_LANGUAGES`` plus the rows' languages) is built per process; each
distinct line, step and trace is detected once, in lingua's parallel batch API.

>>> out = score_rows([{"id": 1, "lang": "en", "gold": "4", "completion": ""}, {"id": 2}],
...                  ScoringSettings(verifier="exact"))
>>> out["rows"][0]["correct"], out["errors"][0]["field"], out["aggregate"]["en"]["accuracy"]
(False, 'lang', 0.0)
"""

from __future__ import annotations

import copy
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import repeat
from pathlib import Path
from typing import Any

from components.data.benchmarks import SCHEMES
from components.language import MemoDetector, get_detector, is_supported
from components.metrics import aggregate
from components.metrics.bootstrap import Bootstrap
from components.metrics.lcpr import get_rule, load_english_words
from components.metrics.problems import Problems, ProblemStream
from components.metrics.slc import step_detector
from components.metrics.sample import Rules, Sample
from components.metrics.registry import QA_HEADLINE, beside_rules, kind_of_rows, macro_fields, metrics, row_fields
from components.settings import ScoringSettings
from components.scoring_input import iter_jsonl_rows, row_error as _error, rows_to_score, survey
from components.verification import get_verifier

SCORE_FIELDS = ("id", "lang", "gold", "completion")
VERIFY_FIELDS = ("id", "lang", "gold", "answer")
_NUMBER_FIELDS = ("id", "gold")  # strings, or numbers turned into strings
_BOOLEAN_FIELDS = ("expected",)  # JSON true/false only
_OPTIONAL: dict[str, tuple[type, int | None]] = {  # field -> (type, smallest value)
    "benchmark": (str, None), "source": (str, None), "sample_index": (int, 0), "max_context": (int, 1), "num_tokens": (int, 0),
}
_CHUNK = 512  # rows detected per lingua batch


def _check_row(row: Any, required: Sequence[str], source: str, line: int) -> list[dict[str, Any]]:
    if not isinstance(row, Mapping):
        return [_error(source, line, None, f"row is a JSON {type(row).__name__}, expected an object")]
    errors = []
    for field in required:
        value = row.get(field)
        if field not in row:
            errors.append(_error(source, line, field, "missing"))
        elif field in _NUMBER_FIELDS and (isinstance(value, bool) or not isinstance(value, (str, int, float))):
            errors.append(_error(source, line, field, f"expected a string or number, got {value!r}"))
        elif field in _NUMBER_FIELDS and isinstance(value, float) and not math.isfinite(value):
            errors.append(_error(source, line, field, f"{value} is not a finite number (not scored as wrong: left out)"))
        elif field not in _NUMBER_FIELDS and not isinstance(value, str):
            errors.append(_error(source, line, field, f"expected a string, got {value!r}"))
    if isinstance(row.get("lang"), str) and not is_supported(row["lang"]):
        errors.append(_error(source, line, "lang", f"unknown language {row['lang']!r} (ISO 639-1 expected)"))
    for field, (kind, smallest) in _OPTIONAL.items():
        value = row.get(field)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, kind):
            errors.append(_error(source, line, field, f"expected {kind.__name__}, got {value!r}"))
        elif smallest is not None and value < smallest:
            errors.append(_error(source, line, field, f"must be at least {smallest}, got {value!r}"))
    answers = row.get("answers")
    if answers is not None and (not isinstance(answers, list) or not all(isinstance(a, str) for a in answers)):
        errors.append(_error(source, line, "answers", f"expected a list of strings, got {answers!r}"))
    for field in _BOOLEAN_FIELDS:
        if field in row and not isinstance(row[field], bool):
            errors.append(_error(source, line, field, f"expected true or false, got {row[field]!r}"))
    return errors


def validate_rows(rows: Sequence[Any], required: Sequence[str], *, source: str = "<rows>",
                  line_numbers: Sequence[int] | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Split rows into valid ones (``id``/``gold`` as strings) and error entries."""
    valid, errors = [], []
    for index, row in enumerate(rows):
        line = line_numbers[index] if line_numbers is not None else index + 1
        row_errors = _check_row(row, required, source, line)
        if row_errors:
            errors.extend(row_errors)
        else:
            valid.append({**row, "id": str(row["id"]), "gold": str(row["gold"])})
    return valid, errors


def read_jsonl_rows(path: str | Path) -> tuple[list[tuple[int, Any]], list[dict[str, Any]]]:
    """``([(line_number, parsed_row), ...], errors)``; blank lines are skipped, bad JSON is an error."""
    rows, errors = [], []
    for number, row, error in iter_jsonl_rows(path):
        if error is None:
            rows.append((number, row))
        else:
            errors.append(error)
    return rows, errors


def _verdict(verify: Any, text: str, row: Mapping[str, Any]) -> dict[str, Any]:
    """The verdict of an answer already extracted (``verify_rows``)."""
    if not text.strip():
        return {"extracted": None, "normalized": None, "correct": False, "fallback": False}
    verdict = verify(text, row["gold"], row["lang"], extract=False)
    return {"extracted": verdict.extracted, "normalized": verdict.normalized, "correct": bool(verdict.correct),
            "fallback": False}


def _score_chunk(rows: Sequence[Mapping[str, Any]], rules: Rules) -> list[dict]:
    samples = [Sample(row, rules) for row in rows]
    rules.detector.prefetch((text for sample in samples for text in sample.detection_texts()), clean=False)
    fields = row_fields(beside=list(rules.beside), kind=rules.kind)
    scored = []
    for sample in samples:
        row = sample.row
        identity = {"id": row["id"], "lang": row["lang"], "benchmark": row.get("benchmark"),
                    **({"source": row["source"]} if row.get("source") is not None else {}),
                    "sample_index": row.get("sample_index")}
        extracted, normalized = sample.extracted()
        scored.append({**identity, "extracted": extracted, "normalized": normalized,
                       **{name: field.score(sample) for name, field in fields.items()}})
    return scored


def _rules(settings: ScoringSettings) -> dict[str, Any]:
    """Everything of ``Rules`` but the detector (a memo per chunk), loaded once per call."""
    rule = get_rule(settings.lcpr_rule)
    beside = {name: get_rule(name) for name in settings.lcpr_beside if name != settings.lcpr_rule}
    needing = [name for name, judge in {settings.lcpr_rule: rule, **beside}.items() if judge.needs_words]
    if needing and settings.words_path is None:
        raise ValueError(f"lcpr_rule={needing[0]!r} needs words_path (the LCB English word list)")
    words = load_english_words(str(settings.words_path)) if needing else None
    return {"verify": get_verifier(settings.verifier), "rule": rule, "words": words, "beside": beside,
            "slc_threshold": settings.slc_threshold, "slc_detector": step_detector(settings.slc_detector),
            "max_context": settings.max_context,
            "extraction": settings.extraction}


def sample_rules(settings: ScoringSettings, rows: Sequence[Mapping[str, Any]]) -> Rules:
    """The rules ``score_rows`` judges valid ``rows`` with, their detector a memo over the rows' languages."""
    detector = MemoDetector(get_detector({row["lang"] for row in rows}))
    return Rules(detector=detector, kind=kind_of_rows(rows, SCHEMES), **_rules(settings))


def score_rows(rows: Sequence[Any], settings: ScoringSettings = ScoringSettings(), *, source: str = "<rows>",
               line_numbers: Sequence[int] | None = None) -> dict[str, Any]:
    """Score generation rows under ``settings``; returns ``{"rows", "aggregate", "groups", "by_benchmark",
    "notes", "errors", "headline"}``.

    Every row gets every row field of the metric table (``components.metrics.registry``), and
    records whether only a lenient fallback finds its answer. ``aggregate`` maps each language
    and ``"overall"`` to its metrics, each with its standard error and n (under the benchmark's
    macro rule, ``components.metrics.aggregate``); ``groups`` holds the means of the
    per-language values over ``in_domain`` / out-of-domain / resource-level groups; ``notes``
    names metrics left ``None`` for lack of samples (pass@k with k above a problem's samples).
    ``max_context`` is used for rows without their own. ``lcpr_beside``: further LCPR rules judged
    on the same completions; rows carry ``line_pass_<rule>``/``word_pass_<rule>`` and the
    aggregates ``lcpr_<rule>``, ``lpr_<rule>``, ``wpr_<rule>``. ``headline`` is the accuracy the
    reports lead with (the section's; ``fem`` for QA rows).
    """
    lines = line_numbers if line_numbers is not None else range(1, len(rows) + 1)
    return _score_numbered(lambda: zip(lines, rows, repeat(None)), settings, source)


RowsSink = Callable[[list[dict[str, Any]]], None]


def _score_numbered(numbered: Callable[[], Iterable[tuple[int, Any, Any]]], settings: ScoringSettings, source: str,
                    rows_to: RowsSink | None = None) -> dict[str, Any]:
    """``score_rows`` over ``numbered()``, an iterable of ``(line, row, read error)`` made anew for each of two
    passes (``components.scoring_input``): rows left out are named in ``errors``, completions are never all held.
    With ``rows_to`` each chunk's scored rows go there as they are judged and the result holds no ``rows``."""
    rules = _rules(settings)
    found = survey(numbered, lambda row, line: _check_row(row, SCORE_FIELDS, source, line), source)
    kind = kind_of_rows(({"benchmark": name} for name in found.benchmarks), SCHEMES)
    detector = get_detector(found.languages)
    scored: list[dict] = []
    stream = None
    for chunk in rows_to_score(numbered(), found.excluded, _CHUNK):  # a memo per chunk keeps memory bounded
        judged = _score_chunk(chunk, Rules(detector=MemoDetector(detector), kind=kind, **rules))
        stream = stream or ProblemStream(metrics(settings.pass_k, beside_rules(judged), kind), found.samples,
                                         keep=sorted(set(macro_fields(SCHEMES).values())))
        for row in judged:
            stream.add(row)
        if rows_to is None:
            scored += judged
        else:
            rows_to(judged)
    problems = stream.problems() if stream is not None else []
    options = {"pass_k": settings.pass_k, "bootstrap": Bootstrap(settings.bootstrap_resamples, settings.bootstrap_seed),
               "schemes": SCHEMES}
    per_lang = aggregate.per_language(problems, **options)
    return {
        **({"rows": scored} if rows_to is None else {}),
        "aggregate": per_lang,
        "groups": aggregate.group_means(problems, settings.in_domain, **options),
        "by_benchmark": _by_benchmark(problems, per_lang, options),
        "notes": aggregate.notes(per_lang),
        "errors": found.errors,
        "headline": QA_HEADLINE if kind == "qa" else settings.headline,
    }


def _by_benchmark(problems: Problems | list, per_lang: dict[str, dict], options: dict[str, Any]) -> dict[str, dict]:
    benchmarks = {item.head.get("benchmark") or "default" for item in getattr(problems, "items", ())}
    if len(benchmarks) == 1:  # the same numbers as per_lang; copied so the tables stay independent
        return {benchmarks.pop(): copy.deepcopy(per_lang)}
    return aggregate.per_benchmark(problems, **options)


def score_file(path: str | Path, settings: ScoringSettings = ScoringSettings(), *,
               rows_to: RowsSink | None = None) -> dict[str, Any]:
    """``score_rows`` over a JSONL file read twice, one line at a time; unparseable lines join ``errors`` with their
    line number. ``rows_to``: a callable given each chunk of scored rows as it is judged, in file order (then the
    result holds no ``rows`` and memory does not grow with the file: the aggregates keep a few numbers per
    problem, ``components.metrics.problems``)."""
    return _score_numbered(lambda: iter_jsonl_rows(path), settings, str(path), rows_to)


def verify_rows(rows: Sequence[Any], verifier: str, *, source: str = "<rows>",
                line_numbers: Sequence[int] | None = None) -> dict[str, Any]:
    """Verify ``{"id","lang","gold","answer"}`` rows (answers already extracted)."""
    verify = get_verifier(verifier)
    valid, errors = validate_rows(rows, VERIFY_FIELDS, source=source, line_numbers=line_numbers)
    scored = [{"id": r["id"], "lang": r["lang"], **_verdict(verify, r["answer"], r),
               **({"expected": r["expected"]} if "expected" in r else {})} for r in valid]
    by_lang: dict[str, list[dict]] = defaultdict(list)
    for row in scored:
        by_lang[row["lang"]].append(row)
    summary = {lang: verdict_summary(group) for lang, group in sorted(by_lang.items())}
    summary["overall"] = verdict_summary(scored)
    fnrs = [v["fnr"] for lang, v in summary.items() if lang != "overall" and v.get("fnr") is not None]
    if len(fnrs) >= 2:
        summary["overall"]["fnr_gap"] = max(fnrs) - min(fnrs)
    return {"rows": scored, "aggregate": summary, "errors": errors}


def verdict_summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Accuracy, and when rows carry the right verdict (``expected``) the verifier's error rates:
    FNR = P(reject | expected correct), FPR = P(accept | expected wrong).

    >>> verdict_summary([{"correct": False, "expected": True}, {"correct": True, "expected": True},
    ...                  {"correct": False, "expected": False}])
    {'accuracy': 0.3333333333333333, 'n_rows': 3, 'fnr': 0.5, 'fpr': 0.0}
    """
    out: dict[str, Any] = {"accuracy": sum(r["correct"] for r in rows) / len(rows) if rows else None,
                           "n_rows": len(rows)}
    labelled = [r for r in rows if "expected" in r]
    if labelled:
        positives = [r for r in labelled if r["expected"]]
        negatives = [r for r in labelled if not r["expected"]]
        out["fnr"] = sum(not r["correct"] for r in positives) / len(positives) if positives else None
        out["fpr"] = sum(r["correct"] for r in negatives) / len(negatives) if negatives else None
    return out


def verify_file(path: str | Path, verifier: str) -> dict[str, Any]:
    """``verify_rows`` over a JSONL file."""
    numbered, read_errors = read_jsonl_rows(path)
    result = verify_rows([row for _, row in numbered], verifier, source=str(path),
                         line_numbers=[number for number, _ in numbered])
    result["errors"] = sorted(read_errors + result["errors"], key=lambda e: e["line"])
    return result


def bad_rows(result: Mapping[str, Any]) -> int:
    """Rows skipped for errors (a row with two bad fields counts once).

    >>> bad_rows({"errors": [{"file": "f", "line": 1}, {"file": "f", "line": 1}, {"file": "f", "line": 3}]})
    2
    """
    return len({(error["file"], error["line"]) for error in result.get("errors", [])})

