"""LcRL's answer reward and anti-consistency penalty against hand-computed values."""

from __future__ import annotations

import pytest

from components.metrics.qa import c3_recall, exact_match, flexible_exact_match, normalize_answer
from components.rewards.lcrl import LcRLReward, anti_consistency_penalties, answer_similarity, total_rewards

C3_CASES = [
    # prediction, golds, expected c3Recall (distinct 3-grams of the gold found in the prediction / gold's 3-grams)
    ("Paris", ["Paris"], 1.0),
    ("Parfum", ["Paris"], 1 / 3),             # par | ari, ris
    ("the city of paris", ["Paris"], 1.0),    # recall: extra words cost nothing
    ("Canberra", ["Canbera"], 4 / 5),         # gold can, anb, nbe, ber, era; era missing (canberra: err, rra)
    ("Tokio", ["Tokyo", "Tokio"], 1.0),       # best alias
    ("Tokio", ["Tokyo"], 1 / 3),              # tok | oky, kyo
    ("東京都です", ["東京都"], 1.0),
    ("京都", ["東京都"], 0.0),                 # no 3-gram of 東京都 in a two-character prediction
    # golds shorter than 3 characters after normalization have no 3-gram: 0 whatever the prediction, as the
    # released scorer (recall of an empty 3-gram set), so only a longer alias can earn c3Recall
    ("東京", ["東京"], 0.0),
    ("13", ["13"], 0.0),
    ("it is 13", ["13"], 0.0),
    ("東京です", ["東京", "東京都"], 0.0),      # 東京: none; 東京都's one 3-gram is not in {東京で, 京です}
    ("東京都です", ["東京", "東京都"], 1.0),    # 東京 scores 0, 東京都's one 3-gram {東京都} is found
    ("Rome", ["Rom", "ro"], 1.0),              # "rom" has one 3-gram, found in "rome"; "ro" has none
    ("1989年", ["1989"], 1.0),
    ("", ["Paris"], 0.0),
    (None, ["Paris"], 0.0),
    ("LE CAIRE!", ["Le Caire"], 1.0),         # normalization: case, punctuation
]


@pytest.mark.parametrize("prediction, golds, expected", C3_CASES)
def test_c3_recall(prediction, golds, expected):
    assert c3_recall(prediction, golds) == pytest.approx(expected)


@pytest.mark.parametrize("prediction, golds, em, fem", [
    ("Paris", ["paris"], 1.0, 1.0),
    ("It is Paris.", ["Paris"], 0.0, 1.0),
    ("Lyon", ["Paris"], 0.0, 0.0),
    ("東京 都", ["東京都"], 1.0, 1.0),
    (None, ["Paris"], 0.0, 0.0),
])
def test_exact_and_flexible_match(prediction, golds, em, fem):
    assert exact_match(prediction, golds) == em and flexible_exact_match(prediction, golds) == fem


def test_normalization():
    assert normalize_answer("«Léonard de Vinci»") == "léonard de vinci"
    assert normalize_answer("Ｔｏｋｙｏ") == "tokyo"  # NFKC folds full-width letters


def test_similarity_is_the_mean_of_both_directed_overlaps():
    # "paris" {par, ari, ris}, "parisien" {par, ari, ris, isi, sie, ien}: 3 shared -> (3/3 + 3/6) / 2
    assert answer_similarity("paris", "parisien") == pytest.approx(0.75)
    assert answer_similarity("", "paris") == 0.0


def test_penalty_hand_computed_group():
    answers = ["paris", "parisien", "paris", "rome", "tokyo"]
    rewards = [0.0, 0.1, 0.2, 0.3, 0.9]  # tau_bad 0.4: the first four are bad, 5 is good
    # w = min(1, 4/5) = 0.8; m: paris->paris 1.0, parisien->paris 0.75, paris->paris 1.0, rome -> 0
    # p = max(0, m - 0.5): 0.5, 0.25, 0.5, 0 -> r_anti = -p * w
    assert anti_consistency_penalties(answers, rewards, ["q"] * 5) == pytest.approx([-0.4, -0.2, -0.4, 0.0, 0.0])


def test_penalty_clip_and_groups():
    answers = ["paris"] * 4
    # margin 0: p = 1.0, w = min(1, 4/2) = 1 -> -1.0, clipped to -0.5
    assert anti_consistency_penalties(answers, [0.0] * 4, ["a"] * 4, margin=0.0, group_scale=2) == [-0.5] * 4
    # two groups of two: each bad answer has one bad partner of its own group
    got = anti_consistency_penalties(answers, [0.0] * 4, ["a", "a", "b", "b"], margin=0.0, group_scale=2)
    assert got == [-0.5] * 4
    # a lone bad answer in its group is not penalized
    assert anti_consistency_penalties(answers, [0.0, 1.0, 1.0, 1.0], ["a"] * 4) == [0.0] * 4


def test_total_reward_floor():
    # r_total = max(0, r_ans + lambda * penalty)
    assert total_rewards([0.1, 0.3, 1.0], [-0.5, -0.5, 0.0], penalty_weight=0.5) == pytest.approx([0.0, 0.05, 1.0])


def test_reward_end_to_end_on_completions():
    reward = LcRLReward(penalty_weight=1.0, margin=0.0, group_scale=1.0)
    completions = ["<search>x</search><information>Paris</information><answer>Paris</answer>",
                   "<answer>Parfum</answer>", "<answer>Parfum</answer>", "no answer"]
    logged = {}
    out = reward(prompts=["p"] * 4, completions=completions, gold=["Paris"] * 4, lang=["fr"] * 4,
                 group=["g"] * 4, search_calls=[1, 0, 0, 0], log_metric=lambda k, v: logged.__setitem__(k, v))
    # r_ans: 1, 1/3, 1/3, 0. Bad (< 0.4): 2, 3, 4; Parfum~Parfum 1.0 -> -1 -> clip -0.5; "no answer" has none -> 0
    assert out == pytest.approx([1.0, 0.0, 0.0, 0.0])   # max(0, 1/3 - 0.5) = 0
    assert logged["lcrl/fem/fr"] == pytest.approx(0.25) and logged["search/calls/fr"] == pytest.approx(0.25)
    assert logged["lcrl/answered/fr"] == pytest.approx(0.75)


def test_exact_match_ablation_and_missing_gold():
    reward = LcRLReward(answer_metric="exact_match")
    out = reward(prompts=["p"] * 3, completions=["<answer>Paris</answer>", "<answer>Pari</answer>", "x"],
                 answers=[["Paris", "Lutèce"], ["Paris"], []])
    assert out == [1.0, 0.0, None]


def test_at_the_released_weight_the_penalty_moves_a_reward_by_at_most_a_hundredth():
    """The most penalized case by hand: five identical bad answers (m = 1, p = 1 - 0.5 = 0.5, w = min(1, 5/5) = 1,
    r_anti = -0.5) with r_ans = c3Recall("Paris", "Parme") = |{par}| / |{par, arm, rme}| = 1/3 < tau_bad 0.4:
    r_total = 1/3 - 0.02 * 0.5 at lambda 0.02, 1/3 at lambda 0 (the "w/o Lc reward" run)."""
    completions = ["<answer>Paris</answer>"] * 5
    def rewards(weight):
        return LcRLReward(penalty_weight=weight)(prompts=["p"] * 5, completions=completions, gold=["Parme"] * 5,
                                                 group=["g"] * 5)
    assert rewards(0.02) == pytest.approx([1 / 3 - 0.01] * 5)
    assert rewards(0.0) == pytest.approx([1 / 3] * 5)
