"""pass@k (unbiased) and avg@k against hand computations."""

from __future__ import annotations

import pytest

from components.metrics.accuracy import avg_at_k, avg_at_key, pass_at_k, pass_at_key

# Hand computation: pass@k = 1 - C(n-c, k) / C(n, k)
PASS_AT_K = [
    (5, 2, 1, 2 / 5),                # 1 - C(3,1)/C(5,1) = 1 - 3/5
    (5, 2, 2, 1 - 3 / 10),           # C(3,2)=3, C(5,2)=10
    (5, 2, 3, 1 - 1 / 10),           # C(3,3)=1, C(5,3)=10
    (5, 2, 4, 1.0),                  # n-c = 3 < k: some sample is always correct
    (10, 3, 5, 1 - 21 / 252),        # C(7,5)=21, C(10,5)=252
    (10, 0, 5, 0.0),
    (4, 4, 1, 1.0),
    (1, 1, 1, 1.0),
    (1, 0, 1, 0.0),
    (16, 1, 4, 1 - 1365 / 1820),     # C(15,4)=1365, C(16,4)=1820
]


@pytest.mark.parametrize("n,c,k,expected", PASS_AT_K)
def test_pass_at_k_matches_hand_computation(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)


def test_pass_at_1_is_the_mean():
    assert pass_at_k(8, 3, 1) == pytest.approx(avg_at_k([True] * 3 + [False] * 5))


@pytest.mark.parametrize("n,c,k", [(4, 5, 1), (4, 1, 5), (4, 1, 0), (4, -1, 1), (0, 0, 1)])
def test_pass_at_k_rejects_impossible_counts(n, c, k):
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)


@pytest.mark.parametrize("correct,expected", [
    ([True], 1.0), ([False], 0.0), ([True, False, True, True], 0.75), ([1, 0, 0, 0], 0.25),
])
def test_avg_at_k(correct, expected):
    assert avg_at_k(correct) == expected


def test_avg_at_k_needs_samples():
    with pytest.raises(ValueError):
        avg_at_k([])


def test_output_names_are_mlflow_safe():
    assert pass_at_key(1) == "pass_at_1" and avg_at_key(4) == "avg_at_4"
