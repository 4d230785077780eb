"""The Math-Verify suite reader of ``bench/conformance_math_verify.py`` on a suite written here.

The suite below is hand-written in the shapes Math-Verify's tests use (a ``compare_strings``
helper with defaults, parametrized rows, an option passed by a row's parameter, a row
computed in Python, an assertion written out, a test calling ``parse``/``verify`` itself, a
test without a gold); the cases, numeric golds, agreements and reasons expected of it are
written by hand.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.append(str(Path(__file__).resolve().parents[2] / "bench"))
from conformance_math_verify import Case, judge_all, read_cases, reason, wilson  # noqa: E402

SUITE = '''
import pytest
from math_verify import parse, verify


def compare_strings(gold, pred, match_types=["latex", "expr"], precision=6, strict=True):
    return 1


@pytest.mark.parametrize("gold,pred,expected", [("$2/3$", "It is 2/3.", 1), ("$18$", "So 19.", 0), (f"{1/4}", "x", 1)])
def test_rows(gold, pred, expected):
    assert compare_strings(gold, pred) == expected


@pytest.mark.parametrize("gold, pred, expected, precision", [("$\\\\frac{1}{3}$", "0.333", 1, 3)])
def test_precision_rows(gold, pred, expected, precision):
    assert compare_strings(gold, pred, precision=precision) == expected


def test_written_out():
    assert compare_strings("$9$", "Answer $ \\n 9 \\n $", match_types=["latex"]) == 0


@pytest.mark.parametrize("gold, pred, result", [("$[0,1)$", "$[0,1)$", 1)])
def test_direct(gold, pred, result):
    assert int(verify(parse(gold), parse(pred))) == result


@pytest.mark.parametrize("pred,expected", [("x", "x")])
def test_no_gold(pred, expected):
    assert pred == expected
'''

LATEX_EXPR = ["latex", "expr"]
EXPECTED_CASES = [
    Case("test_all.py::test_rows[0]", "$2/3$", "It is 2/3.", True, {"match_types": LATEX_EXPR, "precision": 6, "strict": True}),
    Case("test_all.py::test_rows[1]", "$18$", "So 19.", False, {"match_types": LATEX_EXPR, "precision": 6, "strict": True}),
    Case("test_all.py::test_precision_rows[0]", "$\\frac{1}{3}$", "0.333", True,
         {"match_types": LATEX_EXPR, "precision": 3, "strict": True}),
    Case("test_all.py::test_written_out[line 21]", "$9$", "Answer $ \n 9 \n $", False,
         {"match_types": ["latex"], "precision": 6, "strict": True}),
    Case("test_all.py::test_direct[0]", "$[0,1)$", "$[0,1)$", True, {"mode": "default"}),
]


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("math-verify")
    (folder / "tests").mkdir()
    (folder / "tests" / "test_all.py").write_text(SUITE, encoding="utf-8")
    return folder


def test_reads_every_literal_case_with_its_options(checkout):
    cases, not_literal = read_cases(checkout)
    assert not_literal == 1  # the f-string row
    assert [(c.source, c.gold, c.pred, c.expected, c.options) for c in cases] == [
        (c.source, c.gold, c.pred, c.expected, c.options) for c in EXPECTED_CASES]


def test_a_folder_without_tests_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a Math-Verify checkout"):
        read_cases(tmp_path)


def test_agreement_by_hand(checkout):
    cases, _ = read_cases(checkout)
    table = judge_all(cases, ["exact", "trusted"])
    # numeric golds: 2/3, 18, 1/3, 9 (not the interval [0,1))
    assert {name: (row["numeric_gold"]["agree"], row["numeric_gold"]["n"]) for name, row in table.items()} == {
        "upstream": (4, 4),  # Math-Verify meets the expectations written above
        "exact": (2, 4),  # rejects everything: right on 18 and 9, wrong on 2/3 and 1/3
        "trusted": (2, 4),  # 2/3 and 18 right; 0.333 is not 1/3 at 6 places; 9 over lines accepted
    }
    assert table["exact"]["all"] == {"agreement": 0.6, "agree": 3, "n": 5}  # the interval: exact strings
    misses = {m["case"]: m["reason"] for m in table["trusted"]["misses"]}
    assert set(misses) == {"test_all.py::test_precision_rows[0]", "test_all.py::test_written_out[line 21]"}
    assert "precision=3" in misses["test_all.py::test_precision_rows[0]"]
    assert "broken over lines" in misses["test_all.py::test_written_out[line 21]"]


REASONS = [
    # (case, verdict, expected start of the reason or None)
    (Case("a", "$\\frac{1}{3}$", "0.333", True, {"precision": 3}), False, "the test sets precision=3"),
    (Case("b", "$\\frac{1}{3}$", "0.333333", False, {"precision": 9}), True, "the test sets precision=9"),
    (Case("c", "$9$", "Answer \\( \n 9 \n \\)", False, {}), True, "inline math broken over lines"),
    (Case("d", "$9$", "Answer $9$ and 8", False, {}), True, None),
    (Case("e", "$2/3$", "It is 2/3.", True, {}), False, None),
]


@pytest.mark.parametrize("case,verdict,expected", REASONS, ids=[r[0].source for r in REASONS])
def test_reasons(case, verdict, expected):
    found = reason(case, verdict)
    assert (found or "").startswith(expected or "") and (found is None) == (expected is None)


def test_wilson_interval_by_hand():
    # 8 of 10: p = 0.8, z = 1.96: (p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n) = [0.4902, 0.9433]
    assert wilson(8, 10) == pytest.approx([0.4902, 0.9433], abs=1e-4)
