"""Language-coupled GRPO groups: layout and advantages against a hand computation."""

from __future__ import annotations

import math

import pytest

from components.training.coupling import coupled_units, group_advantages, plan_layout

ROWS = [{"id": "a", "lang": "en"}, {"id": "a", "lang": "fr"}, {"id": "b", "lang": "fr"}, {"id": "b", "lang": "en"},
        {"id": "c", "lang": "en"}]


def test_coupled_advantage_hand_computation():
    # Two source ids x two languages x two rollouts. Per-prompt groups would see fr of "a" alone: (0, 0).
    rewards = [1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0]
    prompt = ["a/en", "a/en", "a/fr", "a/fr", "b/en", "b/en", "b/fr", "b/fr"]
    coupled = ["a"] * 4 + ["b"] * 4
    # group a: mean 0.5, sample std sqrt(4 * 0.25 / 3); group b: mean 0.25, sample std sqrt((3 * 0.0625 + 0.5625) / 3) = 0.5
    a, b = 0.5 / (math.sqrt(1 / 3) + 1e-4), 1 / (0.5 + 1e-4)
    assert group_advantages(rewards, coupled) == pytest.approx([a, a, -a, -a, -0.25 * b, 0.75 * b, -0.25 * b, -0.25 * b])
    # uncoupled: the weak language's group has no signal at all
    assert group_advantages(rewards, prompt)[2:4] == [0.0, 0.0]
    # Dr.GRPO-style scale "none": r - group mean
    assert group_advantages(rewards, coupled, scale="none") == [0.5, 0.5, -0.5, -0.5, -0.25, 0.75, -0.25, -0.25]


def test_units_follow_language_order_and_drop_incomplete_groups():
    units, dropped = coupled_units(ROWS, "id", ["en", "fr"])
    assert units == [[0, 1], [3, 2]] and dropped == {"c": "missing fr"}
    with pytest.raises(ValueError, match="coupling key 'source'"):
        coupled_units(ROWS, "source", None)


def test_layout_group_sizes_and_batch_check():
    assert plan_layout(ROWS, "language", "group", "id", None, 2, 8).group_size == 4
    assert plan_layout(ROWS, "none", "group", "id", None, 2, 8).group_size == 2
    assert plan_layout(ROWS, "none", "batch", "id", None, 2, 8).group_size == 8   # PPO-style: one baseline
    with pytest.raises(ValueError, match="whole groups of 4 completions"):
        plan_layout(ROWS, "language", "group", "id", None, 2, 6)
