"""``polyreason plan``: what cannot do what it says is refused, naming its keys; every shipped profile plans clean.

Hand-written expectations: the τ ladder of PCS (0.1 -> 0.95 by 0.1 is nine rises, at most one per check every
``tau_interval`` steps, a check at the last step changing nothing), a model's context against the lengths asked
of it, a warm-up as long as the run, GPU-hours on a made-up GPU worked out by hand, and the shipped table's invariants.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from components.config import load_profile, load_profile_dict
from components.planning import plan_profile
from components.planning.estimate import generation_hours, training_hours
from components.planning.lengths import context_lines
from components.planning.models import ModelFacts, model_facts
from components.planning.schedules import tau_plan
from components.rewards.curriculum import TauCurriculum
from components.settings import ModelSettings, ProfileError

REPO = Path(__file__).resolve().parents[2]
OLD_PCS = Path(__file__).with_name("data") / "profiles" / "qwen3-8b-pcs-grpo-84fdce4.yaml"

TAU_CASES = [  # (start, step, maximum, interval), planned steps -> (checks before the last step, τ reachable)
    ((0.1, 0.1, 0.95, 40), 78, (1, 0.2)),
    ((0.1, 0.1, 0.95, 40), 800, (19, 0.95)),
    ((0.1, 0.1, 0.95, 40), 361, (9, 0.95)),  # the ninth rise at step 360, in effect for step 361
    ((0.1, 0.1, 0.95, 40), 360, (8, 0.9)),  # the check at step 360 is the last step's: nothing follows it
    ((0.1, 0.1, 0.2, 1), 2, (1, 0.2)),
    ((0.1, 0.1, 0.1, 40), 2, (0, 0.1)),  # held at its start: nothing to reach
]


@pytest.mark.parametrize(("curriculum", "steps", "expected"), TAU_CASES)
def test_tau_reachable_in_the_planned_steps(curriculum, steps, expected):
    start, step, maximum, interval = curriculum
    planned = tau_plan(0, TauCurriculum(tau=start, delta=step, maximum=maximum, interval=interval), steps)
    assert (planned.effective_checks, planned.reachable) == expected
    assert planned.rises_needed == round((maximum - start) / step + 0.4)


VLLM = {"backend": "vllm", "model": "Qwen/Qwen3-8B-Base"}
CONTEXT_CASES = [  # model settings, new tokens -> the keys of the problems (context 32,768)
    ({**VLLM, "max_model_len": 34816}, 32768, [("evaluation.model.max_model_len",),
                                              ("evaluation.sampling.max_new_tokens", "evaluation.model.max_model_len")]),
    ({**VLLM, "max_model_len": 32768}, 30720, []),
    ({**VLLM}, 32768, [("evaluation.sampling.max_new_tokens", "evaluation.model.max_model_len")]),
    ({"backend": "transformers", "model": "Qwen/Qwen3-8B-Base", "max_model_len": 40000}, 1024, []),  # not read
]


@pytest.mark.parametrize(("model", "new_tokens", "keys"), CONTEXT_CASES)
def test_lengths_above_the_models_context_are_refused(model, new_tokens, keys):
    facts = ModelFacts(name="Qwen/Qwen3-8B-Base", source="test", context=32768)
    _, problems = context_lines("evaluation", "evaluation.model", ModelSettings(**model), new_tokens, facts,
                                "evaluation.sampling.max_new_tokens")
    assert [p.keys for p in problems] == keys


def test_an_unknown_context_is_said_not_checked():
    lines, problems = context_lines("evaluation", "evaluation.model", ModelSettings(**VLLM), 10**6,
                                    model_facts("someone/unlisted-model"), "evaluation.sampling.max_new_tokens")
    assert problems == [] and lines[0][1].startswith("unknown (unknown (not a local directory nor in models.yaml))")


def test_max_new_tokens_at_max_model_len_is_refused_when_the_profile_loads():
    with pytest.raises(ProfileError) as error:
        load_profile_dict({"name": "x", "evaluation": {"model": {"backend": "vllm", "model": "m", "max_model_len": 4096},
                                                       "sampling": {"max_new_tokens": 4096}}})
    assert "evaluation.sampling.max_new_tokens 4096 with evaluation.model.max_model_len 4096" in str(error.value)


def test_local_model_figures_come_from_its_config_and_weights(tiny_model_dir):
    import torch
    from transformers import AutoModelForCausalLM

    facts = model_facts(str(tiny_model_dir))
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    assert (facts.context, facts.layers, facts.kv_heads, facts.head_dim) == (1024, 2, 1, 32)
    assert facts.parameters == model.num_parameters()  # the tied head is stored (and counted) once
    assert facts.kv_bytes_per_token("bfloat16") == 2 * 2 * 1 * 32 * 2


TOY_TABLE = {  # a made-up GPU whose figures give round hours by hand
    "mfu": {"low": 0.25, "high": 0.5},
    "gpus": {"toy": {"bf16_tflops": 100, "decode": {"low": {"tokens_per_s": 250, "reference_parameters": 2e9},
                                                    "high": {"tokens_per_s": 1000, "reference_parameters": 1e9}}}},
}


def test_gpu_hours_worked_out_by_hand_on_a_made_up_gpu(monkeypatch):
    """A 1e9-parameter model on a GPU of 100 bf16 TFLOP/s that decodes 250 tokens/s at 2e9 parameters (500 at
    1e9) to 1000 tokens/s at 1e9, trained at 25-50% MFU:

    * generating 3.6e6 tokens: 3.6e6 / 1000 = 3,600 s = 1 h .. 3.6e6 / 500 = 7,200 s = 2 h;
    * training 3e8 tokens at 3 passes: 2 x 1e9 x 3 x 3e8 = 1.8e18 FLOPs; / (1e14 x 0.5) = 10 h .. / (1e14 x 0.25)
      = 20 h, on 4 GPUs 2.5 .. 5 h of wall-clock.
    """
    from components.planning import estimate

    monkeypatch.setattr(estimate, "throughput_table", lambda: TOY_TABLE)
    facts = ModelFacts(name="m", source="test", parameters=1e9)
    assert generation_hours(3_600_000, facts, "toy").gpu_hours == pytest.approx((1.0, 2.0))
    trained = training_hours(300_000_000, facts, 3, "toy", 4)
    assert trained.gpu_hours == pytest.approx((10.0, 20.0))
    assert trained.text() == "10.0–20.0 GPU-hours (4 GPUs: 2.5–5.0 h)"
    assert generation_hours(None, facts, "toy") is None
    with pytest.raises(ValueError, match="unknown GPU 'H100-80GB'.*known: toy"):
        generation_hours(1, facts, "H100-80GB")


def test_gpu_hours_of_the_shipped_table_grow_with_the_work_and_shrink_with_the_gpu():
    """Invariants of the shipped table that a wrong formula breaks: hours proportional to tokens and to passes,
    inversely to the GPU's speed (an H200 is not slower than an A100), the low end never above the high end."""
    facts = ModelFacts(name="m", source="test", parameters=8.03e9)
    one, two = generation_hours(10**9, facts, "H100-80GB"), generation_hours(2 * 10**9, facts, "H100-80GB")
    assert one.low <= one.high and two.gpu_hours == pytest.approx((2 * one.low, 2 * one.high))
    trained, twice = (training_hours(10**9, facts, passes, "H100-80GB", 8) for passes in (2, 4))
    assert twice.gpu_hours == pytest.approx((2 * trained.low, 2 * trained.high)) and trained.low <= trained.high
    bigger = generation_hours(10**9, ModelFacts(name="m", source="test", parameters=16.06e9), "H100-80GB")
    assert bigger.gpu_hours == pytest.approx((2 * one.low, 2 * one.high))  # twice the parameters, half the rate
    names = set(estimate_gpu_names())
    if {"A100-80GB", "H200"} <= names:
        assert training_hours(10**9, facts, 4, "H200", 1).high <= training_hours(10**9, facts, 4, "A100-80GB", 1).high


def estimate_gpu_names() -> list[str]:
    from components.planning.estimate import gpu_names

    return gpu_names()


def plan_of(body: dict):
    return plan_profile(load_profile_dict({"name": "x", "project_dir": str(REPO), **body}))


def test_phi_leaves_its_floor_where_the_cosine_passes_it():
    from components.planning.schedules import phi_start

    # (1 - cos(pi t / 180)) / 2 > 0.1  <=>  t > 180 / pi x arccos(0.8) = 36.9
    assert (phi_start(180, 0.1), phi_start(2, 0.1), phi_start(0, 0.1)) == (37, 1, None)


def test_a_warmup_as_long_as_the_run_is_refused():
    body = {"sft": {"max_steps": 3, "warmup_steps": 3}, "data": {"languages": ["fr"], "traces": {
        "from_file": "packaged:mgsm/exemplars.json"}}}
    problems = plan_of(body).problems
    assert [(p.stage, p.keys) for p in problems] == [("sft", ("sft.warmup_ratio", "sft.warmup_steps"))]
    assert "the warm-up (3 steps) lasts the whole run (3 steps)" in problems[0].message


def test_fewer_prompts_than_one_generation_batch_are_refused(tmp_path):
    data = tmp_path / "rl.jsonl"
    data.write_text("".join(json.dumps({"question": "q", "gold": "1", "lang": "fr"}) + "\n" for _ in range(3)))
    grpo = {"model": {"model": "m"}, "dataset": str(data), "per_device_train_batch_size": 8,
            "sampling": {"n": 2, "temperature": 1.0}}
    (problem,) = plan_of({"grpo": grpo}).problems
    assert problem.keys[0] == "grpo.generation_batch_size"
    assert "one generation takes 4 prompts but the dataset has 3 (grpo.dataset rl.jsonl)" in problem.message


def test_the_reward_range_is_the_weighted_sum_of_each_rewards_worked_out_by_hand(tmp_path):
    """accuracy pays 0 or 1; SoftLC with bonus 0.2 pays accuracy + 0.2 when the language matches: [0, 1.2]; weight
    -0.5 swaps its ends to [-0.6, 0]; the total is [0 - 0.6, 1 + 0] = [-0.6, 1]."""
    data = tmp_path / "rl.jsonl"
    data.write_text("".join(json.dumps({"question": "q", "gold": "1", "lang": "fr"}) + "\n" for _ in range(8)))
    rewards = [{"name": "accuracy"}, {"name": "softlc", "weight": -0.5, "params": {"bonus": 0.2}}]
    grpo = {"model": {"model": "m"}, "dataset": str(data), "rewards": rewards}
    (stage,) = [stage for stage in plan_of({"grpo": grpo}).stages if stage.stage == "grpo"]
    assert dict(stage.lines)["reward range"] == "[-0.6, 1] = 1 × accuracy [0, 1] + -0.5 × softlc [0, 1.2]"
    assert (stage.values["reward_low"], stage.values["reward_high"]) == pytest.approx((-0.6, 1.0))


def test_the_pcs_profile_as_it_was_is_refused_naming_the_curriculum_and_the_steps():
    from cli.app import app

    result = CliRunner().invoke(app, ["plan", str(OLD_PCS), "--project-dir", str(REPO)])
    assert result.exit_code == 2
    assert ("grpo.rewards.0.params.tau_max, grpo.rewards.0.params.tau_interval, grpo.num_train_epochs: the τ "
            "curriculum cannot reach 0.95 in the planned 78 optimizer steps (num_train_epochs 2 × 39 steps per epoch)"
            ) in result.stderr
    assert "1 check(s) every 40 steps raise τ at most to 0.2; 9 rises need at least 361 steps" in result.stderr
    assert "optimizer steps        78 (num_train_epochs 2 × 39 steps per epoch)" in result.stdout


def test_the_plan_as_json_names_every_stage():
    from cli.app import app

    result = CliRunner().invoke(app, ["plan", str(REPO / "profiles" / "qwen3-8b-pcs-grpo.yaml"), "--json",
                                      "--project-dir", str(REPO)])
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    assert list(plan["stages"]) == ["data", "sft", "rejection", "grpo", "evaluation"]
    grpo = plan["stages"]["grpo"]
    assert (grpo["optimizer_steps"], grpo["completions"], grpo["tau_reachable"]) == (800, 409600, 0.95)
    assert (grpo["reward_low"], grpo["reward_high"]) == (0, 1.1)  # PCS: gated, correct, SLC passed
    assert plan["problems"] == [] and len(plan["gpu_hours_estimate"]) == 2


@pytest.mark.parametrize("path", sorted((REPO / "profiles").glob("*.yaml")), ids=lambda p: p.stem)
def test_every_shipped_profile_plans_clean(path):
    plan = plan_profile(load_profile(path).model_copy(update={"project_dir": str(REPO)}))
    assert [str(problem) for problem in plan.problems] == []
