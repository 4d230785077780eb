"""One row's LCPR verdict line by line: what ``polyreason score --explain ID`` prints.

Every row of a scoring file whose ``id`` is ID is judged as ``components.scoring`` judges it (the same
rules, detector and LCPR rule: ``scoring.sample_rules``), and each line the rule checks is listed in order
with its verdict (``components.metrics.lcpr_lines``): the residue judged (the line after cleaning), the
language lingua reads in it and its margin, the residue's size in words and in zh/ja/th characters, and
``pass``, ``fail`` or ``undecided`` with the reason; then the row's line level, word level and failing
lines, as its scored row carries them. A row of another id is never judged (nor its bad fields reported).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from components.metrics.sample import Sample
from components.scoring import SCORE_FIELDS, sample_rules, validate_rows
from components.scoring_input import iter_jsonl_rows
from components.settings import ScoringSettings


def explain_row(sample: Sample) -> dict[str, Any]:
    """One row's identity, its line- and word-level verdicts, and every checked line with its verdict."""
    row = sample.row
    return {"id": row["id"], "lang": row["lang"], "benchmark": row.get("benchmark"),
            "sample_index": row.get("sample_index"), "line_pass": sample.line_pass(),
            "word_pass": sample.word_pass(), "lines": [verdict.as_row() for verdict in sample.line_verdicts],
            "failed_lines": sample.failed_lines()}


def explain_file(path: str | Path, row_id: str, settings: ScoringSettings = ScoringSettings()) -> dict[str, Any]:
    """``{"id", "rule", "rows", "errors"}``: every row of ``path`` whose id is ``row_id``, explained (the file is
    read one line at a time and only those rows are kept)."""
    matching, errors = [], []
    for number, row, error in iter_jsonl_rows(path):
        if error is not None:
            errors.append(error)
        elif isinstance(row, Mapping) and str(row.get("id")) == row_id:
            matching.append((number, row))
    valid, invalid = validate_rows([row for _, row in matching], SCORE_FIELDS, source=str(path),
                                   line_numbers=[number for number, _ in matching])
    rules = sample_rules(settings, valid) if valid else None
    return {"id": row_id, "rule": settings.lcpr_rule, "rows": [explain_row(Sample(row, rules)) for row in valid],
            "errors": [*errors, *invalid]}
