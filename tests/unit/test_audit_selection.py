"""Cross-lingual selection on a hand-computed example (local majority, aggregation, oracle)."""

from __future__ import annotations

import pytest

from components.audit.diagnostics import Judgement
from components.audit.selection import choices, gap_recovered, selection_report

GOLD = {"p1": "7", "p2": "10", "p3": "4"}
SAMPLES = {  # (problem, lang): answers by sample_index (None = no answer extracted)
    ("p1", "en"): ["7", "7", "5"],
    ("p1", "ja"): ["5", "5", "7"],
    ("p1", "zh"): ["7", "3", "7"],
    ("p2", "en"): ["10", "12", None],
    ("p2", "ja"): ["12", "12", "12"],
    ("p2", "zh"): ["12", "10", "10"],
    ("p3", "en"): ["4", "4"],
    ("p3", "ja"): ["9", "4"],
}


def _judgements() -> list[Judgement]:
    out, row = [], 0
    for (problem, lang), answers in SAMPLES.items():
        for index, answer in enumerate(answers):
            out.append(Judgement(row, problem, lang, answer == GOLD[problem], {}, index, answer))
            row += 1
    return out


def test_choices_by_hand():
    got = {(c.problem, c.lang): (c.local, c.aggregated, c.oracle, c.cross_lingual) for c in choices(_judgements())}
    assert got == {
        # p1 support across languages: 7 -> 5 samples, 5 -> 3, 3 -> 1
        ("p1", "en"): ("7", "7", True, False),
        ("p1", "ja"): ("5", "7", True, True),  # repair: 7 has 1 sample in ja vs 2 for 5
        ("p1", "zh"): ("7", "7", True, False),
        # p2 support: 12 -> 5, 10 -> 3; en ties 10/12 locally, first sample wins (10)
        ("p2", "en"): ("10", "12", True, False),
        ("p2", "ja"): ("12", "12", False, False),
        ("p2", "zh"): ("10", "12", True, True),
        # p3 support: 4 -> 3, 9 -> 1; ja ties 9/4 locally, first sample wins (9)
        ("p3", "en"): ("4", "4", True, False),
        ("p3", "ja"): ("9", "4", True, False),  # repair of a local tie: no cross-lingual need
    }


def test_never_borrows_an_answer_the_target_did_not_produce():
    # p2 in ja: 10 has cross-lingual support 3 but ja never wrote it
    (choice,) = [c for c in choices(_judgements()) if (c.problem, c.lang) == ("p2", "ja")]
    assert choice.aggregated == "12" and not choice.aggregated_correct


def test_selection_report_by_hand():
    report = selection_report(_judgements())
    assert report["en"] == {
        "problems": 3, "local_majority": 1.0, "aggregated": pytest.approx(2 / 3), "oracle": 1.0,
        "gap_recovered": None, "repairs": 0, "repairs_cross_lingual": 0, "repairs_cross_lingual_share": None,
        "harms": 1,
    }
    assert report["ja"] == {
        "problems": 3, "local_majority": 0.0, "aggregated": pytest.approx(2 / 3), "oracle": pytest.approx(2 / 3),
        "gap_recovered": pytest.approx(1.0), "repairs": 2, "repairs_cross_lingual": 1,
        "repairs_cross_lingual_share": 0.5, "harms": 0,
    }
    assert report["zh"] == {
        "problems": 2, "local_majority": 1.0, "aggregated": 0.5, "oracle": 1.0,
        "gap_recovered": None, "repairs": 0, "repairs_cross_lingual": 0, "repairs_cross_lingual_share": None,
        "harms": 1,
    }
    # means over languages: local 2/3, aggregated (2/3 + 2/3 + 1/2) / 3 = 11/18, oracle 8/9
    mean = report["mean"]
    assert mean["local_majority"] == pytest.approx(2 / 3)
    assert mean["aggregated"] == pytest.approx(11 / 18)
    assert mean["oracle"] == pytest.approx(8 / 9)
    assert mean["gap_recovered"] == pytest.approx((11 / 18 - 12 / 18) / (16 / 18 - 12 / 18))  # -0.25
    assert (mean["problems"], mean["repairs"], mean["repairs_cross_lingual"], mean["harms"]) == (8, 2, 1, 2)
    assert mean["repairs_cross_lingual_share"] == 0.5  # 1 of the 2 repairs (both in ja) needed other languages


def test_no_extracted_answer_counts_as_wrong():
    items = [Judgement(0, "p", "th", False, {}, 0, None), Judgement(1, "p", "th", False, {}, 1, None)]
    assert selection_report(items)["th"]["local_majority"] == 0.0
    assert selection_report(items)["th"]["oracle"] == 0.0


@pytest.mark.parametrize(("local", "agg", "oracle", "expected"),
                         [(0.5, 0.75, 1.0, 0.5), (0.2, 0.2, 0.6, 0.0), (0.4, 0.4, 0.4, None)])
def test_gap_recovered(local, agg, oracle, expected):
    assert gap_recovered(local, agg, oracle) == (pytest.approx(expected) if expected is not None else None)
