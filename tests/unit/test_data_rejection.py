"""Rejection-sampling strategies (AdaMame table 8), selection, per-language cap, validation split."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from components.data.rejection import (
    REJECTION_STRATEGIES, get_strategy, in_query_language, outcomes, select, selection_summary, split_train_validation,
)

T, F = True, False


@pytest.mark.parametrize(("name", "correct", "in_language", "keep"), [
    ("zero_one_filter", [T, F, F, F, F, F, F, F], [T] * 8, True),
    ("zero_one_filter", [T] * 7 + [F], [F] * 8, True),
    ("zero_one_filter", [T] * 8, [T] * 8, False),
    ("zero_one_filter", [F] * 8, [T] * 8, False),
    ("zero_one_filter", [], [], False),
    ("random", [], [], True),
    ("conditional", [F], [T], True),
    ("conditional", [T], [T], False),
    ("conditional", [F], [F], False),
    ("conditional", [], [], False),
])
def test_strategy_keep(name, correct, in_language, keep):
    assert REJECTION_STRATEGIES[name].keep(correct, in_language) is keep


def test_rollouts_needed_and_unknown_name():
    names = ("zero_one_filter", "random", "conditional", "unsolved")
    assert [REJECTION_STRATEGIES[n].rollouts(8) for n in names] == [8, 0, 1, 8]
    with pytest.raises(ValueError, match="known: conditional, random, unsolved, zero_one_filter"):
        get_strategy("best_of_n")


@dataclass
class V:
    correct: bool


class StubDetector:
    def detect(self, text, *, clean=True):
        return "fr" if "chat" in text else "en"


def test_outcomes_select_split_summary():
    rows = [{"id": f"q{i}", "lang": "fr", "gold": "1"} for i in range(4)]
    rollouts = [["<think>chat</think>\\boxed{1}", "<think>cat</think>\\boxed{2}"],  # 1 of 2 correct
                ["\\boxed{1}", "\\boxed{1}"], ["\\boxed{2}", "\\boxed{2}"],
                ["<think>chat</think>\\boxed{2}", "<think>chat</think>\\boxed{1}"]]
    verifier = lambda text, gold, lang: V(text.endswith("{1}"))  # noqa: E731
    rolls = outcomes(rows, rollouts, StubDetector(), verifier)
    assert [(r["id"], r["correct"], r["in_language"]) for r in rolls[:2]] == [("q0", T, T), ("q0", F, F)]
    selected = select(rows, rolls, REJECTION_STRATEGIES["zero_one_filter"])
    assert [(r["id"], r["num_correct"], r["num_rollouts"]) for r in selected] == [("q0", 1, 2), ("q3", 1, 2)]
    train, val = split_train_validation(selected, per_language=5, validation_per_language=1, seed=0)
    assert len(train) == 1 and len(val) == 1 and {train[0]["id"], val[0]["id"]} == {"q0", "q3"}
    summary = selection_summary(rows, selected, train, val, rolls, ["fr", "ja"])
    assert summary["fr"] == {"queries": 4.0, "selected": 2.0, "train": 1.0, "validation": 1.0, "rollouts": 8.0,
                             "rollout_accuracy": 0.5, "rollout_in_language": 0.375}
    assert summary["ja"]["queries"] == 0.0


def test_conditional_uses_the_single_rollout():
    rows = [{"id": "a", "lang": "fr"}, {"id": "b", "lang": "fr"}]
    rolls = [{"id": "a", "lang": "fr", "correct": F, "in_language": T},
             {"id": "b", "lang": "fr", "correct": F, "in_language": F}]
    assert [r["id"] for r in select(rows, rolls, get_strategy("conditional"))] == ["a"]
    assert in_query_language("<think>le chat</think>x", "fr", StubDetector())


def test_cap_and_validation_per_language():
    rows = [{"lang": lang, "i": i} for lang in ("fr", "ja") for i in range(10)]
    train, val = split_train_validation(rows, per_language=3, validation_per_language=2, seed=7)
    assert sorted(r["lang"] for r in train) == ["fr"] * 3 + ["ja"] * 3
    assert sorted(r["lang"] for r in val) == ["fr"] * 2 + ["ja"] * 2
    assert not {(r["lang"], r["i"]) for r in train} & {(r["lang"], r["i"]) for r in val}
    assert (train, val) == split_train_validation(rows, 3, 2, seed=7)


def test_profile_checks_strategy_backends_and_policy():
    from components.config import load_profile_dict
    from components.settings import ProfileError

    profile = {"name": "t", "data": {
        "source": {"path": "x.jsonl"}, "languages": ["fr"],
        "traces": {"model": {"backend": "nope"}},
        "rejection": {"strategy": "best_of_n"}}}
    with pytest.raises(ProfileError) as error:
        load_profile_dict(profile)
    message = str(error.value)
    assert "data.rejection.strategy: unknown rejection strategy 'best_of_n'" in message
    assert "data.traces.model.backend: unknown backend 'nope'" in message
    profile["data"]["traces"]["model"]["backend"] = "fake"
    profile["data"]["rejection"]["strategy"] = "conditional"
    with pytest.raises(ProfileError) as error:
        load_profile_dict(profile)
    assert "conditional judges one rollout per query: set sampling.n to 1 (got 8)" in str(error.value)
    profile["data"]["rejection"]["sampling"] = {"n": 1}
    with pytest.raises(ProfileError, match="policy: null means the SFT model, but the profile has no sft section"):
        load_profile_dict(profile)
    profile["sft"] = {}
    assert load_profile_dict(profile).data.rejection.strategy == "conditional"


def test_english_references_are_the_policys_first_correct_english_answer(tmp_path):
    from components.data.datasets import build_rl_set, read_table, render_prompts, write_table
    from components.generation.fake import fake_completion
    from components.settings import ModelSettings, RejectionSettings

    fake = ModelSettings(backend="fake", model="fake")
    settings = RejectionSettings(strategy="random", sampling={"n": 2, "max_new_tokens": 8}, prompt={"style": "plain"},
                                 per_language=None, validation_per_language=0, english_references=True)
    english = [{"id": "a", "lang": "en", "question": "How many eggs?", "gold": "0"}]
    [prompt] = render_prompts(english, settings.prompt, fake, tmp_path)
    second = fake_completion(prompt, 1).text  # make the second sample the correct one
    gold = second.split("\\boxed{")[1].split("}")[0]
    assert gold not in fake_completion(prompt, 0).text.split("\\boxed{")[1]
    rows = [{"id": "a", "lang": "fr", "question": "Combien d'œufs ?", "gold": gold, "prompt": "P", "completion": "C",
             "source_question": "How many eggs?"},
            {"id": "b", "lang": "fr", "question": "Q ?", "gold": "1", "prompt": "P", "completion": "C",
             "source_question": None}]
    write_table(rows, tmp_path / "sft.parquet", "sft")
    build_rl_set(settings, "trusted", ["fr"], tmp_path / "sft.parquet", fake, tmp_path / "rl", tmp_path)
    found = {r["id"]: r for r in read_table(tmp_path / "rl" / "rl_train.parquet")}
    assert found["a"]["en_question"] == "How many eggs?"
    assert found["a"]["en_reference"] == second.split("<think>")[1].split("</think>")[0]
    assert not isinstance(found["b"]["en_question"], str) and not isinstance(found["b"]["en_reference"], str)
