"""The repetition gate agrees with its definition, written out naively, on thousands of random texts.

Definition (``components.rewards.repetition``): degenerate when for some period
``1 <= p <= max_period`` the longest run of positions with ``units[j] == units[j + p]``
is at least ``max((min_repeats - 1) * p, min_span)``.
"""

from __future__ import annotations

import random

import pytest

from components.rewards.repetition import has_degenerate_repetition, split_units


def naive_degenerate(units: list[str], max_period: int, min_repeats: int, min_span: int) -> bool:
    for period in range(1, min(max_period, len(units) - 1) + 1):
        needed = max((min_repeats - 1) * period, min_span)
        run = 0
        for j in range(len(units) - period):
            run = run + 1 if units[j] == units[j + period] else 0
            if run >= needed:
                return True
    return False


def random_text(rng: random.Random) -> str:
    """Words from a small vocabulary, with pasted repeated blocks of random size and count."""
    vocab = ["a", "b", "Donc", "3", "=", ",", "。", "答", "x", "lui"][: rng.randint(2, 10)]
    parts: list[str] = []
    for _ in range(rng.randint(1, 6)):
        block = [rng.choice(vocab) for _ in range(rng.randint(1, 40))]
        parts += block * rng.randint(1, 5) if rng.random() < 0.5 else block
        if rng.random() < 0.5:
            parts += block[: rng.randint(0, len(block))]
    return " ".join(parts)


PARAMETERS = [(128, 3, 24), (16, 3, 8), (128, 5, 40), (8, 2, 10), (64, 4, 30), (3, 3, 3)]


@pytest.mark.parametrize(("max_period", "min_repeats", "min_span"), PARAMETERS)
def test_agrees_with_the_definition_on_random_texts(max_period, min_repeats, min_span):
    rng = random.Random(max_period * 1000 + min_repeats * 100 + min_span)
    verdicts = []
    for _ in range(400):
        text = random_text(rng)
        expected = naive_degenerate(split_units(text), max_period, min_repeats, min_span)
        got = has_degenerate_repetition(text, max_period=max_period, min_repeats=min_repeats, min_span=min_span)
        assert got is expected, (text, max_period, min_repeats, min_span)
        verdicts.append(expected)
    assert 0.1 < sum(verdicts) / len(verdicts) < 0.9  # both verdicts are well represented
