"""The bootstrap behind every standard error and paired interval, pinned against hand computations.

The fixtures are small enough for the *ideal* bootstrap (every resample weighted by its
probability) to be written out by hand: its standard error is the population standard
deviation of the resampled statistic, and its percentile interval is read off a binomial
distribution. 20,000 seeded resamples approximate both; standard errors are checked to
0.01 and the intervals exactly (each bound sits well inside a block of equal resample
values). Each case is also built to tell the right resampling unit from a wrong one.
"""

from __future__ import annotations

import math

import pytest

from components.metrics.aggregate import group_means, summarize
from components.metrics.bootstrap import Bootstrap, estimate, paired_difference
from components.metrics.table import metric_for

BOOT = Bootstrap(resamples=20000, seed=0)


def rows_of(lang, correct_by_problem, *, bench="mgsm", source=None):
    """One row per sample: ``correct_by_problem`` maps a problem id to its samples' correctness."""
    return [{"lang": lang, "id": pid, "benchmark": bench, "correct": c, **({"source": source} if source else {})}
            for pid, samples in correct_by_problem.items() for c in samples]


def one(rows, name, **options):
    return estimate([[rows]], [metric_for(name)], BOOT, **options)[0][0]


def test_accuracy_over_four_problems():
    # 1 of 4 correct: resampled correct count ~ Binomial(4, 1/4); P(0) = .316, P(<=2) = .949, P(<=3) = .996
    found = one(rows_of("fr", {"a": [True], "b": [False], "c": [False], "d": [False]}), "accuracy")
    assert (found.value, found.n) == (0.25, 4)
    assert found.stderr == pytest.approx(math.sqrt(0.25 * 0.75 / 4), abs=0.01)   # 0.2165
    assert (found.low, found.high) == (0.0, 0.75)


@pytest.mark.parametrize("name,value,stderr", [
    # problem a: [T, F] (avg 1/2, pass@2 1), b: [F, F] (0, 0); two problems resampled:
    # avg@2 in {1/2, 1/4, 0} w.p. {1/4, 1/2, 1/4}: sd = sqrt(1/32) = 0.177 (samples resampled alone: 0.217)
    ("avg_at_2", 0.25, math.sqrt(1 / 32)),
    ("accuracy", 0.25, math.sqrt(1 / 32)),
    # pass@2 in {1, 1/2, 0} w.p. {1/4, 1/2, 1/4}: sd = sqrt(1/8) = 0.354
    ("pass_at_2", 0.5, math.sqrt(1 / 8)),
])
def test_the_samples_of_a_problem_are_resampled_together(name, value, stderr):
    found = one(rows_of("fr", {"a": [True, False], "b": [False, False]}), name)
    assert found.value == value and found.n == (4 if name == "accuracy" else 2)
    assert found.stderr == pytest.approx(stderr, abs=0.01)


def test_macro_average_resamples_within_each_subset():
    # MMATH: MATH500 {m1: T, m2: F} -> 1/2, AIME {a1: T, a2: T} -> 1; macro 3/4. Within subsets only
    # MATH500 varies: macro in {1/2, 3/4, 1} w.p. {1/4, 1/2, 1/4}: sd = sqrt(1/32), interval [1/2, 1]
    rows = rows_of("fr", {"m1": [True], "m2": [False]}, bench="mmath", source="MATH500") + \
        rows_of("fr", {"a1": [True], "a2": [True]}, bench="mmath", source="AIME2024")
    found = one(rows, "accuracy")
    assert found.value == 0.75
    assert found.stderr == pytest.approx(math.sqrt(1 / 32), abs=0.01)
    assert (found.low, found.high) == (0.5, 1.0)
    pooled = one(rows, "accuracy", macro=False)       # one stratum: 3 of 4 correct, Binomial(4, 3/4) / 4
    assert pooled.value == 0.75 and pooled.stderr == pytest.approx(math.sqrt(0.75 * 0.25 / 4), abs=0.01)


def test_the_translations_of_a_problem_are_resampled_together():
    # fr and en answer the same two problems alike (a right, b wrong): the group mean moves with one draw
    # of problems, sd = sqrt(1/4 / 2) = 0.354; languages resampled independently would give 0.25
    rows = rows_of("fr", {"a": [True], "b": [False]}) + rows_of("en", {"a": [True], "b": [False]})
    groups = group_means(rows, in_domain=("fr",), bootstrap=BOOT)
    assert groups["all"]["accuracy"] == 0.5 and groups["all"]["accuracy_n"] == 4
    assert groups["all"]["accuracy_stderr"] == pytest.approx(math.sqrt(1 / 8), abs=0.01)
    overall = summarize(rows, bootstrap=BOOT)
    assert overall["accuracy_stderr"] == pytest.approx(math.sqrt(1 / 8), abs=0.01)


def test_a_cell_with_one_problem_has_no_standard_error():
    found = one(rows_of("fr", {"a": [True, False]}), "accuracy")
    assert (found.value, found.stderr, found.low, found.high, found.n) == (0.5, None, None, None, 2)


def test_resamples_without_anything_to_judge_are_left_out():
    # WPR is defined only over traces passing the line level: one of three here; resamples
    # without it have no WPR and are left out, the rest are all 1
    rows = [{"lang": "ja", "id": str(i), "correct": True, "line_pass": line, "word_pass": True}
            for i, line in enumerate([True, False, False])]
    found = one(rows, "wpr")
    assert (found.value, found.n, found.stderr, found.low, found.high) == (1.0, 1, 0.0, 1.0, 1.0)


def test_the_seed_decides_the_draws():
    rows = rows_of("fr", {str(i): [i % 3 == 0] for i in range(12)})
    again = one(rows, "accuracy")
    assert one(rows, "accuracy") == again
    other = estimate([[rows]], [metric_for("accuracy")], Bootstrap(resamples=20000, seed=1))[0][0]
    assert other.stderr != again.stderr and other.stderr == pytest.approx(again.stderr, abs=0.01)


@pytest.mark.parametrize("first,second,delta,interval,significant", [
    # differences per problem d = (1, 1, 0, 0): mean of four resampled ~ Binomial(4, 1/2) / 4,
    # P(0) = P(4) = 1/16 > 2.5%: the interval is [0, 1] and includes 0
    ([True, True, True, False], [False, False, True, False], 0.5, (0.0, 1.0), False),
    # 20 problems, the second model right on 10, the first on those and 4 more: d has four 1s, so the
    # resampled count ~ Binomial(20, 1/5): P(0) = .012, P(<=1) = .069, P(<=7) = .968, P(<=8) = .990
    ([True] * 14 + [False] * 6, [True] * 10 + [False] * 10, 0.2, (0.05, 0.4), True),
])
def test_paired_difference(first, second, delta, interval, significant):
    a = rows_of("fr", {str(i): [c] for i, c in enumerate(first)})
    b = rows_of("fr", {str(i): [c] for i, c in enumerate(second)})
    (found,), shared = paired_difference(a, b, [metric_for("accuracy")], BOOT)
    assert shared == len(first) and found.value == pytest.approx(delta)
    assert (found.low, found.high) == interval and found.excludes_zero is significant
    d = [x - y for x, y in zip(first, second, strict=True)]
    mean = sum(d) / len(d)
    paired_se = math.sqrt(sum((x - mean) ** 2 for x in d) / len(d) / len(d))   # the ideal bootstrap's
    assert found.stderr == pytest.approx(paired_se, abs=0.01)


def test_the_pairing_is_what_makes_the_second_case_significant():
    # the same two models resampled independently: sd = sqrt(.7*.3/20 + .5*.5/20) = 0.152, 1.96 sd > 0.2
    first, second = [True] * 14 + [False] * 6, [True] * 10 + [False] * 10
    a = one(rows_of("fr", {str(i): [c] for i, c in enumerate(first)}), "accuracy")
    b = one(rows_of("fr", {str(i): [c] for i, c in enumerate(second)}), "accuracy")
    unpaired = math.hypot(a.stderr, b.stderr)
    assert unpaired == pytest.approx(math.sqrt(0.7 * 0.3 / 20 + 0.5 * 0.5 / 20), abs=0.01)
    assert a.value - b.value - 1.96 * unpaired < 0


def test_paired_difference_keeps_only_the_problems_both_answered():
    a = rows_of("fr", {"a": [True], "b": [True], "c": [True]})
    b = rows_of("fr", {"a": [False], "b": [True]})
    (found,), shared = paired_difference(a, b, [metric_for("accuracy")], BOOT)
    assert shared == 2 and found.value == 0.5 and found.n == 2
