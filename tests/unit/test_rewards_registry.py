"""Contract test over every registered reward (trl 1.16 reward-function contract)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from components.rewards import REWARDS, build_reward, reward_parameter_problems, reward_parameters

COMPLETION = "<think>Janet a seize œufs et en vend trois, il en reste treize.</think>La réponse est \\boxed{13}."
CORRECT = {"lcrl": "<think>Seize moins trois.</think><answer>treize</answer>"}  # search-QA rewards read <answer>
# c3Recall gives a gold shorter than three characters ("13") no 3-gram, hence 0 (LcRL's scorer): a word gold
GOLD = {"lcrl": "treize"}
NO_VERIFIER = {"lcrl"}  # judged by answer-string overlap (components.metrics.qa), not by a verifier


@pytest.mark.parametrize("name", sorted(REWARDS))
@pytest.mark.parametrize("chat", [False, True], ids=["standard", "conversational"])
def test_reward_contract(name, chat):
    reward = build_reward(name, {}, languages=["fr"])
    correct = CORRECT.get(name, COMPLETION)
    completions = [correct, "no answer at all", correct]
    prompts = ["Combien ?"] * 3
    if chat:
        completions = [[{"role": "assistant", "content": c}] for c in completions]
        prompts = [[{"role": "user", "content": p}] for p in prompts]
    logged: list[tuple[str, float]] = []
    out = reward(prompts=prompts, completions=completions, completion_ids=[[1], [2], [3]],
                 trainer_state=SimpleNamespace(global_step=5, max_steps=10),
                 log_extra=lambda column, values: None, log_metric=lambda n, v: logged.append((n, v)),
                 gold=[GOLD.get(name, "13")] * 2 + [None], lang=["fr", "fr", "fr"], id=["a", "b", "c"])
    assert reward.__name__ == name  # trl names its metrics rewards/<__name__>/mean
    assert len(out) == 3
    assert all(isinstance(v, float) and math.isfinite(v) for v in out[:2])
    assert out[0] > out[1] and out[2] is None  # correct beats no answer; no gold -> not applicable
    assert logged and all("@" not in n and "&" not in n and isinstance(v, float) for n, v in logged)


@pytest.mark.parametrize("name", sorted(REWARDS))
def test_factories_take_explicit_keywords_only(name):
    params = reward_parameters(name)
    assert ("verifier" in params or name in NO_VERIFIER) and "languages" in params
    assert reward_parameter_problems(name, {"no_such_parameter": 1})


def test_unknown_reward():
    assert reward_parameter_problems("nope", {}) == ["unknown reward 'nope' (known: accuracy, adamame, lcrl, mthinker, pcs, softlc)"]
    with pytest.raises(ValueError):
        build_reward("pcs", {"tau_strat": 0.3})
