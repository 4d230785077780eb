"""Score generation rows: correctness, LCPR, SLC, TTC per row, then corpus metrics per language.

The ``polyreason score`` driver. Rows are ``{"id", "lang", "gold", "completion"}`` plus
optional ``benchmark``, ``source`` (a benchmark's subset, e.g. MMATH's MATH500), ``sample_index``,
``max_context``, ``num_tokens``. The completion is split at ``</think>``
(``components.verification.split_think``); language metrics look at the reasoning trace, the
verifier at the whole completion, TTC at the whole completion. A scored row holds the row
fields the metric table reads (``components.metrics.table.ROW_FIELDS``), the verdict's
``extracted``/``normalized`` answer, and the row's identity (``source`` only when given);
``components.metrics.aggregate`` turns them into corpus metrics.

Bad input never stops a run: a row that is not JSON, lacks a field, has a field of the wrong
type or an unknown language becomes an entry of ``errors`` naming file, line and field, and
every other row is still scored (``bad_rows`` counts rows, not problems). Booleans are JSON
``true``/``false`` only: ``"expected": "false"`` is an error, not a truthy string. A UTF-8
byte-order mark before the first row is skipped. An empty completion is scored as incorrect.

One lingua detector (``BASE_LANGUAGES`` plus the rows' languages) is built per process; each
distinct line, step and trace is detected once, in lingua's parallel batch API.

>>> out = score_rows([{"id": 1, "lang": "en", "gold": "4", "completion": ""}, {"id": 2}],
...                  verifier="exact")
>>> out["rows"][0]["correct"], out["errors"][0]["field"], out["aggregate"]["en"]["accuracy"]
(False, 'lang', 0.0)
"""

from __future__ import annotations

import copy
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from components.extraction import extract
from components.language import MemoDetector, clean_paragraphs, detect_block, get_detector, is_supported
from components.metrics import aggregate
from components.metrics.table import ROW_FIELDS
from components.metrics.lcpr import LCPR_RULES, LcprRule, get_rule, load_english_words
from components.metrics.slc import SLC_THRESHOLD, share_in_language, slc_and_acc, step_units
from components.metrics.ttc import ttc_chars, ttc_tokens
from components.verification import get_verifier, split_think

SCORE_FIELDS = ("id", "lang", "gold", "completion")
VERIFY_FIELDS = ("id", "lang", "gold", "answer")
_NUMBER_FIELDS = ("id", "gold")  # strings, or numbers turned into strings
_BOOLEAN_FIELDS = ("expected",)  # JSON true/false only
_OPTIONAL: dict[str, tuple[type, int | None]] = {  # field -> (type, smallest value)
    "benchmark": (str, None), "source": (str, None), "sample_index": (int, 0), "max_context": (int, 1), "num_tokens": (int, 0),
}
_CHUNK = 512  # rows detected per lingua batch


def _error(source: str, line: int, field: str | None, message: str) -> dict[str, Any]:
    where = f"{source}:{line}" + (f": field '{field}'" if field else "")
    return {"file": source, "line": line, "field": field, "message": f"{where}: {message}"}


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
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                text = raw.decode("utf-8-sig" if number == 1 else "utf-8")  # a byte-order mark is no part of row 1
                if text.strip():
                    rows.append((number, json.loads(text)))
            except UnicodeDecodeError as exc:
                errors.append(_error(str(path), number, None, f"not UTF-8 ({exc.reason})"))
            except json.JSONDecodeError as exc:
                errors.append(_error(str(path), number, None, f"not valid JSON ({exc.msg})"))
    return rows, errors


def _verdict(verify: Any, text: str, row: Mapping[str, Any], extract: bool,
             mode: str = "lenient") -> dict[str, Any]:
    if not text.strip():
        return {"extracted": None, "normalized": None, "correct": False, "fallback": False}
    verdict = verify(text, row["gold"], row["lang"], extract=extract, mode=mode)
    return {"extracted": verdict.extracted, "normalized": verdict.normalized, "correct": bool(verdict.correct),
            "fallback": extract and found_only_by_fallback(text)}


def found_only_by_fallback(text: str) -> bool:
    """Lenient extraction finds an answer where strict extraction finds none.

    >>> found_only_by_fallback("The answer is 18."), found_only_by_fallback("<think>t</think>\\\\boxed{18}")
    (True, False)
    """
    return extract(text, mode="strict").answer is None and extract(text, mode="lenient").answer is not None


def _language_scores(trace: str, lang: str, detector: MemoDetector, rule: LcprRule,
                     words: frozenset[str] | None, units: tuple[str, list[str], list[str]]) -> dict[str, Any]:
    cleaned, lines, steps = units
    return {
        "line_pass": rule.line_pass(lines, lang, detector),
        "word_pass": rule.word_pass(trace, lang, units=lines, words=words, cleaned=cleaned),
        "slc": share_in_language(steps, lang, detector),
        "lang_detected": detect_block(detector, cleaned),
    }


def _ttc(row: Mapping[str, Any], max_context: int | None) -> float | None:
    context = row.get("max_context") or max_context
    if row.get("num_tokens") is None or not context:
        return None
    return ttc_tokens(row["num_tokens"], context)


def _score_chunk(rows: Sequence[Mapping[str, Any]], verify: Any, detector: MemoDetector, rule: LcprRule,
                 words: frozenset[str] | None, slc_threshold: float, max_context: int | None,
                 mode: str = "lenient") -> list[dict]:
    traces = [split_think(row["completion"]).trace for row in rows]
    lcpr_traces = [rule.trace(row["completion"]) for row in rows]  # a reference rule may read it its own way
    units = []
    for row, trace, lcpr_trace in zip(rows, traces, lcpr_traces, strict=True):
        paragraphs = clean_paragraphs(trace)
        cleaned = "\n".join(paragraphs)
        lines = rule.line_units(lcpr_trace, row["lang"], cleaned=cleaned if lcpr_trace == trace else None)
        units.append((cleaned, lines, step_units(trace, cleaned_paragraphs=paragraphs)))
    detector.prefetch((line for _, lines, steps in units for unit in (*lines, *steps) for line in unit.split("\n")),
                      clean=False)
    scored = []
    for row, trace, row_units in zip(rows, lcpr_traces, units, strict=True):
        verdict = _verdict(verify, row["completion"], row, extract=True, mode=mode)
        values = {**verdict, **_language_scores(trace, row["lang"], detector, rule, words, row_units),
                  "ttc": _ttc(row, max_context), "ttc_chars": ttc_chars(row["completion"])}
        values["slc_and_acc"] = slc_and_acc(verdict["correct"], values["slc"], slc_threshold)
        identity = {"id": row["id"], "lang": row["lang"], "benchmark": row.get("benchmark"),
                    **({"source": row["source"]} if row.get("source") is not None else {}),
                    "sample_index": row.get("sample_index")}
        scored.append({**identity, "extracted": verdict["extracted"], "normalized": verdict["normalized"],
                       **{field: values[field] for field in ROW_FIELDS}})
    return scored


def score_rows(rows: Sequence[Any], *, verifier: str = "trusted", lcpr_rule: str = "adamame",
               words_path: str | Path | None = None, slc_threshold: float = SLC_THRESHOLD,
               max_context: int | None = None, pass_k: Sequence[int] = (1,),
               in_domain: Sequence[str] = aggregate.IN_DOMAIN_LANGUAGES, source: str = "<rows>",
               line_numbers: Sequence[int] | None = None, extraction: str = "lenient") -> dict[str, Any]:
    """Score generation rows; returns ``{"rows", "aggregate", "groups", "by_benchmark", "notes", "errors"}``.

    ``extraction``: ``strict`` (the last boxed answer after ``</think>``) or ``lenient``
    (``components.extraction``); every row also records whether only a fallback finds its answer.

    ``aggregate`` maps each language and ``"overall"`` to its metrics (under the benchmark's
    macro rule, ``components.metrics.aggregate``); ``groups`` holds the means of the
    per-language values over ``in_domain`` / out-of-domain / resource-level groups; ``notes``
    names metrics left ``None`` for lack of samples (pass@k with k above a problem's samples).
    ``max_context`` is used for rows without their own. ``words_path`` is required by
    ``lcpr_rule="lcb"``.
    """
    if lcpr_rule not in LCPR_RULES:
        raise ValueError(f"unknown lcpr_rule {lcpr_rule!r}; known: {list(LCPR_RULES)}")
    rule = get_rule(lcpr_rule)
    if rule.needs_words and words_path is None:
        raise ValueError(f"lcpr_rule={lcpr_rule!r} needs words_path (the LCB English word list)")
    words = load_english_words(str(words_path)) if rule.needs_words else None
    verify = get_verifier(verifier)
    valid, errors = validate_rows(rows, SCORE_FIELDS, source=source, line_numbers=line_numbers)
    detector = get_detector({row["lang"] for row in valid})
    scored = []
    for start in range(0, len(valid), _CHUNK):  # a memo per chunk keeps memory bounded
        chunk = valid[start : start + _CHUNK]
        scored += _score_chunk(chunk, verify, MemoDetector(detector), rule, words, slc_threshold, max_context,
                               extraction)
    per_lang = aggregate.per_language(scored, pass_k=pass_k)
    return {
        "rows": scored,
        "aggregate": per_lang,
        "groups": aggregate.group_means(per_lang, in_domain),
        "by_benchmark": _by_benchmark(scored, per_lang, pass_k),
        "notes": aggregate.notes(per_lang),
        "errors": errors,
    }


def _by_benchmark(scored: list[dict], per_lang: dict[str, dict], pass_k: Sequence[int]) -> dict[str, dict]:
    benchmarks = {row["benchmark"] or "default" for row in scored}
    if len(benchmarks) == 1:  # the same numbers as per_lang; copied so the tables stay independent
        return {benchmarks.pop(): copy.deepcopy(per_lang)}
    return aggregate.per_benchmark(scored, pass_k=pass_k)


def score_file(path: str | Path, **options: Any) -> dict[str, Any]:
    """``score_rows`` over a JSONL file; unparseable lines join ``errors`` with their line number."""
    numbered, read_errors = read_jsonl_rows(path)
    result = score_rows([row for _, row in numbered], source=str(path),
                        line_numbers=[number for number, _ in numbered], **options)
    result["errors"] = sorted(read_errors + result["errors"], key=lambda e: e["line"])
    return result


def verify_rows(rows: Sequence[Any], verifier: str, *, source: str = "<rows>",
                line_numbers: Sequence[int] | None = None) -> dict[str, Any]:
    """Verify ``{"id","lang","gold","answer"}`` rows (answers already extracted)."""
    verify = get_verifier(verifier)
    valid, errors = validate_rows(rows, VERIFY_FIELDS, source=source, line_numbers=line_numbers)
    scored = [{"id": r["id"], "lang": r["lang"], **_verdict(verify, r["answer"], r, extract=False),
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


def iter_errors(result: Mapping[str, Any]) -> Iterable[str]:
    """The error messages of a ``score_*``/``verify_*`` result, one per line."""
    return (error["message"] for error in result.get("errors", []))
