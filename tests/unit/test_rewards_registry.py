"""Contract test over every registered reward spec (trl 1.16 reward-function contract, the spec's range and parts)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from components.rewards import REWARDS, build_reward, reward_listing, reward_problems
from components.rewards.ranges import ranges_by_key

COMPLETION = "<think>Janet a seize œufs et en vend trois, il en reste treize.</think>La réponse est \\boxed{13}."
ENGLISH = "<think>Janet sells three of sixteen eggs, thirteen are left.</think>The answer is \\boxed{13}."
CORRECT = {"lcrl": "<think>Seize moins trois.</think><answer>treize</answer>"}  # search-QA rewards read <answer>
# c3Recall gives a gold shorter than three characters ("13") no 3-gram, hence 0 (LcRL's scorer): a word gold
GOLD = {"lcrl": "treize"}
NO_VERIFIER = {"lcrl"}  # judged by answer-string overlap (components.metrics.qa), not by a verifier


def call(name: str, completions: list, gold: list, chat: bool = False) -> tuple[list, dict[str, float]]:
    """The reward's values on ``completions`` (French rows) and the components it logged."""
    reward = build_reward(name, {}, languages=["fr"])
    prompts = ["Combien ?"] * len(completions)
    if chat:
        completions = [[{"role": "assistant", "content": c}] for c in completions]
        prompts = [[{"role": "user", "content": p}] for p in prompts]
    logged: dict[str, float] = {}
    out = reward(prompts=prompts, completions=completions, completion_ids=[[1]] * len(completions),
                 trainer_state=SimpleNamespace(global_step=5, max_steps=10),
                 log_extra=lambda column, values: None, log_metric=logged.__setitem__,
                 gold=gold, lang=["fr"] * len(completions), id=[str(i) for i in range(len(completions))])
    assert reward.__name__ == name  # trl names its metrics rewards/<__name__>/mean
    return out, logged


@pytest.mark.parametrize("name", sorted(REWARDS))
@pytest.mark.parametrize("chat", [False, True], ids=["standard", "conversational"])
def test_reward_contract(name, chat):
    correct = CORRECT.get(name, COMPLETION)
    out, logged = call(name, [correct, "no answer at all", correct], [GOLD.get(name, "13")] * 2 + [None], chat)
    assert len(out) == 3
    assert all(isinstance(v, float) and math.isfinite(v) for v in out[:2])
    assert out[0] > out[1] and out[2] is None  # correct beats no answer; no gold -> not applicable
    assert logged and all("@" not in n and "&" not in n and isinstance(v, float) for n, v in logged.items())


@pytest.mark.parametrize("name", sorted(REWARDS))
def test_factories_take_explicit_keywords_only(name):
    params = REWARDS[name].parameters()
    assert ("verifier" in params or name in NO_VERIFIER) and "languages" in params
    assert reward_problems(name, {"no_such_parameter": 1}) == [
        f"unknown parameter 'no_such_parameter' for reward {name!r} (known: {', '.join(params)})"]


@pytest.mark.parametrize("name", sorted(REWARDS))
def test_every_value_lies_in_the_range_its_spec_states(name):
    """The range the pilot and the plan read holds the values the reward pays (a floor is always stated)."""
    spec = REWARDS[name]
    stated = spec.range(spec.full({}))
    gold = GOLD.get(name, "13")
    out, _ = call(name, [CORRECT.get(name, COMPLETION), ENGLISH, "no answer", "<think>x</think>\\boxed{12}"],
                  [gold] * 4)
    assert stated.low is not None
    assert all(stated.low <= value and (stated.high is None or value <= stated.high) for value in out)


@pytest.mark.parametrize("name", sorted(name for name, spec in REWARDS.items() if spec.parts(spec.full({}))))
def test_the_parts_a_spec_names_are_logged_and_sum_to_the_reward(name):
    """torchtune's reward output in trl's terms: the reward is the sum of the parts it logs, each in its range."""
    spec = REWARDS[name]
    parts = spec.parts(spec.full({}))
    completions = [CORRECT.get(name, COMPLETION), ENGLISH, "no answer", ENGLISH]
    out, logged = call(name, completions, [GOLD.get(name, "13")] * 3 + ["14"])
    assert set(parts) <= set(logged)
    assert sum(logged[part] for part in parts) == pytest.approx(sum(out) / len(out))
    assert all(parts[part].low <= logged[part] <= parts[part].high for part in parts)
    assert set(ranges_by_key([(name, 1.0, {})])) >= set(parts)  # the pilot reads them under these names


def test_unknown_reward():
    (problem,) = reward_problems("nope", {})
    assert problem.startswith("unknown reward 'nope' (known: ") and all(name in problem for name in REWARDS)
    with pytest.raises(ValueError):
        build_reward("pcs", {"tau_strat": 0.3})


def test_a_parameter_that_leaves_the_range_undefined_is_refused_when_the_profile_loads():
    from components.config import load_profile_dict
    from components.settings import ProfileError

    grpo = {"model": {"model": "m"}, "dataset": "d.jsonl", "rewards": [{"name": "softlc", "params": {"bonus": "x"}}]}
    with pytest.raises(ProfileError, match=r"grpo.rewards.0: .*reward 'softlc' has no range with these parameters"):
        load_profile_dict({"name": "t", "grpo": grpo})


def test_every_module_ending_with_a_spec_is_registered_and_listed():
    """The code map leaves reward modules to their specs (``tests/unit/test_code_map.py``): a module that ends with
    a ``SPEC`` but is missing from ``REWARDS`` would be neither trained nor listed."""
    import importlib
    from pathlib import Path

    folder = Path(importlib.import_module("components.rewards").__file__).parent
    specs = {path.stem: importlib.import_module(f"components.rewards.{path.stem}").SPEC
             for path in sorted(folder.glob("*.py")) if "\nSPEC = " in path.read_text(encoding="utf-8")}
    assert specs and {stem: REWARDS.get(spec.name) is spec for stem, spec in specs.items()} == {s: True for s in specs}
    listing = "\n".join(reward_listing())
    assert all(f"components/rewards/{stem}.py: " in listing for stem in specs)
    assert "range [0, 1.1]" in listing  # softlc at its default bonus 0.1: r_acc + 0.1 * match, by hand
