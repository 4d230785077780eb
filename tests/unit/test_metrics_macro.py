"""MMATH's macro rule, for every metric, per language, per group and overall, against a hand computation.

The fixture: benchmark ``mmath`` (macro over ``source``), two languages (en, fr), subsets of
unequal size (MATH500: problems m1 m2 m3; AIME2024: problem a1), two samples per problem,
pass@k for k = 1, 2, 3 (3 is more than the samples: None, counted). Each row is
(lang, id, source, correct, line_pass, word_pass, slc, lang_detected, ttc, ttc_chars);
slc_and_acc = correct and slc >= 0.9.
"""

from __future__ import annotations

import pytest

from components.data.benchmarks import SCHEMES  # MMATH's macro rule: its spec's
from components.metrics.aggregate import group_means, notes, per_language
from components.reports.benchmark import benchmark_report

M, A = "MATH500", "AIME2024"
ROWS = [
    # en, MATH500
    ("en", "m1", M, True, True, True, 1.0, "en", 0.1, 0.01),
    ("en", "m1", M, True, True, False, 1.0, "en", 0.2, 0.02),
    ("en", "m2", M, True, False, True, 0.5, "fr", 0.3, 0.03),
    ("en", "m2", M, False, True, True, 1.0, "en", None, 0.04),
    ("en", "m3", M, False, None, None, None, None, 0.1, 0.05),
    ("en", "m3", M, False, True, True, 0.0, "en", 0.3, 0.06),
    # en, AIME2024
    ("en", "a1", A, True, False, True, 1.0, "en", 0.5, 0.1),
    ("en", "a1", A, True, False, False, 0.8, None, 0.7, 0.3),
    # fr, MATH500
    ("fr", "m1", M, False, True, True, 1.0, "fr", 0.2, 0.02),
    ("fr", "m1", M, False, True, True, 1.0, "fr", 0.2, 0.02),
    ("fr", "m2", M, False, True, False, 1.0, "fr", 0.2, 0.02),
    ("fr", "m2", M, True, True, True, 1.0, "fr", 0.2, 0.02),
    ("fr", "m3", M, False, True, True, 0.5, "en", 0.2, 0.02),
    ("fr", "m3", M, False, True, True, 1.0, "fr", 0.2, 0.02),
    # fr, AIME2024: traces with no letter (no line verdict, no SLC, no detected language)
    ("fr", "a1", A, True, None, None, None, None, 0.4, 0.1),
    ("fr", "a1", A, False, None, None, None, None, 0.6, 0.1),
]
FIELDS = ("lang", "id", "source", "correct", "line_pass", "word_pass", "slc", "lang_detected", "ttc", "ttc_chars")


def scored_rows():
    rows = []
    for values in ROWS:
        row = {"benchmark": "mmath", **dict(zip(FIELDS, values, strict=True))}
        row["slc_and_acc"] = row["correct"] and row["slc"] is not None and row["slc"] >= 0.9
        rows.append(row)
    return rows


def lcpr(lpr, wpr):
    return 2 * lpr * wpr / (lpr + wpr)


# Per subset (pooled rows), then the mean over the two subsets.
EN_MATH = {"accuracy": 3 / 6, "pass_at_1": (1 + 1 / 2 + 0) / 3, "pass_at_2": (1 + 1 + 0) / 3,
           "avg_at_2": 3 / 6, "lpr": 4 / 5, "wpr": 3 / 4, "lcpr": lcpr(4 / 5, 3 / 4), "slc": 3.5 / 5,
           "slc_and_acc": 2 / 6, "language_consistency": 4 / 5, "ttc": 1.0 / 5, "ttc_chars": 0.21 / 6}
EN_AIME = {"accuracy": 1.0, "pass_at_1": 1.0, "pass_at_2": 1.0, "avg_at_2": 1.0, "lpr": 0.0, "wpr": None,
           "lcpr": 0.0, "slc": 0.9, "slc_and_acc": 1 / 2, "language_consistency": 1.0, "ttc": 0.6,
           "ttc_chars": 0.2}
FR_MATH = {"accuracy": 1 / 6, "pass_at_1": (0 + 1 / 2 + 0) / 3, "pass_at_2": (0 + 1 + 0) / 3,
           "avg_at_2": 1 / 6, "lpr": 1.0, "wpr": 5 / 6, "lcpr": lcpr(1.0, 5 / 6), "slc": 5.5 / 6,
           "slc_and_acc": 1 / 6, "language_consistency": 5 / 6, "ttc": 0.2, "ttc_chars": 0.02}
FR_AIME = {"accuracy": 1 / 2, "pass_at_1": 1 / 2, "pass_at_2": 1.0, "avg_at_2": 1 / 2, "lpr": None, "wpr": None,
           "lcpr": None, "slc": None, "slc_and_acc": 0.0, "language_consistency": None, "ttc": 0.5,
           "ttc_chars": 0.1}
# overall: each subset pooled over both languages
ALL_MATH = {"accuracy": 4 / 12, "pass_at_1": 2 / 6, "pass_at_2": 3 / 6, "avg_at_2": 4 / 12, "lpr": 10 / 11,
            "wpr": 8 / 10, "lcpr": lcpr(10 / 11, 8 / 10), "slc": 9 / 11, "slc_and_acc": 3 / 12,
            "language_consistency": 9 / 11, "ttc": 2.2 / 11, "ttc_chars": 0.33 / 12}
ALL_AIME = {"accuracy": 3 / 4, "pass_at_1": 3 / 4, "pass_at_2": 1.0, "avg_at_2": 3 / 4, "lpr": 0.0, "wpr": None,
            "lcpr": 0.0, "slc": 0.9, "slc_and_acc": 1 / 4, "language_consistency": 1.0, "ttc": 0.55,
            "ttc_chars": 0.15}


def macro(*subsets):
    """Mean over subsets, a subset with nothing to judge (None) left out."""
    out = {}
    for name in subsets[0]:
        values = [s[name] for s in subsets if s[name] is not None]
        out[name] = sum(values) / len(values) if values else None
    return out


EN, FR, OVERALL = macro(EN_MATH, EN_AIME), macro(FR_MATH, FR_AIME), macro(ALL_MATH, ALL_AIME)


def approx(expected):
    return {k: (None if v is None else pytest.approx(v)) for k, v in expected.items()}


@pytest.fixture(scope="module")
def per_lang():
    return per_language(scored_rows(), pass_k=(1, 2, 3), schemes=SCHEMES)


def test_hand_values_are_what_they_say():
    # spot checks of the hand tables against plain numbers
    assert EN["accuracy"] == 0.75 and FR["accuracy"] == pytest.approx(1 / 3)
    assert EN["lcpr"] == pytest.approx(lcpr(0.8, 0.75) / 2) and FR["lpr"] == 1.0 and EN["wpr"] == 0.75
    assert OVERALL["accuracy"] == pytest.approx(13 / 24) and OVERALL["lpr"] == pytest.approx(5 / 11)


@pytest.mark.parametrize("cell,expected", [("en", EN), ("fr", FR), ("overall", OVERALL)])
def test_every_metric_follows_the_macro_rule(per_lang, cell, expected):
    got = per_lang[cell]
    assert {k: got[k] for k in expected} == approx(expected)
    assert got["pass_at_3"] is None and got["macro_over"] == "source"


@pytest.mark.parametrize("cell,math,aime,n_rows", [("en", EN_MATH, EN_AIME, 8), ("overall", ALL_MATH, ALL_AIME, 16)])
def test_subsets_and_pooled_values(per_lang, cell, math, aime, n_rows):
    got = per_lang[cell]
    assert {k: got["subsets"][M][k] for k in math} == approx(math)
    assert {k: got["subsets"][A][k] for k in aime} == approx(aime)
    assert got["subsets"][M]["n_rows"] == 3 * n_rows // 4 and got["n_rows"] == n_rows
    assert got["pooled"]["accuracy"] == pytest.approx({"en": 5 / 8, "overall": 7 / 16}[cell])


def test_groups_are_means_of_language_values(per_lang):
    groups = group_means(scored_rows(), in_domain=("fr",), pass_k=(1, 2, 3), schemes=SCHEMES)
    assert sorted(groups) == ["all", "high", "in_domain", "out_of_domain"]   # en and fr are both "high"
    both = {k: (EN[k] + FR[k]) / 2 if FR[k] is not None else EN[k] for k in EN}
    assert {k: groups["all"][k] for k in EN} == approx(both)
    assert {k: groups["high"][k] for k in EN} == approx(both)
    assert {k: groups["in_domain"][k] for k in FR} == approx(FR)
    assert {k: groups["out_of_domain"][k] for k in EN} == approx(EN)
    assert groups["in_domain"]["languages"] == ["fr"] and groups["all"]["n_languages"] == 2
    assert groups["all"]["pass_at_3"] is None
    # `all` and `overall` both follow the rule, and differ where metrics are ratios of counts
    assert groups["all"]["lpr"] == pytest.approx(0.7) and per_lang["overall"]["lpr"] == pytest.approx(5 / 11)


def test_too_few_samples_for_pass_at_k_is_counted_not_dropped(per_lang):
    assert [per_lang[c]["n_short_pass_at_3"] for c in ("en", "fr", "overall")] == [4, 4, 8]
    assert "n_short_pass_at_2" not in per_lang["en"]
    assert notes(per_lang) == [f"{cell}: pass_at_3 is None: {n} of {n} problems have fewer than 3 samples"
                               for cell, n in (("en", 4), ("fr", 4), ("overall", 8))]


def test_report_logs_the_same_numbers(per_lang):
    groups = group_means(scored_rows(), in_domain=("fr",), pass_k=(1, 2, 3), schemes=SCHEMES)
    result = {"aggregate": per_lang, "groups": groups}
    metrics = benchmark_report("mmath", result).metrics
    assert metrics["evaluation/mmath/en/accuracy"] == 0.75
    assert metrics["evaluation/mmath/en/slc"] == pytest.approx(EN["slc"])
    assert metrics["evaluation/mmath/en/accuracy_math500"] == 0.5
    assert metrics["evaluation/mmath/en/accuracy_aime2024"] == 1.0
    assert metrics["evaluation/mmath/en/accuracy_micro"] == 5 / 8
    assert metrics["evaluation/mmath/in_domain/accuracy"] == pytest.approx(1 / 3)
    assert metrics["evaluation/mmath/overall/lcpr"] == pytest.approx(OVERALL["lcpr"])
    assert metrics["evaluation/mmath/fr/n_short_pass_at_3"] == 4
    assert "evaluation/mmath/fr/pass_at_3" not in metrics and "evaluation/mmath/fr/wpr_aime2024" not in metrics
    assert not any("@" in k or "&" in k for k in metrics)
