"""The scoring driver: per-row scores, aggregation, bad input, empty completions, verify rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.scoring import read_jsonl_rows, score_file, score_rows, verify_file
from components.settings import ScoringSettings

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "score_example.jsonl"
NUMERIC = ScoringSettings(verifier="numeric")
ROW_FIELDS = {"id", "lang", "benchmark", "sample_index", "extracted", "normalized", "correct", "line_pass",
              "failed_lines", "word_pass", "slc", "lang_detected", "slc_and_acc", "ttc", "ttc_chars", "fallback"}


def completion(trace: str, answer: str) -> str:
    return f"<think>\n{trace}\n</think>\n\nLa réponse est \\boxed{{{answer}}}."


FR_TRACE = "Calculons d'abord le nombre total de pommes.\n\nIl reste $10 - 4 = 6$ pommes.\n\nDonc il en reste six."


@pytest.fixture(scope="module")
def example():
    return score_file(EXAMPLE, ScoringSettings(verifier="trusted", pass_k=[1, 2]))


def _row(result, lang, pid, sample):
    return next(r for r in result["rows"] if (r["lang"], r["id"], r["sample_index"]) == (lang, pid, sample))


def test_example_file_scores_cleanly(example):
    assert example["errors"] == []
    assert len(example["rows"]) == 16
    assert all(set(row) == ROW_FIELDS for row in example["rows"])
    assert sorted(example["aggregate"]) == ["en", "fr", "ja", "overall", "pt", "th", "zh"]
    assert set(example["groups"]) == {"all", "in_domain", "out_of_domain", "low", "mid", "high"}
    assert example["groups"]["in_domain"]["languages"] == ["fr", "ja", "pt", "th"]   # the default in-domain set
    assert list(example["by_benchmark"]) == ["mgsm"]
    json.dumps(example)  # plain JSON types only


@pytest.mark.parametrize("lang,pid,sample,expected", [
    ("en", "mgsm-0000", 0, {"correct": True, "line_pass": True, "word_pass": True, "slc": 1.0, "slc_and_acc": True}),
    ("fr", "mgsm-0000", 1, {"correct": True, "line_pass": False, "word_pass": True, "lang_detected": "fr",
                            "slc_and_acc": False,
                            "failed_lines": [{"line": "Wait, let me recompute the remaining eggs first.",
                                              "detected": "en"}]}),
    ("pt", "mgsm-0000", 1, {"correct": False, "extracted": "20", "line_pass": True, "slc_and_acc": False}),
    ("ja", "mgsm-0000", 1, {"correct": True, "line_pass": False, "word_pass": False,
                            "failed_lines": [{"line": "So she has eggs left after breakfast and baking.",
                                              "detected": "en"}]}),
    ("en", "mgsm-0000", 1, {"line_pass": True, "failed_lines": None}),   # only a failing row carries lines
    ("zh", "mgsm-0000", 1, {"correct": True, "line_pass": True, "word_pass": False, "slc_and_acc": True}),
    ("th", "mgsm-0000", 1, {"correct": False, "extracted": None, "line_pass": None, "word_pass": None, "slc": None,
                            "lang_detected": None, "slc_and_acc": False, "ttc": 0.0, "ttc_chars": 0.0}),
])
def test_example_rows(example, lang, pid, sample, expected):
    row = _row(example, lang, pid, sample)
    assert {key: row[key] for key in expected} == expected


def test_example_aggregate(example):
    fr, th = example["aggregate"]["fr"], example["aggregate"]["th"]
    assert fr["accuracy"] == 1.0 and fr["lpr"] == pytest.approx(2 / 3) and fr["n_problems"] == 2
    assert th["pass_at_1"] == 0.5 and th["pass_at_2"] == 1.0 and th["avg_at_2"] == 0.5
    assert fr["pass_at_2"] is None and fr["n_short_pass_at_2"] == 1   # mgsm-0001 has one French sample
    assert "fr: pass_at_2 is None: 1 of 2 problems have fewer than 2 samples" in example["notes"]
    tables = [*example["aggregate"].values(), *example["groups"].values()]
    keys = [key for table in tables for key in table]
    assert not any("@" in key or "&" in key for key in keys)


def test_in_domain_decides_the_groups():
    rows = [{"id": "q", "lang": lang, "gold": "6", "completion": completion(FR_TRACE, answer)}
            for lang, answer in (("fr", "6"), ("ja", "6"), ("en", "5"), ("th", "5"))]
    groups = score_rows(rows, ScoringSettings(verifier="numeric", in_domain=["fr", "ja"]))["groups"]
    assert groups["in_domain"]["languages"] == ["fr", "ja"] and groups["in_domain"]["accuracy"] == 1.0
    assert groups["out_of_domain"]["languages"] == ["en", "th"] and groups["out_of_domain"]["accuracy"] == 0.0


def test_source_is_carried_and_mmath_is_macro_averaged():
    rows = [{"id": pid, "lang": "fr", "gold": "6", "benchmark": "mmath", "source": source, "sample_index": 0,
             "completion": completion(FR_TRACE, answer)}
            for pid, source, answer in (("1", "MATH500", "6"), ("2", "MATH500", "6"), ("3", "MATH500", "5"),
                                        ("4", "AIME2024", "5"))]
    result = score_rows(rows, NUMERIC)
    assert [row["source"] for row in result["rows"]] == ["MATH500"] * 3 + ["AIME2024"]
    fr = result["aggregate"]["fr"]
    assert fr["accuracy"] == pytest.approx((2 / 3 + 0) / 2) and fr["pooled"]["accuracy"] == 0.5
    assert result["by_benchmark"]["mmath"]["fr"]["accuracy"] == fr["accuracy"]


def test_bad_rows_are_reported_and_others_scored(tmp_path):
    good = {"id": "q1", "lang": "fr", "gold": "6", "completion": completion(FR_TRACE, "6")}
    lines = [
        json.dumps(good),
        "{not json",
        json.dumps({"id": "q2", "lang": "fr", "gold": "6"}),
        "",
        json.dumps({**good, "id": "q3", "lang": "xx"}),
        json.dumps({**good, "id": "q4", "completion": 5}),
        json.dumps([1, 2]),
        json.dumps({**good, "id": "q5", "num_tokens": "many"}),
        json.dumps({**good, "id": 6, "gold": 6}),
        json.dumps({**good, "id": "q7", "max_context": 0}),
        json.dumps({**good, "id": "q8", "gold": None}),
    ]
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = score_file(path, NUMERIC)
    found = [(e["line"], e["field"]) for e in result["errors"]]
    assert found == [(2, None), (3, "completion"), (5, "lang"), (6, "completion"), (7, None), (8, "num_tokens"),
                     (10, "max_context"), (11, "gold")]
    assert all(e["file"] == str(path) and e["message"].startswith(f"{path}:{e['line']}") for e in result["errors"])
    assert "'xx'" in result["errors"][2]["message"]
    assert [(r["id"], r["correct"]) for r in result["rows"]] == [("q1", True), ("6", True)]


def test_read_jsonl_rows_keeps_line_numbers(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_bytes('{"a": 1}\n\n[1]\noops\n{"b": "\xff"}\n{"c": "é"}'.encode().replace(b"\xc3\xbf", b"\xff"))
    rows, errors = read_jsonl_rows(path)
    assert rows == [(1, {"a": 1}), (3, [1]), (6, {"c": "é"})]
    assert [(e["line"], e["field"]) for e in errors] == [(4, None), (5, None)]
    assert "not UTF-8" in errors[1]["message"]


@pytest.mark.parametrize("text", ["", "   ", "<think></think>"])
def test_empty_completion_is_incorrect(text):
    result = score_rows([{"id": "e", "lang": "pt", "gold": "3", "completion": text}], NUMERIC)
    row = result["rows"][0]
    assert row["correct"] is False and row["slc_and_acc"] is False and row["line_pass"] is None
    assert result["aggregate"]["pt"]["accuracy"] == 0.0 and result["errors"] == []


def test_no_valid_rows():
    result = score_rows([{"id": "x"}], ScoringSettings(verifier="exact"))
    assert result["rows"] == [] and result["aggregate"] == {"overall": {"n_rows": 0, "n_problems": 0}}
    assert [e["field"] for e in result["errors"]] == ["lang", "gold", "completion"]


def test_ttc_uses_row_or_default_max_context():
    rows = [{"id": "a", "lang": "fr", "gold": "6", "completion": completion(FR_TRACE, "6"), "num_tokens": 1024},
            {"id": "b", "lang": "fr", "gold": "6", "completion": completion(FR_TRACE, "6"), "num_tokens": 1024,
             "max_context": 2048},
            {"id": "c", "lang": "fr", "gold": "6", "completion": completion(FR_TRACE, "6")}]
    scored = score_rows(rows, ScoringSettings(verifier="numeric", max_context=4096))["rows"]
    assert [r["ttc"] for r in scored] == [0.25, 0.5, None]
    assert score_rows(rows[:1], NUMERIC)["rows"][0]["ttc"] == 1024 / 8192   # the section's default context


def test_lcb_rule(shared_data):
    rows = [{"id": "a", "lang": "fr", "gold": "6", "completion": completion(FR_TRACE, "6")}]
    with pytest.raises(ValueError, match="words_path"):
        score_rows(rows, ScoringSettings.model_construct(verifier="numeric", lcpr_rule="lcb", words_path=None))
    words = shared_data / "language_confusion" / "words"
    result = score_rows(rows, ScoringSettings(verifier="numeric", lcpr_rule="lcb", words_path=str(words)))
    assert result["rows"][0]["word_pass"] is None            # no word level for Latin-script languages
    assert result["aggregate"]["fr"]["lcpr"] == result["aggregate"]["fr"]["lpr"]


def test_unknown_verifier_or_rule():
    with pytest.raises(ValueError, match="numeric"):
        ScoringSettings(verifier="nope")
    with pytest.raises(ValueError, match="adamame"):
        ScoringSettings(verifier="exact", lcpr_rule="fasttext")


def test_verify_file(tmp_path):
    rows = [{"id": "1", "lang": "fr", "gold": "1234,5", "answer": "1 234,5"},
            {"id": "2", "lang": "ja", "gold": "18", "answer": "１８個"},
            {"id": "3", "lang": "ja", "gold": "18", "answer": "19"},
            {"id": "4", "lang": "ja", "gold": "18", "answer": ""},
            {"id": "5", "lang": "ja", "gold": "18"}]
    path = tmp_path / "answers.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")
    result = verify_file(path, "numeric")
    assert [(r["id"], r["correct"]) for r in result["rows"]] == [("1", True), ("2", True), ("3", False), ("4", False)]
    assert result["rows"][0]["normalized"] is not None
    assert result["aggregate"]["ja"] == {"accuracy": pytest.approx(1 / 3), "n_rows": 3}
    assert result["aggregate"]["overall"]["accuracy"] == 0.5
    assert [(e["line"], e["field"]) for e in result["errors"]] == [(5, "answer")]


def test_verify_reports_fnr_per_language_when_rows_carry_the_right_verdict():
    from pathlib import Path

    from components.scoring import verify_file

    cases = Path(__file__).resolve().parents[2] / "examples" / "verify_cases.jsonl"
    trusted = verify_file(cases, "trusted")["aggregate"]
    exact = verify_file(cases, "exact")["aggregate"]
    assert {v["fnr"] for v in trusted.values()} == {0.0} and trusted["overall"]["fpr"] == 0.0
    assert exact["overall"]["fnr_gap"] > 0
    assert exact["ja"]["fnr"] > exact["en"]["fnr"]


# ---------------------------------------------------------------- strict and lenient extraction

EXTRACTION_ROWS = [  # (completion, correct when strict, correct when lenient, found only by a fallback)
    ("<think>\n16 - 3 = 13\n</think>\n\n\\boxed{13}", True, True, False),
    ("<think>\n16 - 3 = 13\n</think>\n\nThe answer is 13.", False, True, True),   # a phrase
    ("<think>\n16 - 3 = 13\n</think>\n\nSo 13 eggs remain.", False, True, True),  # the last number
    ("<think>\nLet me see: 16 - 3 = \\boxed{13}", False, True, True),           # truncated: no </think>
    ("<think>\n16 - 3 = 13\n</think>\n\nI am not sure how many\neggs are left.", False, False, False),  # none
]


@pytest.mark.parametrize("mode", ["strict", "lenient"])
def test_extraction_mode_and_the_fallback_share_per_language(mode):
    rows = [{"id": str(i), "lang": "en", "gold": "13", "completion": text}
            for i, (text, *_) in enumerate(EXTRACTION_ROWS)]
    result = score_rows(rows, ScoringSettings(verifier="trusted", extraction=mode))
    expected = [strict if mode == "strict" else lenient for _, strict, lenient, _ in EXTRACTION_ROWS]
    assert [row["correct"] for row in result["rows"]] == expected
    assert [row["fallback"] for row in result["rows"]] == [case[3] for case in EXTRACTION_ROWS]
    assert result["aggregate"]["en"]["fallback_share"] == pytest.approx(3 / 5)  # the same in both modes
