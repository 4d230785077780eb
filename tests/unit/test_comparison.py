"""The model comparison: rows with deltas to the baseline, and the files a recipe and `compare` both write."""

from __future__ import annotations

import json

import pytest

from components.comparison import comparison_metrics, write_comparison

TABLES = {
    "base": {"mgsm": [{"lang": "fr", "accuracy": 0.25, "lcpr": 0.5, "ttc": 0.1, "slc_and_acc": 0.0},
                      {"lang": "ja", "accuracy": 0.0, "lcpr": None, "ttc": 0.2, "slc_and_acc": 0.0}]},
    "grpo": {"mgsm": [{"lang": "fr", "accuracy": 0.75, "lcpr": 0.25, "ttc": 0.05, "slc_and_acc": 0.5},
                      {"lang": "ja", "accuracy": 0.5, "lcpr": 0.8, "ttc": 0.2, "slc_and_acc": 0.25}]},
}


def test_rows_carry_deltas_to_the_baseline_and_every_file_is_written(tmp_path):
    rows = write_comparison(TABLES, "base", tmp_path / "out")
    grpo_fr = next(r for r in rows if r["model"] == "grpo" and r["lang"] == "fr")
    assert (grpo_fr["accuracy_delta"], grpo_fr["lcpr_delta"], grpo_fr["ttc_delta"]) == (0.5, -0.25, -0.05)
    grpo_ja = next(r for r in rows if r["model"] == "grpo" and r["lang"] == "ja")
    assert grpo_ja["lcpr_delta"] is None and grpo_ja["slc_and_acc_delta"] == 0.25  # no base LCPR to subtract
    assert [(r["lang"], r["model"]) for r in rows] == [("fr", "base"), ("fr", "grpo"), ("ja", "base"), ("ja", "grpo")]
    assert json.loads((tmp_path / "out" / "comparison.json").read_text()) == rows
    text = (tmp_path / "out" / "comparison.txt").read_text().splitlines()
    assert len(text) == 5 and "0.750 (+0.500)" in text[2]
    assert (tmp_path / "out" / "mgsm_accuracy_vs_lcpr.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    metrics = comparison_metrics(rows)
    assert metrics["evaluation/grpo/mgsm/fr/accuracy_delta"] == 0.5 and "evaluation/base/mgsm/ja/lcpr" not in metrics


def test_a_baseline_that_is_not_compared_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(ValueError, match="baseline 'sft' is not among the compared models \\(base, grpo\\)"):
        write_comparison(TABLES, "sft", tmp_path / "out")
    assert not (tmp_path / "out").exists()
