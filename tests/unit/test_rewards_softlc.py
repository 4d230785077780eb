"""SoftLC reward (PCS baseline): accuracy + 0.1 when the response is in the query language."""

from __future__ import annotations

import pytest

from components.rewards.softlc import SoftLCReward

FR = "<think>Janet a seize œufs et en vend trois au marché, il en reste treize.</think>La réponse est \\boxed{13}."
EN = "<think>Janet has sixteen eggs and sells three at the market, thirteen are left.</think>The answer is \\boxed{13}."
FR_WRONG = "<think>Janet a seize œufs et en vend trois, il en reste douze.</think>La réponse est \\boxed{12}."


@pytest.mark.parametrize(("bonus", "expected"), [(0.1, [1.1, 1.0, 0.1]), (0.5, [1.5, 1.0, 0.5])])
def test_bonus_for_query_language(bonus, expected):
    logged = {}
    out = SoftLCReward(bonus=bonus)(["q"] * 3, [FR, EN, FR_WRONG], gold=["13"] * 3, lang=["fr"] * 3,
                                    log_metric=lambda n, v: logged.__setitem__(n, v))
    assert out == pytest.approx(expected)
    assert logged["language/query_match"] == pytest.approx(2 / 3)
    assert logged["reward/language_bonus"] == pytest.approx(bonus * 2 / 3)


def test_scope_selects_the_judged_text():
    mixed = "<think>Janet has sixteen eggs and sells three at the market.</think>La réponse est \\boxed{13}."
    assert SoftLCReward(scope="trace")(["q"], [mixed], gold=["13"], lang=["fr"]) == [1.0]
    assert SoftLCReward(scope="response")(["q"], [mixed], gold=["13"], lang=["fr"]) == pytest.approx([1.1])


def test_unknown_scope_is_refused():
    with pytest.raises(ValueError):
        SoftLCReward(scope="steps")
