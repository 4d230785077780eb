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


def test_character_classes_match_the_unit_expression_on_the_whole_bmp():
    from components.rewards.repetition import _bmp_classes

    classes = _bmp_classes()
    for point in range(0x10000):
        ch = chr(point)
        units = split_units(ch)
        expected = 0 if not units else (1 if units[0] == ch and split_units(ch + ch) == [ch + ch] else 2)
        assert classes[point] == expected, hex(point)


def random_unicode(rng: random.Random) -> str:
    alphabet = "ab Z_9²½ \t\n.,;=+\u00a0\u3000答えはカ๑กข한글ж\u0301\U0001F600\U00020000\ud800"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))


def test_unit_hashes_follow_the_units():
    from components.rewards.repetition import unit_hashes

    rng = random.Random(7)
    for _ in range(2000):
        text = random_unicode(rng)
        units = split_units(text)
        hashes = unit_hashes(text)
        assert len(hashes) == len(units), text
        assert [int(h) for h in hashes] == [int(unit_hashes(u)[0]) for u in units], text
        pairs = [(i, j) for i in range(len(units)) for j in range(i)]
        assert all((units[i] == units[j]) == (hashes[i] == hashes[j]) for i, j in pairs), text


def test_agrees_with_the_definition_on_random_unicode():
    rng = random.Random(11)
    for _ in range(300):
        text = " ".join([random_unicode(rng)[:8]] * rng.randint(1, 6)) + random_unicode(rng)
        expected = naive_degenerate(split_units(text), 16, 3, 6)
        assert has_degenerate_repetition(text, max_period=16, min_span=6) is expected, text


def test_parameters_out_of_range_are_refused():
    with pytest.raises(ValueError):
        has_degenerate_repetition("a a a", min_repeats=1)
