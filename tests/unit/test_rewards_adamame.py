"""AdaMame-GRPO reward r' = α_i(t)·r_acc (AdaMame §3.3) on real completions, at hand-computed steps."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from components.rewards.adamame import AdaMameReward

T = 100
FR = "<think>Janet a seize œufs et en vend trois au marché, il en reste treize.</think>\\boxed{13}"
EN = "<think>Janet has sixteen eggs and sells three at the market, so thirteen are left.</think>\\boxed{13}"
FR_WRONG = "<think>Janet a seize œufs et en vend trois au marché, il en reste douze.</think>\\boxed{12}"


@pytest.fixture(scope="module")
def reward():
    return AdaMameReward(beta=2.0)


@pytest.mark.parametrize(("step", "aligned"), [(0, 1.2), (T // 5, 1.2), (T // 2, 2.0), (T, 3.0)])
def test_alpha_scales_correct_aligned_rollouts(reward, step, aligned):
    logged = {}
    out = reward(["q"] * 3, [FR, EN, FR_WRONG], gold=["13"] * 3, lang=["fr"] * 3,
                 trainer_state=SimpleNamespace(global_step=step, max_steps=T),
                 log_metric=lambda n, v: logged.__setitem__(n, v))
    assert out == pytest.approx([aligned, 1.0, 0.0])  # misaligned correct: α = 1; wrong: 0 whatever α
    assert logged["language/query_match"] == pytest.approx(2 / 3)
    assert logged["reward/accuracy"] == pytest.approx(2 / 3)
    assert logged["curriculum/alpha_mean"] == pytest.approx((aligned + 1.0 + aligned) / 3)


def test_language_is_read_from_the_first_characters_of_the_trace():
    mixed = "<think>" + "Janet has sixteen eggs and sells three. " * 3 + "Il en reste treize." * 20 + "</think>\\boxed{13}"
    state = SimpleNamespace(global_step=T, max_steps=T)
    assert AdaMameReward(detect_chars=100)(["q"], [mixed], gold=["13"], lang=["fr"], trainer_state=state) == [1.0]
    assert AdaMameReward(beta=1.0)(["q"], [FR], gold=["13"], lang=["fr"], trainer_state=state) == [2.0]


def test_rows_without_gold_are_not_applicable(reward):
    assert reward(["q"], [FR], gold=[None], lang=["fr"]) == [None]
