"""PCS reward: the gate table (eqs. 2-3), the repetition rule, and the reward on real completions."""

from __future__ import annotations

import itertools

import pytest

from components.rewards.pcs import PCSReward, pcs_final_reward
from components.rewards.repetition import has_degenerate_repetition, longest_repeat, split_units

# (r_fmt, r_rep, r_acc, r_slc) -> r_final, written out by hand from eq. (2) with C = r_fmt AND r_rep
GATE_TABLE = {
    (0, 0, 0, 0): 0.0, (0, 0, 0, 1): 0.0, (0, 0, 1, 0): 0.0, (0, 0, 1, 1): 0.0,
    (0, 1, 0, 0): 0.0, (0, 1, 0, 1): 0.0, (0, 1, 1, 0): 0.0, (0, 1, 1, 1): 0.0,
    (1, 0, 0, 0): 0.0, (1, 0, 0, 1): 0.0, (1, 0, 1, 0): 0.0, (1, 0, 1, 1): 0.0,
    (1, 1, 0, 0): 0.1, (1, 1, 0, 1): 0.1, (1, 1, 1, 0): 1.0, (1, 1, 1, 1): 1.1,
}


def test_gate_table_covers_all_16_combinations():
    assert set(GATE_TABLE) == set(itertools.product((0, 1), repeat=4))


@pytest.mark.parametrize(("signals", "expected"), sorted(GATE_TABLE.items()))
def test_gate_table(signals, expected):
    fmt, rep, acc, slc_pass = (bool(s) for s in signals)
    assert pcs_final_reward(fmt, rep, acc, slc_pass) == expected


REPETITION_CASES = [
    ("Let x = 3. Then 2x = 6, so the answer is \\boxed{6}.", False),
    ("the the the", False),  # span 2 < 24
    ("0 " * 24, False),  # 24 copies of one unit: span 23
    ("0 " * 25, True),  # span 24
    ("One two three four five six seven eight nine ten. " * 3, False),  # 11 units x3: span 22
    ("One two three four five six seven eight nine ten. " * 4, True),  # span 33
    ("Wait, let me check again. " * 6, True),
    ("答えは5です。" * 5, True),  # CJK characters are units
    ("答えは5です。" * 3, False),
    ("Step 1: 2+3=5.\n\nStep 2: 5*2=10.\n\nStep 3: 10-1=9.\n\nSo \\boxed{9}.", False),
]


@pytest.mark.parametrize(("text", "degenerate"), REPETITION_CASES)
def test_repetition_rule(text, degenerate):
    assert has_degenerate_repetition(text) is degenerate


def test_repetition_helpers():
    assert split_units("ab, 卵16個") == ["ab", ",", "卵", "16", "個"]
    assert longest_repeat(list("xyzxyzxyz")) == (3, 6)
    assert longest_repeat(["a"]) == (0, 0)


FR_TRACE = ("Calculons le nombre d'œufs restants.\n\nJanet a seize œufs et en vend trois au marché.\n\n"
            "Il lui reste donc treize œufs.")
EN_STEP = "Now let me double check the subtraction in English."


@pytest.fixture(scope="module")
def reward():
    return PCSReward(tau_interval=40)


def test_reward_on_completions(reward):
    completions = [
        f"<think>{FR_TRACE}</think>La réponse est \\boxed{{13}}.",  # C, acc, SLC 1 -> 1.1
        f"<think>{FR_TRACE}\n\n{EN_STEP}</think>\\boxed{{13}}",  # SLC 3/4 >= 0.1 -> 1.1
        f"<think>{FR_TRACE}</think>\\boxed{{12}}",  # wrong -> 0.1
        f"{FR_TRACE} \\boxed{{13}}",  # no think block -> gate fails -> 0
        f"<think>{FR_TRACE}</think>La réponse est 13.",  # no boxed answer -> 0
        f"<think>{'Wait, let me check again. ' * 6}</think>\\boxed{{13}}",  # repetition -> 0
    ]
    logged = {}
    out = reward(["q"] * 6, completions, gold=["13"] * 6, lang=["fr"] * 6,
                 log_metric=lambda name, value: logged.__setitem__(name, value))
    assert out == [1.1, 1.1, 0.1, 0.0, 0.0, 0.0]
    assert (reward.curriculum.passed, reward.curriculum.eligible) == (2, 2)
    assert logged["reward/r_rep"] == pytest.approx(5 / 6)
    assert logged["reward/r_fmt"] == pytest.approx(4 / 6)  # rows 4 and 5 fail format
    assert logged["curriculum/tau"] == 0.1 and logged["curriculum/pass_at_slc_batch"] == 1.0


def test_slc_threshold_follows_tau():
    reward = PCSReward()
    reward.curriculum.tau = 0.95
    completion = f"<think>{FR_TRACE}\n\n{EN_STEP}</think>\\boxed{{13}}"  # SLC = 0.75
    assert reward(["q"], [completion], gold=["13"], lang=["fr"]) == [1.0]
    assert (reward.curriculum.passed, reward.curriculum.eligible) == (0, 1)


def test_think_block_optional_for_non_thinking_models():
    reward = PCSReward(require_think=False, extraction="lenient")
    assert reward(["q"], [f"{FR_TRACE} \\boxed{{13}}"], gold=["13"], lang=["fr"]) == [1.1]
    with pytest.raises(ValueError, match="would never find an answer; set extraction lenient"):
        PCSReward(require_think=False)


def test_a_truncated_rollout_earns_no_accuracy():
    reward = PCSReward()
    truncated = f"<think>{FR_TRACE} \\boxed{{13}}"  # cut off before </think>
    assert reward(["q"], [truncated, f"<think>{FR_TRACE}</think>\\boxed{{13}}"], gold=["13"] * 2,
                  lang=["fr"] * 2) == [0.0, 1.1]


def test_pass_at_slc_window_is_a_reward_parameter():
    from components.rewards import build_reward

    assert build_reward("pcs", {"tau_window": "batch"}).curriculum.window == "batch"
    assert build_reward("pcs", {"tau_window": "pooled"}).curriculum.window == "pooled"
    assert build_reward("pcs").curriculum.window == "batch"  # the paper's rule: Pass@SLC of the last batch


# ---------------------------------------------------------------- the curriculum ablation: a continuous SLC bonus

# (r_fmt, r_rep, r_acc, SLC) -> r_final, by hand: eq. (2)'s gate and levels with the bonus 0.1 x SLC
CONTINUOUS_TABLE = [
    ((1, 1, 1, 1.0), 1.1), ((1, 1, 1, 0.75), 1.075), ((1, 1, 1, 0.5), 1.05), ((1, 1, 1, 0.0), 1.0),
    ((1, 1, 1, None), 1.0),  # no step with letters: nothing to pay a bonus for
    ((1, 1, 0, 1.0), 0.1), ((1, 1, 0, None), 0.1), ((0, 1, 1, 1.0), 0.0), ((1, 0, 1, 1.0), 0.0), ((0, 0, 0, 0.0), 0.0),
]


@pytest.mark.parametrize(("signals", "expected"), CONTINUOUS_TABLE)
def test_continuous_slc_reward_table(signals, expected):
    from components.rewards.pcs import pcs_continuous_reward

    fmt, rep, acc, slc = signals
    assert pcs_continuous_reward(bool(fmt), bool(rep), bool(acc), slc) == expected


def test_continuous_slc_reward_on_completions():
    """The same completions as the curriculum pays 1.1 for both: the bonus now follows SLC (1 and 3/4)."""
    from components.rewards import build_reward

    continuous = build_reward("pcs", {"slc_reward": "continuous"}, languages=["fr"])
    completions = [f"<think>{FR_TRACE}</think>\\boxed{{13}}", f"<think>{FR_TRACE}\n\n{EN_STEP}</think>\\boxed{{13}}",
                   f"<think>{FR_TRACE}</think>\\boxed{{12}}", f"{FR_TRACE} \\boxed{{13}}"]
    logged = {}
    out = continuous(["q"] * 4, completions, gold=["13"] * 4, lang=["fr"] * 4,
                     log_metric=lambda name, value: logged.__setitem__(name, value))
    assert out == [1.1, 1.075, 0.1, 0.0]
    assert continuous.curriculum is None and "curriculum/tau" not in logged
    assert logged["reward/slc_bonus"] == pytest.approx((0.1 + 0.075) / 2)  # over the two gated correct ones
    assert PCSReward()(["q"] * 2, completions[:2], gold=["13"] * 2, lang=["fr"] * 2) == [1.1, 1.1]


@pytest.mark.parametrize(("params", "message"), [
    ({"slc_reward": "continuous", "tau_interval": 2}, "tau_interval: read by slc_reward curriculum only"),
    ({"slc_reward": "continuous", "tau_start": 0.2, "tau_window": "pooled"}, "tau_start, tau_window: read by"),
    ({"slc_reward": "smooth"}, "slc_reward 'smooth' is unknown (known: curriculum, continuous)"),
    ({"require_think": False}, "would never find an answer; set extraction lenient"),
])
def test_parameters_that_cannot_work_together_are_refused_when_the_profile_loads(params, message):
    from components.config import load_profile_dict
    from components.settings import ProfileError

    profile = {"name": "p", "grpo": {"model": {"model": "m"}, "dataset": "d.jsonl",
                                     "rewards": [{"name": "pcs", "params": params}]}}
    with pytest.raises(ProfileError) as error:
        load_profile_dict(profile)
    assert message in str(error.value) and "grpo.rewards.0" in str(error.value)


def test_the_cpu_ablation_override_loads():
    """The override the CPU GRPO profile's header gives for the ablation."""
    from pathlib import Path

    from components.config import load_profile
    from components.rewards import build_reward

    path = Path(__file__).resolve().parents[2] / "profiles" / "cpu-grpo.yaml"
    override = "grpo.rewards.0.params={require_think: false, extraction: lenient, slc_reward: continuous}"
    assert override in path.read_text(encoding="utf-8")
    (reward,) = load_profile(path, [override]).grpo.rewards
    assert build_reward(reward.name, reward.params).curriculum is None
