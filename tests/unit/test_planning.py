"""``polyreason plan``: what cannot do what it says is refused, naming its keys; every shipped profile plans clean.

Hand-written expectations: the τ ladder of PCS (0.1 -> 0.95 by 0.1 is nine rises, at most one per check every
``tau_interval`` steps, a check at the last step changing nothing), a model's context against the lengths asked
of it, a warm-up as long as the run, GPU-hours from the throughput table's figures worked out by hand.
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


def test_gpu_hours_from_the_throughput_table():
    facts = ModelFacts(name="m", source="test", parameters=8.03e9)
    generated = generation_hours(10**9, facts, "H100-80GB")
    # fast: 8,088 tokens/s at 8.03B; slow: 3,281 tokens/s at 7.25B, i.e. 2,962.2 tokens/s at 8.03B
    assert generated.gpu_hours == pytest.approx((10**9 / 8088 / 3600, 10**9 / (3281 * 7.25 / 8.03) / 3600))
    trained = training_hours(10**9, facts, 4, "H100-80GB", 8)  # 2 x 8.03e9 x 4 FLOPs per token, MFU 0.4 .. 0.2
    assert trained.gpu_hours == pytest.approx((6.424e19 / (989e12 * 0.4) / 3600, 6.424e19 / (989e12 * 0.2) / 3600))
    assert trained.text().endswith("(8 GPUs: 5.6–11.3 h)")


def plan_of(body: dict):
    return plan_profile(load_profile_dict({"name": "x", "project_dir": str(REPO), **body}))


def test_phi_leaves_its_floor_where_the_cosine_passes_it():
    from components.planning.schedules import phi_start

    # (1 - cos(pi t / 180)) / 2 > 0.1  <=>  t > 180 / pi x arccos(0.8) = 36.9
    assert (phi_start(180, 0.1), phi_start(2, 0.1), phi_start(0, 0.1)) == (37, 1, None)


def test_a_warmup_as_long_as_the_run_is_refused():
    body = {"sft": {"max_steps": 3, "warmup_steps": 3}, "data": {"languages": ["fr"], "traces": {
        "from_file": "../shared/data/mgsm/exemplars.json"}}}
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
    assert plan["problems"] == [] and len(plan["gpu_hours_estimate"]) == 2


@pytest.mark.parametrize("path", sorted((REPO / "profiles").glob("*.yaml")), ids=lambda p: p.stem)
def test_every_shipped_profile_plans_clean(path):
    plan = plan_profile(load_profile(path).model_copy(update={"project_dir": str(REPO)}))
    assert [str(problem) for problem in plan.problems] == []
