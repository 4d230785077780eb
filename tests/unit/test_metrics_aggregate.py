"""Corpus aggregation: pass@k over grouped samples, LPR/WPR/LCPR, groups, benchmarks, macro rules."""

from __future__ import annotations

import pytest

from components.data.benchmarks import SCHEMES  # MMATH's macro rule: its spec's
from components.metrics.aggregate import (
    group_means,
    language_groups,
    per_benchmark,
    per_language,
    summarize,
)


def row(lang, pid, correct, *, bench="mgsm", line=True, word=True, slc=1.0, detected="same", ttc=None, chars=0.01):
    return {"lang": lang, "id": pid, "benchmark": bench, "correct": correct, "line_pass": line, "word_pass": word,
            "slc": slc, "slc_and_acc": correct and slc is not None and slc >= 0.9,
            "lang_detected": lang if detected == "same" else detected, "ttc": ttc, "ttc_chars": chars}


# problem a: 4 samples, 1 correct; problem b: 4 samples, 3 correct
FR_ROWS = [row("fr", "a", c) for c in (True, False, False, False)] + [
    row("fr", "b", c) for c in (True, True, True, False)]


def test_pass_at_k_groups_samples_by_problem():
    s = summarize(FR_ROWS, pass_k=(1, 2, 4, 8))
    assert s["accuracy"] == pytest.approx(0.5)
    assert s["pass_at_1"] == pytest.approx((1 / 4 + 3 / 4) / 2)
    assert s["pass_at_2"] == pytest.approx(((1 - 3 / 6) + 1.0) / 2)  # a: 1 - C(3,2)/C(4,2); b: n-c < k
    assert s["pass_at_4"] == pytest.approx(1.0)
    assert s["pass_at_8"] is None and s["n_short_pass_at_8"] == 2     # fewer than 8 samples: counted, not dropped
    assert "n_short_pass_at_4" not in s
    assert s["avg_at_4"] == pytest.approx(0.5)
    assert s["n_rows"] == 8 and s["n_problems"] == 2


@pytest.mark.parametrize("rows", [
    [row("fr", "a", True, bench="mgsm"), row("fr", "a", False, bench="msvamp")],
    [row("fr", "a", True), row("en", "a", False)],   # ids are shared across languages
])
def test_problem_is_benchmark_language_and_id(rows):
    s = summarize(rows, pass_k=(1, 2))
    assert s["n_problems"] == 2 and s["avg_at_1"] == 0.5 and s["pass_at_1"] == 0.5
    assert s["pass_at_2"] is None and s["n_short_pass_at_2"] == 2


def test_mixed_sample_counts_use_avg_at_n():
    s = summarize([row("fr", "a", True), row("fr", "a", False), row("fr", "b", True)], pass_k=(1, 2))
    assert s["avg_at_n"] == pytest.approx((0.5 + 1.0) / 2)
    assert s["pass_at_2"] is None and s["n_short_pass_at_2"] == 1 and s["pass_at_1"] == pytest.approx(0.75)


@pytest.mark.parametrize("lines,words,lpr,wpr,lcpr", [
    # AdaMame C.3: WPR is computed over traces that pass the line level
    ([True, True, False, False], [True, False, False, True], 0.5, 0.5, 0.5),
    ([True, True, True, True], [True, True, True, False], 1.0, 0.75, 2 * 0.75 / 1.75),
    ([False, False], [True, True], 0.0, None, 0.0),
    ([True, None], [None, None], 1.0, None, 1.0),            # no word level (lcb rule, Latin script)
    ([None, None], [None, None], None, None, None),          # nothing to judge
])
def test_line_and_word_rates(lines, words, lpr, wpr, lcpr):
    rows = [row("ja", str(i), True, line=ln, word=wd) for i, (ln, wd) in enumerate(zip(lines, words, strict=True))]
    s = summarize(rows)
    assert s["lpr"] == (pytest.approx(lpr) if lpr is not None else None)
    assert s["wpr"] == (pytest.approx(wpr) if wpr is not None else None)
    assert s["lcpr"] == (pytest.approx(lcpr) if lcpr is not None else None)


def test_slc_consistency_and_ttc():
    rows = [row("ko", "a", True, slc=1.0, ttc=0.5), row("ko", "b", True, slc=0.5, detected="en", ttc=None),
            row("ko", "c", False, slc=None, detected=None, chars=0.03)]
    s = summarize(rows)
    assert s["slc"] == pytest.approx(0.75)
    assert s["slc_and_acc"] == pytest.approx(1 / 3)
    assert s["language_consistency"] == pytest.approx(0.5)   # the trace with no language is left out
    assert s["ttc"] == pytest.approx(0.5) and s["ttc_chars"] == pytest.approx(0.05 / 3)


def test_empty_summary():
    assert summarize([]) == {"n_rows": 0, "n_problems": 0}


def test_per_language_and_overall():
    rows = FR_ROWS + [row("th", "a", True), row("th", "b", False)]
    out = per_language(rows, pass_k=(1,))
    assert list(out) == ["fr", "th", "overall"]
    assert out["th"]["accuracy"] == 0.5 and out["overall"]["n_rows"] == 10
    assert out["overall"]["accuracy"] == pytest.approx(5 / 10)


def test_per_benchmark():
    rows = [row("fr", "a", True, bench="mgsm"), row("fr", "a", False, bench="msvamp"),
            {**row("en", "z", True), "benchmark": None}]
    out = per_benchmark(rows)
    assert sorted(out) == ["default", "mgsm", "msvamp"]
    assert out["mgsm"]["fr"]["accuracy"] == 1.0 and out["msvamp"]["overall"]["accuracy"] == 0.0


@pytest.mark.parametrize("languages,in_domain,expected", [
    (["fr", "pt", "en", "th", "bn"], None,
     {"all": ["bn", "en", "fr", "pt", "th"], "in_domain": ["fr", "pt", "th"], "out_of_domain": ["bn", "en"],
      "low": ["bn", "th"], "mid": ["pt"], "high": ["en", "fr"]}),
    (["de", "ru", "it"], ("de",),
     {"all": ["de", "it", "ru"], "in_domain": ["de"], "out_of_domain": ["it", "ru"], "mid": ["de", "ru"]}),
])
def test_language_groups(languages, in_domain, expected):
    groups = language_groups(languages) if in_domain is None else language_groups(languages, in_domain)
    assert groups == expected


def test_group_means_are_macro_over_languages():
    rows = [row("fr", "a", True), row("fr", "b", True), row("en", "a", False, line=None),
            row("th", "a", True), row("th", "b", False)]
    groups = group_means(rows)
    assert groups["all"]["accuracy"] == pytest.approx(0.5) and groups["all"]["n_languages"] == 3
    assert groups["all"]["lpr"] == pytest.approx(1.0)             # a language without a value is left out
    # n counts independent units: problems a and b, whatever the languages and rows (5 rows, 4 with a line)
    assert groups["all"]["accuracy_n"] == 2 and groups["all"]["lpr_n"] == 2
    assert groups["in_domain"]["accuracy"] == pytest.approx(0.75)
    assert groups["out_of_domain"]["accuracy"] == 0.0 and groups["out_of_domain"]["lpr"] is None
    assert groups["out_of_domain"]["languages"] == ["en"] and groups["out_of_domain"]["accuracy_stderr"] is None
    assert groups["low"]["accuracy"] == 0.5 and groups["high"]["accuracy"] == pytest.approx(0.5)
    assert "n_rows" not in groups["all"] and groups["in_domain"]["languages"] == ["fr", "th"]


def test_group_pass_at_k_is_none_when_a_language_lacks_samples():
    rows = [row("fr", "a", True), row("fr", "a", True), row("th", "a", True), row("th", "a", False), row("th", "b", True)]
    groups = group_means(rows, pass_k=(1, 2))
    assert groups["all"]["pass_at_2"] is None and groups["all"]["accuracy"] == pytest.approx((1.0 + 2 / 3) / 2)
    assert groups["in_domain"]["pass_at_2"] is None and "n_short_pass_at_2" not in groups["all"]
    assert groups["all"]["pass_at_2_stderr"] is None and groups["all"]["pass_at_1"] is not None


def test_mixed_benchmarks_average_benchmarks_with_equal_weight():
    rows = [row("fr", "a", True, bench="mgsm"), row("fr", "b", True, bench="mgsm"), row("fr", "c", True, bench="mgsm"),
            {**row("fr", "a", False, bench="mmath"), "source": "AIME2024"},
            {**row("fr", "b", True, bench="mmath"), "source": "MATH500"},
            {**row("fr", "c", False, bench="mmath"), "source": "MATH500"}]
    s = summarize(rows, schemes=SCHEMES)
    assert s["accuracy"] == pytest.approx((1.0 + (0.0 + 0.5) / 2) / 2)   # mgsm 1; mmath: macro over its subsets
    assert "subsets" not in s                       # breakdowns live in per_benchmark
    mmath = per_benchmark(rows, schemes=SCHEMES)["mmath"]["fr"]
    assert mmath["accuracy"] == 0.25 and mmath["subsets"]["MATH500"]["accuracy"] == 0.5
    assert mmath["pooled"]["accuracy"] == pytest.approx(1 / 3)


def test_rows_without_a_subset_form_their_own():
    rows = [{**row("en", "a", True, bench="mmath"), "source": "CNMO"}, row("en", "b", False, bench="mmath"),
            row("en", "c", False, bench="mmath")]
    s = summarize(rows, schemes=SCHEMES)
    assert s["accuracy"] == 0.5 and sorted(s["subsets"]) == ["CNMO", "unspecified"]
