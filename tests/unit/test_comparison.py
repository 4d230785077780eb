"""The model comparison: values with their errors, deltas to the baseline with paired intervals, the files."""

from __future__ import annotations

import json
import math

import pytest
from scipy.stats import binomtest

from components.reports.comparison import (
    MIN_SHARED,
    comparison_columns,
    comparison_metrics,
    comparison_rows,
    format_table,
    write_comparison,
)

TABLES = {
    "base": {"mgsm": [{"lang": "fr", "accuracy": 0.25, "accuracy_stderr": 0.2, "accuracy_n": 4, "lcpr": 0.5,
                       "ttc": 0.1, "slc_and_acc": 0.0},
                      {"lang": "ja", "accuracy": 0.0, "lcpr": None, "ttc": 0.2, "slc_and_acc": 0.0}]},
    "grpo": {"mgsm": [{"lang": "fr", "accuracy": 0.75, "accuracy_stderr": 0.2, "accuracy_n": 4, "lcpr": 0.25,
                       "ttc": 0.05, "slc_and_acc": 0.5},
                      {"lang": "ja", "accuracy": 0.5, "lcpr": 0.8, "ttc": 0.2, "slc_and_acc": 0.25}]},
}


def test_without_scored_rows_deltas_are_plain_differences_and_every_file_is_written(tmp_path):
    rows = write_comparison(TABLES, "base", tmp_path / "out")
    grpo_fr = next(r for r in rows if r["model"] == "grpo" and r["lang"] == "fr")
    assert (grpo_fr["accuracy_delta"], grpo_fr["lcpr_delta"], grpo_fr["ttc_delta"]) == (0.5, -0.25, -0.05)
    assert (grpo_fr["accuracy_stderr"], grpo_fr["accuracy_n"]) == (0.2, 4)
    assert grpo_fr["accuracy_delta_low"] is None and grpo_fr["accuracy_delta_significant"] is None
    grpo_ja = next(r for r in rows if r["model"] == "grpo" and r["lang"] == "ja")
    assert grpo_ja["lcpr_delta"] is None and grpo_ja["slc_and_acc_delta"] == 0.25  # no base LCPR to subtract
    assert [(r["lang"], r["model"]) for r in rows] == [("fr", "base"), ("fr", "grpo"), ("ja", "base"), ("ja", "grpo")]
    assert json.loads((tmp_path / "out" / "comparison.json").read_text()) == rows
    text = (tmp_path / "out" / "comparison.txt").read_text().splitlines()
    # Wilson's interval at n_eff = 0.75 * 0.25 / 0.2^2 = 4.69: centre 0.637, half-width 0.312 (by hand)
    assert "0.750 [0.326, 0.949] (n 4)  Δ +0.500" in text[text.index("accuracy") + 2]
    assert (tmp_path / "out" / "mgsm_accuracy_vs_lcpr.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    metrics = comparison_metrics(rows)
    assert metrics["evaluation/grpo/mgsm/fr/accuracy_delta"] == 0.5 and "evaluation/base/mgsm/ja/lcpr" not in metrics
    assert metrics["evaluation/grpo/mgsm/fr/accuracy_stderr"] == 0.2


def test_a_headline_value_is_logged_once_and_read_back_under_its_cell():
    from components.reports.comparison_headline import as_cells, logged_comparison

    tables = {model: {"mgsm": [*langs, {**langs[0], "lang": "in_domain"}]} for model, langs in (
        (model, table["mgsm"]) for model, table in TABLES.items())}
    rows = comparison_rows(tables, "base")
    cells = comparison_metrics(rows)
    logged = logged_comparison(rows, cells)
    # the in-domain LCPR and accuracy of each model: a chart named "<benchmark> <group> <metric> <model>"
    charts = {key for key in logged if "/" not in key.removeprefix("evaluation/")}
    assert charts == {f"evaluation/mgsm in_domain {metric} {model}" for metric in ("lcpr", "accuracy")
                      for model in ("base", "grpo")}
    assert "evaluation/grpo/mgsm/in_domain/lcpr" not in logged and "evaluation/grpo/mgsm/in_domain/lcpr_delta" in logged
    assert len(logged) == len(cells) and sorted(logged.values()) == sorted(cells.values())  # each value once
    assert as_cells(logged) == cells


def scored(correct: list[bool], lang: str = "fr") -> list[dict]:
    return [{"lang": lang, "id": str(i), "benchmark": "mgsm", "correct": c, "line_pass": True, "word_pass": True,
             "slc_and_acc": c, "ttc": 0.1} for i, c in enumerate(correct)]


def scipy_wilson(successes: int, n: int) -> tuple[float, float]:
    found = binomtest(successes, n).proportion_ci(confidence_level=0.95, method="wilson")
    return found.low, found.high


def newcombe_by_hand(a: int, b: int, n: int, r: float = 0.0) -> tuple[float, float]:
    """Newcombe's square-and-add interval of a/n - b/n from scipy's Wilson limits, correlation r (his paired
    method's continuity-corrected phi; 0 when a model has no variance)."""
    (l1, u1), (l2, u2), p1, p2 = scipy_wilson(a, n), scipy_wilson(b, n), a / n, b / n
    return (p1 - p2 - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2 - 2 * r * (p1 - l1) * (u2 - p2)),
            p1 - p2 + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2 - 2 * r * (u1 - p1) * (p2 - l2)))


@pytest.mark.parametrize("base,grpo,delta,interval,significant", [
    # 8 problems, grpo right on 7, base on none (no variance: r = 0): 7/8 - 0/8 with Newcombe's interval
    ([False] * 8, [True] * 7 + [False], 0.875, newcombe_by_hand(7, 0, 8), True),
    # d = (1, 1, 0, 0): 3/4 - 1/4; the 2x2 table (1 both, 2 grpo only, 0 base only, 1 neither) has
    # AD - BC = 1 < N/2, so Newcombe's corrected phi is 0; the interval includes 0
    ([False, False, True, False], [True, True, True, False], 0.5, newcombe_by_hand(3, 1, 4), False),
    # four of four problems improve: [0.307, 1] excludes 0 (the bootstrap's [1, 1] said nothing), but 4 units
    # cannot carry a sign-flip test at 5% (2 / 2^4 = 0.125): no mark
    ([False] * 4, [True] * 4, 1.0, newcombe_by_hand(4, 0, 4), False),
])
def test_paired_intervals_over_the_shared_problems(base, grpo, delta, interval, significant):
    tables = {"base": {"mgsm": [{"lang": "fr"}, {"lang": "overall"}]},
              "grpo": {"mgsm": [{"lang": "fr"}, {"lang": "overall"}]}}
    others = scored([True, False], lang="ja")   # in overall only, answered alike by both
    rows = comparison_rows(tables, "base", metrics=["accuracy"],
                           scored={"base": {"mgsm": scored(base) + others}, "grpo": {"mgsm": scored(grpo) + others}})
    fr = next(r for r in rows if (r["model"], r["lang"]) == ("grpo", "fr"))
    assert fr["accuracy_delta"] == delta
    assert (fr["accuracy_delta_low"], fr["accuracy_delta_high"]) == pytest.approx(interval, abs=0.02)
    assert fr["accuracy_delta_significant"] is significant and fr["n_shared"] == fr["accuracy_n_both"] == len(base)
    overall = next(r for r in rows if (r["model"], r["lang"]) == ("grpo", "overall"))
    assert overall["n_shared"] == len(base)   # ja's problems 0 and 1 are translations of fr's: one unit each
    assert overall["accuracy_delta"] == pytest.approx(delta * len(base) / (len(base) + 2))
    assert len(base) >= MIN_SHARED or not fr["accuracy_delta_significant"]


def test_only_problems_both_models_answered_are_compared():
    tables = {"base": {"mgsm": [{"lang": "fr"}]}, "grpo": {"mgsm": [{"lang": "fr"}]}}
    base, grpo = scored([False, False, True]), scored([True, True])   # problem 2 only in base
    (_, row) = comparison_rows(tables, "base", metrics=["accuracy"],
                               scored={"base": {"mgsm": base}, "grpo": {"mgsm": grpo}})
    assert row["n_shared"] == 2 and row["accuracy_delta"] == 1.0


def test_a_baseline_that_is_not_compared_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(ValueError, match="baseline 'sft' is not among the compared models \\(base, grpo\\)"):
        write_comparison(TABLES, "sft", tmp_path / "out")
    assert not (tmp_path / "out").exists()


PASS_AT_4 = {  # AdaMame's reports: Pass@4 leads, the corrected LCPR rule beside the paper's
    "base": {"msvamp": [{"lang": "fr", "headline": "pass_at_4", "pass_at_4": 0.5, "accuracy": 0.25, "lcpr": 0.5,
                         "lcpr_adamame": 0.4, "ttc": 0.1, "slc_and_acc": 0.0}]},
    "sft": {"msvamp": [{"lang": "fr", "headline": "pass_at_4", "pass_at_4": 1.0, "accuracy": 0.5, "lcpr": 0.75,
                        "lcpr_adamame": 0.7, "ttc": 0.1, "slc_and_acc": 0.0}]},
}


def test_the_headline_accuracy_leads_the_table_and_its_deltas(tmp_path):
    rows = write_comparison(PASS_AT_4, "base", tmp_path / "out")
    sft = next(r for r in rows if r["model"] == "sft")
    assert (sft["headline"], sft["pass_at_4_delta"], sft["accuracy_delta"]) == ("pass_at_4", 0.5, 0.25)
    assert sft["lcpr_adamame_delta"] == pytest.approx(0.3)
    text = (tmp_path / "out" / "comparison.txt").read_text().splitlines()
    blocks = [line for line in text if line in comparison_columns(PASS_AT_4, "base")]
    assert blocks == ["pass_at_4", "accuracy", "lcpr", "lcpr_adamame", "slc_and_acc", "ttc"]
    assert "evaluation/sft/msvamp/fr/headline" not in comparison_metrics(rows)  # names are not metrics


def test_the_headline_and_a_beside_rule_get_paired_intervals_too():
    tables = {model: {"msvamp": [{"lang": "fr", "headline": "pass_at_2", "lcpr_adamame": 0.5}]} for model in ("base", "sft")}

    def rows(correct, beside):   # two samples of each of 8 problems; the beside rule's line verdict per problem
        return [{"lang": "fr", "id": str(i), "benchmark": "msvamp", "correct": c and s == 0, "line_pass": True,
                 "word_pass": True, "line_pass_adamame": b, "word_pass_adamame": True}
                for i, (c, b) in enumerate(zip(correct, beside, strict=True)) for s in range(2)]

    scored = {"base": {"msvamp": rows([False] * 8, [False] * 8)}, "sft": {"msvamp": rows([True] * 8, [True] * 8)}}
    (_, sft) = comparison_rows(tables, "base", scored=scored)
    assert (sft["pass_at_2_delta"], sft["pass_at_2_delta_significant"]) == (1.0, True)
    assert sft["pass_at_2_delta_low"] == pytest.approx(newcombe_by_hand(8, 0, 8)[0], abs=1e-9)   # 0.541, not 1
    assert (sft["lcpr_adamame_delta"], sft["lcpr_adamame_delta_high"]) == (1.0, 1.0) and sft["n_shared"] == 8
    assert sft["pass_at_2_n_both"] == 8   # 8 problems of two samples: 8 units


def test_a_language_group_is_paired_as_the_mean_of_its_languages():
    # in_domain = fr, ja: fr improves on 7 of 8 problems (0.875), ja on 4 of 4 (1.0); en (outside) alike
    base = scored([False] * 8) + scored([False] * 4, lang="ja") + scored([True, False], lang="en")
    grpo = scored([True] * 7 + [False]) + scored([True] * 4, lang="ja") + scored([True, False], lang="en")
    tables = {model: {"mgsm": [{"lang": "in_domain"}, {"lang": "all"}]} for model in ("base", "grpo")}
    rows = comparison_rows(tables, "base", metrics=["accuracy"], scored={"base": {"mgsm": base}, "grpo": {"mgsm": grpo}},
                           in_domain=["fr", "ja"])
    group = next(r for r in rows if (r["model"], r["lang"]) == ("grpo", "in_domain"))
    assert group["accuracy_delta"] == pytest.approx((0.875 + 1.0) / 2)  # the mean of languages, not 11/12 pooled
    assert group["n_shared"] == 8 and group["accuracy_delta_significant"] is True   # ja's 4 are fr's 0-3
    assert 0.5 < group["accuracy_delta_low"] and 0.9375 < group["accuracy_delta_high"] <= 1.0
    everything = next(r for r in rows if (r["model"], r["lang"]) == ("grpo", "all"))
    assert everything["accuracy_delta"] == pytest.approx((0.0 + 0.875 + 1.0) / 3) and everything["n_shared"] == 8


def test_previous_takes_each_model_against_the_one_before_it(tmp_path):
    # base right on 4 of 8, SFT on none (it forgot), GRPO on all 8: against the base model GRPO gains 0.5,
    # against SFT, the model it was trained from, 1.0
    tables = {model: {"mgsm": [{"lang": "fr", "accuracy": None}]} for model in ("base", "sft", "grpo")}
    answers = {"base": [True] * 4 + [False] * 4, "sft": [False] * 8, "grpo": [True] * 8}
    files = {}
    for model, correct in answers.items():
        (tmp_path / f"{model}.jsonl").write_text("\n".join(json.dumps(row) for row in scored(correct)) + "\n")
        files[model] = {"mgsm": tmp_path / f"{model}.jsonl"}
    rows = write_comparison(tables, "previous", tmp_path / "out", files)
    by_model = {r["model"]: r for r in rows}
    assert "reference" not in by_model["base"] and by_model["base"].get("accuracy_delta") is None
    assert (by_model["sft"]["reference"], by_model["sft"]["accuracy_delta"]) == ("base", -0.5)
    assert (by_model["grpo"]["reference"], by_model["grpo"]["accuracy_delta"]) == ("sft", 1.0)
    assert by_model["grpo"]["accuracy_delta_significant"] is True and by_model["grpo"]["n_shared"] == 8
    text = (tmp_path / "out" / "comparison.txt").read_text()
    legend = text.split("\n\n")[0]
    assert "Δ = minus the model before it (sft - base, grpo - sft)" in " ".join(legend.splitlines())
    assert max(len(line) for line in legend.splitlines()) <= 110  # wrapped for a terminal
    assert comparison_rows(tables, "base", scored={m: {"mgsm": scored(c)} for m, c in answers.items()},
                           metrics=["accuracy"])[2]["accuracy_delta"] == 0.5  # grpo - base, for contrast


def test_the_text_table_lists_languages_before_groups_with_columns_as_wide_as_their_cells():
    tables = {model: {"mgsm": [{"lang": lang, "accuracy": 0.5, "accuracy_n": 8}
                               for lang in ("overall", "th", "in_domain", "en")]} for model in ("base", "grpo")}
    lines = format_table(comparison_rows(tables, "base", metrics=["accuracy"]), "base", ["accuracy"]).splitlines()
    block = lines[lines.index("accuracy") + 1:]
    assert [line.split()[1] for line in block[1:]] == ["en", "th", "in_domain", "overall"]
    assert len({line.index("0.500") for line in block[1:]}) == 1  # the base column starts at one place in every row
    assert block[0].index("base") == block[1].index("0.500")


def test_a_delta_over_problems_judged_for_one_model_only_is_taken_over_those_both_were_judged_on():
    # SFT answers all 16 problems but has a judgeable line on 4 (all passing the line and word levels: LCPR 1);
    # the base model is judged on all 16, failing the line level on those 4 (its LCPR there 0, overall 0.75).
    # The delta is over the 4 both were judged on: 1 - 0, n_both 4, Newcombe's [0.307, 1] from Wilson's
    # 4/4 [0.510, 1] and 0/4 [0, 0.490]; it excludes 0 but 4 units cannot carry the mark
    def rows(lines):
        return [{"lang": "fr", "id": str(i), "benchmark": "mgsm", "correct": False, "line_pass": line,
                 "word_pass": True if line else None} for i, line in enumerate(lines)]

    scored_rows = {"base": {"mgsm": rows([False] * 4 + [True] * 12)}, "sft": {"mgsm": rows([True] * 4 + [None] * 12)}}
    tables = {model: {"mgsm": [{"lang": "fr"}]} for model in scored_rows}
    (_, sft) = comparison_rows(tables, "base", metrics=["lcpr"], scored=scored_rows)
    assert (sft["lcpr_delta"], sft["lcpr_n_both"], sft["n_shared"]) == (1.0, 4, 16)
    assert (sft["lcpr_delta_low"], sft["lcpr_delta_high"]) == pytest.approx(newcombe_by_hand(4, 0, 4), abs=1e-9)
    assert round(sft["lcpr_delta_low"], 3) == 0.307 and sft["lcpr_delta_significant"] is False
    sft.update(lcpr=1.0, lcpr_stderr=0.0, lcpr_n=4)
    assert format_table([sft], "base", ["lcpr"]).splitlines()[-1].endswith(
        "1.000 [0.510, 1.000] (n 4)  Δ +1.000 [+0.307, +1.000] (n_both 4)")   # no * after the interval
