"""The data stage's probe: a teacher whose traces are seldom kept is stopped before the rest is generated.

The teacher is the fake backend (a boxed number from a hash of the prompt, English filler as reasoning), so
with the LCPR filter on, no French or Japanese trace survives; what was generated is read from the fake's own
call log (one line per call, its prompt count), not from the code under test. Intervals against Wilson's
formula worked out by hand.
"""

from __future__ import annotations

import math

import pytest

from components.data.datasets import build_traces, write_table
from components.data.trace_yield import TraceShortfallError, YieldProjection, project, wilson
from components.generation.fake import CALL_LOG
from components.settings import TraceSettings

FAKE = {"backend": "fake", "model": "fake"}


def translations(tmp_path, per_language: int, languages=("fr", "ja")):
    rows = [{"id": f"{lang}-{i}", "row": i, "lang": lang, "question": f"Question {i} ({lang})", "gold": "1000",
             "source": "s", "source_question": f"Question {i}", "judge_score": 5}
            for lang in languages for i in range(per_language)]
    return write_table(rows, tmp_path / "translations.parquet", "translations")


def generated_calls(cache_dir) -> list[int]:
    return [int(line) for line in (cache_dir / CALL_LOG).read_text(encoding="utf-8").splitlines()]


def traces(**early_stop) -> TraceSettings:
    return TraceSettings(model=FAKE, sampling={"max_new_tokens": 8}, prompt={"style": "plain"}, verifier="exact",
                         per_language=30, early_stop=early_stop)


def test_wilson_matches_the_formula_by_hand():
    # z = 1.959964: centre (k + z^2/2) / (n + z^2), half-width z sqrt(k(n-k)/n + z^2/4) / (n + z^2)
    z = 1.959963984540054
    for kept, total in ((8, 8), (0, 4), (3, 20)):
        centre = (kept + z * z / 2) / (total + z * z)
        half = z * math.sqrt(kept * (total - kept) / total + z * z / 4) / (total + z * z)
        assert wilson(kept, total) == pytest.approx((max(centre - half, 0.0), min(centre + half, 1.0)), abs=1e-9)


def test_a_teacher_that_keeps_nothing_is_stopped_after_the_probe(tmp_path):
    with pytest.raises(TraceShortfallError) as error:
        build_traces(traces(probe_per_language=10), ["fr", "ja"], translations(tmp_path, 50), tmp_path / "out",
                     tmp_path)
    message = str(error.value)
    assert "fr: kept 0 of 10 probed" in message and "ja: kept 0 of 10 probed" in message
    assert "data.traces.per_language" in message and "data.traces.early_stop.min_share 0.5" in message
    assert generated_calls(tmp_path) == [20]  # the probe's 2 x 10 prompts, none of the other 80


def test_a_probe_that_projects_enough_lets_the_rest_generate(tmp_path):
    summary = build_traces(traces(probe_per_language=10, min_share=0.01), ["fr", "ja"], translations(tmp_path, 50),
                           tmp_path / "out", tmp_path)
    assert generated_calls(tmp_path) == [20, 80]
    assert summary["yield"]["fr"]["probed"] == 10.0 and summary["yield"]["fr"]["target"] == 30.0
    assert summary["retention"]["fr"]["total"] == 50.0


def test_no_probe_when_a_language_has_no_more_queries_than_the_probe(tmp_path):
    summary = build_traces(traces(probe_per_language=100), ["fr", "ja"], translations(tmp_path, 5), tmp_path / "out",
                           tmp_path)
    assert generated_calls(tmp_path) == [10] and summary["yield"] == {}


def test_projection_uses_the_interval_and_the_target():
    probe = [{"lang": "fr"}] * 20
    kept = [{"lang": "fr"}] * 2
    (fr,) = project(kept, probe, [{"lang": "fr"}] * 1000, per_language=400)
    low, high = wilson(2, 20)
    assert (fr.target, fr.projected) == (400, (int(1000 * low), int(1000 * high)))
    assert fr.short_of(0.5) == (int(1000 * high) < 200)
    assert YieldProjection("ja", 10, 10, 0.7, 1.0, 50, 20).projected == (20, 20)  # never above the target
