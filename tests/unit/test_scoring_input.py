"""Input rows of ``polyreason score``/``verify``: strict booleans, a byte-order mark, rows counted once."""

from __future__ import annotations

import json

import pytest

from components.scoring import bad_rows, score_file, verify_file, verify_rows
from components.settings import ScoringSettings


@pytest.mark.parametrize(
    ("expected", "error"),
    [
        (True, None),
        (False, None),
        ("false", "expected true or false, got 'false'"),
        ("no", "expected true or false, got 'no'"),
        (0, "expected true or false, got 0"),
        (None, "expected true or false, got None"),
    ],
)
def test_expected_must_be_a_json_boolean(expected, error):
    result = verify_rows([{"id": 1, "lang": "en", "gold": "5", "answer": "6", "expected": expected}], "exact")
    if error is None:
        assert result["errors"] == [] and result["rows"][0]["expected"] is expected
    else:
        assert result["rows"] == [] and result["errors"][0]["field"] == "expected"
        assert error in result["errors"][0]["message"]


def test_false_negatives_count_only_rows_labelled_true():
    rows = [{"id": 1, "lang": "en", "gold": "5", "answer": "5", "expected": "false"},
            {"id": 2, "lang": "en", "gold": "5", "answer": "6", "expected": False},
            {"id": 3, "lang": "en", "gold": "5", "answer": "5", "expected": True}]
    summary = verify_rows(rows, "exact")["aggregate"]["overall"]
    assert (summary["n_rows"], summary["fnr"], summary["fpr"]) == (2, 0.0, 0.0)


def test_a_byte_order_mark_before_the_first_row_is_skipped(tmp_path):
    path = tmp_path / "bom.jsonl"
    rows = [{"id": 1, "lang": "en", "gold": "4", "answer": "4"}, {"id": 2, "lang": "en", "gold": "4", "answer": "5"}]
    path.write_bytes(b"\xef\xbb\xbf" + "".join(json.dumps(r) + "\n" for r in rows).encode())
    result = verify_file(path, "exact")
    assert result["errors"] == [] and [r["correct"] for r in result["rows"]] == [True, False]


def test_bad_rows_are_counted_once_however_many_fields_are_wrong(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join([json.dumps({"id": 1, "lang": "xx", "gold": 5}),   # two problems
                               "not json",                                          # one
                               json.dumps({"id": 3, "lang": "en", "gold": 5, "completion": "\\boxed{5}"})]) + "\n")
    result = score_file(path, ScoringSettings(verifier="exact"))
    assert len(result["errors"]) == 3 and bad_rows(result) == 2 and len(result["rows"]) == 1
