"""Input rows of ``polyreason score``/``verify``: strict booleans, a byte-order mark, rows counted once."""

from __future__ import annotations

import json

import pytest

from components.scoring import bad_rows, score_file, score_rows, verify_file, verify_rows
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


NUMERIC = ScoringSettings(verifier="numeric")


def _row(ident, correct=True, **extra):
    return {"id": ident, "lang": "en", "gold": "4", "completion": "\\boxed{4}" if correct else "\\boxed{5}", **extra}


def _write(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_a_repeated_sample_is_counted_once_and_named(tmp_path):
    """Three right answers, then five wrong rows repeating the first's (benchmark, id, lang, sample_index): the
    accuracy was 3/8 = 0.375; the repeats are named and the first counted once, 3/3."""
    first = dict(benchmark="mgsm", sample_index=0)
    rows = [_row(i, **first) for i in "abc"] + [_row("a", correct=False, **first)] * 5
    result = score_file(_write(tmp_path / "rows.jsonl", rows), NUMERIC)
    assert (result["aggregate"]["en"]["accuracy"], result["aggregate"]["en"]["accuracy_n"]) == (1.0, 3)
    assert [(e["line"], e["field"]) for e in result["errors"]] == [(line, "sample_index") for line in range(4, 9)]
    assert result["errors"][0]["message"].endswith("rows.jsonl:4: field 'sample_index': repeats line 1 (the same "
                                                   "benchmark, id, lang and sample_index): counted once, as line 1")
    assert bad_rows(result) == 5


def test_the_same_sample_index_in_two_benchmarks_or_languages_is_no_repeat():
    rows = [_row("a", benchmark="mgsm", sample_index=0), _row("a", benchmark="msvamp", sample_index=0),
            {**_row("a", benchmark="mgsm", sample_index=0), "lang": "fr"}, _row("a", benchmark="mgsm", sample_index=1)]
    assert score_rows(rows, NUMERIC)["errors"] == []


def test_rows_without_sample_index_stay_samples_in_file_order():
    result = score_rows([_row("a"), _row("a", correct=False)], ScoringSettings(verifier="numeric", pass_k=[1, 2]))
    assert result["errors"] == []
    assert (result["aggregate"]["en"]["accuracy"], result["aggregate"]["en"]["pass_at_2"]) == (0.5, 1.0)


def test_a_row_without_benchmark_among_named_ones_is_left_out_and_named(tmp_path):
    """Seven of eight mgsm rows right (0.875) and one wrong row without benchmark: averaged as a benchmark of its
    own it halved the overall accuracy (0.4375); now it is named and left out."""
    rows = [_row(i, correct=i > 0, benchmark="mgsm", sample_index=0) for i in range(8)] + [_row("z", correct=False)]
    result = score_file(_write(tmp_path / "rows.jsonl", rows), NUMERIC)
    assert result["aggregate"]["overall"]["accuracy"] == 0.875
    assert list(result["by_benchmark"]) == ["mgsm"]
    assert [e["message"].split("rows.jsonl:")[1] for e in result["errors"]] == [
        "9: field 'benchmark': missing while the file's other rows name theirs (mgsm): left out rather than averaged "
        "as a benchmark of its own"]


def test_a_file_where_no_row_names_its_benchmark_is_scored_whole():
    result = score_rows([_row("a"), _row("b", correct=False)], NUMERIC)
    assert result["errors"] == [] and result["aggregate"]["overall"]["accuracy"] == 0.5


@pytest.mark.parametrize("gold, shown", [(float("nan"), "nan"), (float("inf"), "inf"), (float("-inf"), "-inf")])
def test_a_gold_that_is_not_a_finite_number_is_named_not_scored_as_wrong(tmp_path, gold, shown):
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({**_row("a"), "gold": gold}) + "\n" + json.dumps(_row("b")) + "\n", encoding="utf-8")
    result = score_file(path, NUMERIC)
    assert (result["aggregate"]["en"]["accuracy"], result["aggregate"]["en"]["n_rows"]) == (1.0, 1)
    assert [e["message"] for e in result["errors"]] == [
        f"{path}:1: field 'gold': {shown} is not a finite number (not scored as wrong: left out)"]
