"""The metric table: one entry per metric, read by scoring, aggregation and reporting."""

from __future__ import annotations

import pytest

from components.metrics.aggregate import metric_names, summarize
from components.metrics.registry import columns, compared, metric_for, metrics, row_fields
from components.scoring import score_rows
from components.settings import ScoringSettings


@pytest.mark.parametrize("name,higher,column,min_samples", [
    ("accuracy", True, True, 0), ("pass_at_1", True, False, 1), ("pass_at_8", True, False, 8),
    ("avg_at_4", True, False, 0), ("avg_at_n", True, False, 0), ("lpr", True, True, 0), ("wpr", True, True, 0),
    ("lcpr", True, True, 0), ("slc", True, True, 0), ("slc_and_acc", True, True, 0),
    ("language_consistency", True, False, 0), ("ttc", False, True, 0), ("ttc_chars", False, True, 0),
])
def test_entries(name, higher, column, min_samples):
    metric = metric_for(name)
    assert (metric.higher_is_better, metric.column, metric.min_samples) == (higher, column, min_samples)


def test_unknown_metric_is_refused():
    with pytest.raises(KeyError, match="n_rows"):
        metric_for("n_rows")


def test_names_are_mlflow_safe_and_unique():
    names = [m.name for m in metrics((1, 4, 16))]
    assert len(names) == len(set(names)) and not any("@" in n or "&" in n for n in names)
    assert [m.name for m in metrics((4, 1, 4))][1:3] == ["pass_at_1", "pass_at_4"]


def test_columns_and_row_fields():
    assert columns() == ("accuracy", "lcpr", "lpr", "wpr", "slc", "slc_and_acc", "ttc", "ttc_chars")
    assert compared() == ("accuracy", "lcpr", "slc_and_acc", "ttc")
    assert set(row_fields()) == {"correct", "line_pass", "failed_lines", "word_pass", "slc", "slc_and_acc",
                                 "lang_detected", "ttc", "ttc_chars", "fallback"}


def test_the_metric_table_takes_each_benchmarks_scheme_from_its_spec():
    from components.data.benchmarks import SCHEMES
    from components.metrics.registry import kind_of, macro_fields

    assert macro_fields(SCHEMES) == {"mmath": "source"}  # PCS macro-averages MMATH over its four sources
    assert kind_of("mkqa", SCHEMES) == "qa" and kind_of("mgsm", SCHEMES) == "math" and kind_of("new", SCHEMES) == "math"


def test_scoring_emits_every_row_field_and_aggregation_every_metric():
    rows = [{"id": "1", "lang": "fr", "gold": "6", "completion": "<think>\nIl reste six.\n</think>\n\\boxed{6}"}]
    scored = score_rows(rows, ScoringSettings(verifier="numeric", pass_k=[1]))
    assert set(row_fields()) <= set(scored["rows"][0])
    cell = summarize(scored["rows"], pass_k=(1,))
    assert [m.output_name(scored["rows"]) for m in metrics((1,))] == metric_names(cell)
    assert all(f"{name}_stderr" in cell and f"{name}_n" in cell for name in metric_names(cell))


def test_two_entries_defining_one_row_field_differently_are_refused(monkeypatch):
    from components.metrics.metric import RowField, row_mean
    from components.metrics.registry import METRICS

    clash = row_mean("correct_twice", RowField("correct", lambda sample: True), lambda row: row["correct"])
    monkeypatch.setitem(METRICS, "correct_twice", clash)
    with pytest.raises(ValueError, match="row field 'correct'"):
        row_fields()
