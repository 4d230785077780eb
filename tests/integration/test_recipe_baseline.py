"""The recipe's comparison baseline is checked against the stages a run actually evaluates, before any stage runs."""

from __future__ import annotations

import pytest

from components.config import load_profile_dict
from flows.recipe_plan import RecipePlan

PROFILE = {"name": "baseline", "data": {"languages": ["en"], "traces": {"from_file": "traces.jsonl"}}, "sft": {}, "grpo": {"dataset": "rl.jsonl"},
           "evaluation": {"benchmarks": [{"name": "mgsm", "languages": ["en"]}]}}


def plan(baseline: str, stages: list[str] | None) -> RecipePlan:
    profile = load_profile_dict(PROFILE, [f"evaluation.baseline={baseline}"])
    return RecipePlan.of(profile, stages, "sqlite:///unused.db")


def test_each_stage_subset_evaluates_its_own_models_and_the_baseline_must_be_one_of_them():
    assert plan("grpo", None).evaluated() == ["base", "sft", "grpo"]
    assert plan("previous", ["evaluation"]).evaluated() == ["base"]
    assert plan("sft", ["sft", "evaluation"]).evaluated() == ["base", "sft"]
    assert plan("grpo", ["data", "sft"]).evaluated() == []  # no evaluation, no comparison to refuse
    with pytest.raises(ValueError, match=r"evaluation.baseline 'sft' is not evaluated by this run \(it evaluates base"):
        plan("sft", ["evaluation"])
