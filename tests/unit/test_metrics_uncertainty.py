"""The bootstrap behind every standard error, and the intervals built on it, pinned against hand computations.

The fixtures are small enough for the *ideal* bootstrap (every resample weighted by its
probability) to be written out by hand: its standard error is the population standard
deviation of the resampled statistic. 20,000 seeded resamples approximate it; standard
errors are checked to 0.01. Intervals of rates are Wilson's at the effective n and
differences Newcombe's: held against scipy's ``binomtest(...).proportion_ci("wilson")`` and
Newcombe's (1998) published examples, and, at effective counts, against the closed form
written out again below. Each case is also built to tell the right resampling unit from a
wrong one; ``n`` counts independent units (problems), not rows.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binomtest, bootstrap

from components.metrics.aggregate import group_means, summarize
from components.metrics.bootstrap import Bootstrap, estimate, paired_difference
from components.metrics.intervals import corrected_correlation, newcombe, wilson
from components.data.benchmarks import SCHEMES
from components.metrics.registry import macro_fields, metric_for

BOOT = Bootstrap(resamples=20000, seed=0)
Z = 1.959963984540054


def scipy_wilson(successes: int, n: int) -> tuple[float, float]:
    found = binomtest(successes, n).proportion_ci(confidence_level=0.95, method="wilson")
    return found.low, found.high


def wilson_by_hand(p: float, n: float) -> tuple[float, float]:
    """Wilson (1927): the p0 with |p - p0| = z sqrt(p0 (1 - p0) / n), the roots of a quadratic in p0."""
    a, b, c = 1 + Z * Z / n, -(2 * p + Z * Z / n), p * p
    root = math.sqrt(b * b - 4 * a * c)
    return max(0.0, (-b - root) / (2 * a)), min(1.0, (-b + root) / (2 * a))

MACRO = macro_fields(SCHEMES)  # MMATH's macro rule: its spec's


def rows_of(lang, correct_by_problem, *, bench="mgsm", source=None):
    """One row per sample: ``correct_by_problem`` maps a problem id to its samples' correctness."""
    return [{"lang": lang, "id": pid, "benchmark": bench, "correct": c, **({"source": source} if source else {})}
            for pid, samples in correct_by_problem.items() for c in samples]


def one(rows, name, macro=MACRO):
    return estimate([[rows]], [metric_for(name)], BOOT, macro=macro)[0][0]


def test_accuracy_over_four_problems():
    # 1 of 4 correct: resampled correct count ~ Binomial(4, 1/4); P(0) = .316, P(<=2) = .949, P(<=3) = .996
    found = one(rows_of("fr", {"a": [True], "b": [False], "c": [False], "d": [False]}), "accuracy")
    assert (found.value, found.n) == (0.25, 4)
    assert found.stderr == pytest.approx(math.sqrt(0.25 * 0.75 / 4), abs=0.01)   # 0.2165
    # Wilson's interval at n_eff = p(1-p)/se^2, ~4: scipy's for 1 of 4 is [0.046, 0.699]
    assert (found.low, found.high) == pytest.approx(scipy_wilson(1, 4), abs=0.01)
    assert (found.low, found.high) == pytest.approx(wilson_by_hand(0.25, 0.1875 / found.stderr ** 2), abs=1e-9)


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
    assert found.value == value and found.n == 2   # two problems, whatever the metric: samples are not units
    assert found.stderr == pytest.approx(stderr, abs=0.01)


def test_macro_average_resamples_within_each_subset():
    # MMATH: MATH500 {m1: T, m2: F} -> 1/2, AIME {a1: T, a2: T} -> 1; macro 3/4. Within subsets only
    # MATH500 varies: macro in {1/2, 3/4, 1} w.p. {1/4, 1/2, 1/4}: sd = sqrt(1/32), interval [1/2, 1]
    rows = rows_of("fr", {"m1": [True], "m2": [False]}, bench="mmath", source="MATH500") + \
        rows_of("fr", {"a1": [True], "a2": [True]}, bench="mmath", source="AIME2024")
    found = one(rows, "accuracy")
    assert found.value == 0.75 and found.n == 4
    assert found.stderr == pytest.approx(math.sqrt(1 / 32), abs=0.01)
    # n_eff = 0.75 * 0.25 / (1/32) = 6: fewer than the 4 units would say? more: AIME's subset adds no variance
    assert (found.low, found.high) == pytest.approx(wilson_by_hand(0.75, 6), abs=0.02)
    pooled = one(rows, "accuracy", macro=None)       # one stratum: 3 of 4 correct, Binomial(4, 3/4) / 4
    assert pooled.value == 0.75 and pooled.stderr == pytest.approx(math.sqrt(0.75 * 0.25 / 4), abs=0.01)


def test_the_translations_of_a_problem_are_resampled_together():
    # fr and en answer the same two problems alike (a right, b wrong): the group mean moves with one draw
    # of problems, sd = sqrt(1/4 / 2) = 0.354; languages resampled independently would give 0.25
    rows = rows_of("fr", {"a": [True], "b": [False]}) + rows_of("en", {"a": [True], "b": [False]})
    groups = group_means(rows, in_domain=("fr",), bootstrap=BOOT)
    assert groups["all"]["accuracy"] == 0.5 and groups["all"]["accuracy_n"] == 2   # two problems, four rows
    assert groups["all"]["accuracy_stderr"] == pytest.approx(math.sqrt(1 / 8), abs=0.01)
    overall = summarize(rows, bootstrap=BOOT)
    assert overall["accuracy_stderr"] == pytest.approx(math.sqrt(1 / 8), abs=0.01)


def test_a_cell_with_one_problem_has_no_standard_error():
    found = one(rows_of("fr", {"a": [True, False]}), "accuracy")
    assert (found.value, found.stderr, found.low, found.high, found.n) == (0.5, None, None, None, 1)


def test_resamples_without_anything_to_judge_are_left_out():
    # WPR is defined only over traces passing the line level: two of four problems here; resamples
    # without one have no WPR and are left out, the rest are all 1 (a bootstrap error of 0)
    rows = [{"lang": "ja", "id": str(i), "correct": True, "line_pass": line, "word_pass": True}
            for i, line in enumerate([True, True, False, False])]
    found = one(rows, "wpr")
    assert (found.value, found.n, found.stderr) == (1.0, 2, 0.0)
    assert (found.low, found.high) == pytest.approx(scipy_wilson(2, 2), abs=1e-9)   # [0.342, 1], not [1, 1]
    single = one(rows[1:], "wpr")   # judged on one trace: no error, no interval
    assert (single.value, single.n, single.stderr, single.low) == (1.0, 1, None, None)


@pytest.mark.parametrize("correct,expected", [([True] * 8, (0.676, 1.000)), ([False] * 4, (0.000, 0.490))])
def test_boundary_proportions_get_wilsons_interval_not_a_point(correct, expected):
    rows = rows_of("fr", {str(i): [c, c] for i, c in enumerate(correct)})   # two samples each: n is problems
    found = one(rows, "accuracy")
    assert (found.stderr, found.n) == (0.0, len(correct))
    assert (round(found.low, 3), round(found.high, 3)) == expected
    assert (found.low, found.high) == pytest.approx(scipy_wilson(sum(correct), len(correct)), abs=1e-12)


def test_forty_problems_of_two_samples_are_n_40():
    rows = rows_of("fr", {str(i): [i % 2 == 0, i % 4 == 0] for i in range(40)})
    cell = summarize(rows, bootstrap=Bootstrap(resamples=200))
    assert (cell["accuracy_n"], cell["n_rows"], cell["n_problems"]) == (40, 80, 40)


@pytest.mark.parametrize("successes,n", [(0, 1), (0, 4), (1, 4), (8, 8), (3, 10), (17, 40), (249, 250)])
def test_wilson_matches_scipy(successes, n):
    assert wilson(successes / n, n) == pytest.approx(scipy_wilson(successes, n), abs=1e-12)
    assert wilson(successes / n, n) == pytest.approx(wilson_by_hand(successes / n, n), abs=1e-12)


@pytest.mark.parametrize("a,m,b,n,expected", [
    # Newcombe (1998), "Interval estimation for the difference between independent proportions", method 10
    (56, 70, 48, 80, (0.0524, 0.3339)),
    (9, 10, 3, 10, (0.1705, 0.8090)),
])
def test_newcombe_reproduces_the_published_examples(a, m, b, n, expected):
    found = newcombe(a / m, scipy_wilson(a, m), b / n, scipy_wilson(b, n))
    assert found == pytest.approx(expected, abs=6e-5)


def test_the_seed_decides_the_draws():
    rows = rows_of("fr", {str(i): [i % 3 == 0] for i in range(12)})
    again = one(rows, "accuracy")
    assert one(rows, "accuracy") == again
    other = estimate([[rows]], [metric_for("accuracy")], Bootstrap(resamples=20000, seed=1))[0][0]
    assert other.stderr != again.stderr and other.stderr == pytest.approx(again.stderr, abs=0.01)


@pytest.mark.parametrize("batch_elements", [None, 1])   # the default batch (all resamples at once), or one each
def test_weighting_by_drawn_clusters_is_resampling_the_problems(monkeypatch, batch_elements):
    # Oracle: scipy's own paired bootstrap of the per-problem (correct, samples) columns, the ratio of their
    # sums recomputed on each resample; the same seed and batch draw the same problem indices.
    samples = [[i % 3 == 0] * (1 + i % 4) + [i % 5 == 0] for i in range(31)]
    rows = rows_of("fr", {str(i): s for i, s in enumerate(samples)})
    if batch_elements:
        monkeypatch.setattr("components.metrics.bootstrap._BATCH_ELEMENTS", batch_elements)
    boot = Bootstrap(resamples=400, seed=3)
    found = estimate([[rows]], [metric_for("accuracy")], boot)[0][0]
    correct, counts = np.array([sum(s) for s in samples]), np.array([len(s) for s in samples])
    oracle = bootstrap((correct, counts), lambda c, n, axis: c.sum(axis=axis) / n.sum(axis=axis), paired=True,
                       vectorized=True, n_resamples=400, batch=1 if batch_elements else 400, rng=3)
    assert found.stderr == pytest.approx(np.std(oracle.bootstrap_distribution, ddof=1), abs=1e-12)


def paired_newcombe_by_hand(first: list[bool], second: list[bool]) -> tuple[float, float]:
    """Newcombe's (1998) paired method 10 from the 2x2 table: A both right, B first only, C second only,
    D neither; phi continuity-corrected to (AD - BC - N/2) / sqrt(margins) when AD > BC (at least 0),
    0 when a margin is empty; the limits scipy's Wilson intervals."""
    table = [sum(x == i and y == j for x, y in zip(first, second, strict=True)) for i, j in
             ((True, True), (True, False), (False, True), (False, False))]
    a, b, c, d = table
    n, p1, p2 = len(first), (a + b) / len(first), (a + c) / len(first)
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    if margins == 0:
        phi = 0.0
    elif a * d > b * c:
        phi = max(0.0, (a * d - b * c - n / 2) / math.sqrt(margins))
    else:
        phi = (a * d - b * c) / math.sqrt(margins)
    (l1, u1), (l2, u2) = scipy_wilson(a + b, n), scipy_wilson(a + c, n)
    below = math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2))
    above = math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2))
    return p1 - p2 - below, p1 - p2 + above


@pytest.mark.parametrize("first,second,delta,significant", [
    # d = (1, 1, 0, 0) over four problems: 3/4 against 1/4; the interval reaches below 0
    ([True, True, True, False], [False, False, True, False], 0.5, False),
    # 20 problems, the second model right on 10, the first on those and 4 more: four discordant problems all
    # one way, which a sign test puts at p = 2/16 = 0.125: Newcombe's interval just reaches 0
    ([True] * 14 + [False] * 6, [True] * 10 + [False] * 10, 0.2, False),
    # 40 problems, 27 against 20 with seven discordant all one way (sign test p = 2/128): above 0
    ([True] * 27 + [False] * 13, [True] * 20 + [False] * 20, 0.175, True),
    # four of four improve: the bootstrap's percentiles collapse to [+1, +1]; Newcombe's is [0.307, 1]
    ([True] * 4, [False] * 4, 1.0, True),
])
def test_paired_difference(first, second, delta, significant):
    a = rows_of("fr", {str(i): [c] for i, c in enumerate(first)})
    b = rows_of("fr", {str(i): [c] for i, c in enumerate(second)})
    (found,), shared = paired_difference(a, b, [metric_for("accuracy")], BOOT)
    assert shared == len(first) == found.n and found.value == pytest.approx(delta)
    assert (found.low, found.high) == pytest.approx(paired_newcombe_by_hand(first, second), abs=0.02)
    assert found.excludes_zero is significant
    d = [x - y for x, y in zip(first, second, strict=True)]
    mean = sum(d) / len(d)
    paired_se = math.sqrt(sum((x - mean) ** 2 for x in d) / len(d) / len(d))   # the ideal bootstrap's
    assert found.stderr == pytest.approx(paired_se, abs=0.01)


def test_the_pairing_is_what_makes_the_third_case_significant():
    # the same two models resampled independently: sd = sqrt(.675*.325/40 + .5*.5/40) = 0.108, 1.96 sd > 0.175
    first, second = [True] * 27 + [False] * 13, [True] * 20 + [False] * 20
    a = one(rows_of("fr", {str(i): [c] for i, c in enumerate(first)}), "accuracy")
    b = one(rows_of("fr", {str(i): [c] for i, c in enumerate(second)}), "accuracy")
    unpaired = math.hypot(a.stderr, b.stderr)
    assert unpaired == pytest.approx(math.sqrt(0.675 * 0.325 / 40 + 0.5 * 0.5 / 40), abs=0.01)
    assert a.value - b.value - 1.96 * unpaired < 0


def test_paired_difference_keeps_only_the_problems_both_answered():
    a = rows_of("fr", {"a": [True], "b": [True], "c": [True]})
    b = rows_of("fr", {"a": [False], "b": [True]})
    (found,), shared = paired_difference(a, b, [metric_for("accuracy")], BOOT)
    assert shared == 2 and found.value == 0.5 and found.n == 2


def lcpr_rows(judged: list[bool | None]) -> list[dict]:
    """One trace per problem with its line verdict (``None``: no judgeable line) and a passing word level."""
    return [{"lang": "fr", "id": str(i), "benchmark": "mgsm", "correct": True, "line_pass": line,
             "word_pass": True if line else None} for i, line in enumerate(judged)]


def test_a_delta_of_lcpr_is_over_the_problems_both_were_judged_on():
    # A answers 16 problems but has a judgeable line on 4 (all passing: LCPR 1); B is judged on all 16,
    # failing the line level on those 4 and passing elsewhere (LCPR 0.75 over 16). Over the 4 both were
    # judged on, 1 - 0 = 1 (not 1 - 0.75), with n_both 4: Wilson's 4/4 [0.510, 1] and 0/4 [0, 0.490],
    # no variance in either so r = 0: [1 - 0.490 sqrt 2, 1] = [0.307, 1]
    a = lcpr_rows([True] * 4 + [None] * 12)
    b = lcpr_rows([False] * 4 + [True] * 12)
    (found,), shared = paired_difference(a, b, [metric_for("lcpr")], BOOT)
    assert (shared, found.n, found.value) == (16, 4, 1.0)
    low, high = newcombe(1.0, scipy_wilson(4, 4), 0.0, scipy_wilson(0, 4))
    assert (found.low, found.high) == pytest.approx((low, high), abs=1e-9)
    assert (round(found.low, 3), found.high) == (0.307, 1.0)


def test_the_corrected_correlation_is_newcombes_phi_of_the_two_by_two_table():
    # A = 20 both right, B = 7 first only, C = 0, D = 13: phi* = (260 - 20) / sqrt(27 * 13 * 20 * 20) = 0.6405
    phi = (20 * 13 - 7 * 0) / math.sqrt(27 * 13 * 20 * 20)
    assert corrected_correlation(phi, 27 / 40, 20 / 40, 40) == pytest.approx(240 / math.sqrt(27 * 13 * 400), abs=1e-12)
    assert corrected_correlation(0.1, 0.5, 0.5, 4) == 0.0 and corrected_correlation(-0.3, 0.5, 0.5, 4) == -0.3
    assert corrected_correlation(0.9, 1.0, 0.5, 4) == 0.0   # a model without variance


def paired_coverage(n: int, shift: float, trials: int, seed: int = 0) -> float:
    """Two models on n problems of uniform difficulty q (shared: the outcomes are correlated), right with
    q and min(1, q + shift); the share of paired intervals holding the true difference."""
    import numpy as np

    rng = np.random.default_rng(seed)
    truth = shift - shift * shift / 2   # E[min(1, q + s) - q] for q ~ U(0, 1)
    held = 0
    for _ in range(trials):
        q = rng.random(n)
        first, second = rng.random(n) < np.minimum(1, q + shift), rng.random(n) < q
        (found,), _ = paired_difference(rows_of("fr", {str(i): [bool(c)] for i, c in enumerate(first)}),
                                        rows_of("fr", {str(i): [bool(c)] for i, c in enumerate(second)}),
                                        [metric_for("accuracy")], Bootstrap(resamples=500))
        held += found.low is None or found.low <= truth <= found.high
    return held / trials


@pytest.mark.parametrize("shift", [0.0, 0.2])
def test_the_paired_interval_holds_its_level_on_16_problems(shift):
    # measured at seed 0: 0.937 (no difference) and 0.960 (+0.18); the binomial sd at 300 trials is 0.013
    assert paired_coverage(16, shift, trials=300) >= 0.92
