"""The coupled-group seam pinned against trl's own GRPO advantage (real ``GRPOTrainer``, tiny model).

The seam changes only the layout of a generation batch and the trainer's
``num_generations``; trl computes the advantage. These tests score one batch
with scripted rewards and compare trl's advantages with ``group_advantages``:
on an uncoupled batch trl's plain trainer, our subclass and the specification
agree; on a coupled batch the subclass normalizes over the multilingual group;
the PPO-style ablation uses one baseline for the batch.
"""

from __future__ import annotations

import pytest

from components.training.coupling import (
    GroupLayout, UnitSampler, group_advantages, grouped_trainer_class, plan_layout,
)

ROWS = [{"id": f"s{i}", "lang": lang, "prompt": f"Question {i} ({lang})?", "gold": "1"}
        for i in range(2) for lang in ("en", "fr")]
REWARDS = [1.0, 0.5, 0.0, 0.0, 0.25, 1.0, 0.0, 0.5]  # one value per completion of the batch, in batch order


def scripted_reward(prompts, completions, **kwargs):
    return list(REWARDS[: len(completions)])


def make_trainer(tiny_model_dir, tmp_path, layout=None, log_languages=True):
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    args = GRPOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, report_to=[], num_generations=2,
                      per_device_train_batch_size=8, max_completion_length=4, disable_tqdm=True, seed=0,
                      scale_rewards="group")
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir, padding_side="left")
    kwargs = dict(model=model, reward_funcs=scripted_reward, args=args, train_dataset=Dataset.from_list(ROWS),
                  processing_class=tokenizer)
    trainer = grouped_trainer_class()(layout=layout, log_languages=log_languages, **kwargs) if layout \
        else GRPOTrainer(**kwargs)
    trainer.model.train()  # trl reads the training-mode group size only in train mode
    return trainer


def first_batch(trainer) -> list[dict]:
    order = list(trainer._get_train_sampler())[: trainer.args.generation_batch_size]
    return [dict(ROWS[i]) for i in order]


def advantages(trainer, batch) -> list[float]:
    return trainer._generate_and_score_completions(batch)["advantages"].tolist()


@pytest.fixture(scope="module")
def plain(tiny_model_dir, tmp_path_factory):
    return make_trainer(tiny_model_dir, tmp_path_factory.mktemp("plain"))


def test_uncoupled_batch_matches_trl(plain, tiny_model_dir, tmp_path):
    batch = first_batch(plain)
    expected = group_advantages(REWARDS, [f"{r['id']}/{r['lang']}" for r in batch])
    assert advantages(plain, batch) == pytest.approx(expected, abs=1e-5)
    ours = make_trainer(tiny_model_dir, tmp_path, plan_layout(ROWS, "none", "group", "id", None, 2, 8),
                        log_languages=False)  # as components.training.grouped_trainer builds it uncoupled
    assert list(ours._get_train_sampler()) == list(plain._get_train_sampler())  # same order as trl's sampler
    assert advantages(ours, batch) == pytest.approx(expected, abs=1e-5)
    assert not [k for k in ours._metrics["train"] if k.startswith("coupling/")]  # coupling off: nothing logged
    logging = make_trainer(tiny_model_dir, tmp_path, plan_layout(ROWS, "none", "group", "id", None, 2, 8))
    advantages(logging, batch)
    assert set(k for k in logging._metrics["train"] if k.startswith("coupling/")) == {
        "coupling/advantage/en", "coupling/advantage/fr", "coupling/reward/en", "coupling/reward/fr"}


def test_coupled_batch_normalizes_over_languages(tiny_model_dir, tmp_path):
    trainer = make_trainer(tiny_model_dir, tmp_path, plan_layout(ROWS, "language", "group", "id", ["en", "fr"], 2, 8))
    batch = first_batch(trainer)
    assert [r["lang"] for r in batch[:4]] == ["en", "en", "fr", "fr"] and len({r["id"] for r in batch[:4]}) == 1
    got = advantages(trainer, batch)
    assert got == pytest.approx(group_advantages(REWARDS, [r["id"] for r in batch]), abs=1e-5)
    assert got != pytest.approx(group_advantages(REWARDS, [f"{r['id']}/{r['lang']}" for r in batch]), abs=1e-3)


def test_batch_baseline_ablation(tiny_model_dir, tmp_path):
    trainer = make_trainer(tiny_model_dir, tmp_path, plan_layout(ROWS, "none", "batch", "id", None, 2, 8))
    batch = first_batch(trainer)
    assert advantages(trainer, batch) == pytest.approx(group_advantages(REWARDS, ["all"] * 8), abs=1e-5)


def test_sampler_lays_groups_out_contiguously():
    layout = GroupLayout(units=[[0, 1], [3, 2]], rollouts=2, group_size=4)
    assert list(UnitSampler(layout, units_per_batch=2, repeat_count=1, shuffle=False, seed=0)) == [0, 0, 1, 1, 3, 3,
                                                                                                    2, 2]
    assert len(UnitSampler(layout, units_per_batch=1, repeat_count=2, shuffle=True, seed=3)) == 16
