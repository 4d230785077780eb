"""The paper profiles run the papers' experiments, and their CPU twins keep every switch.

Expected values are written from the papers (AdaMame §4 and appendix C; PCS "Evaluation details" and
"Progressive code-switching RL"; the verifier-bias paper §3-5; LcRL's released training script),
not read from the profiles (an evaluation's protocol is its paper's spec, ``components.reports.papers``);
where a paper is silent the profile's header says which choice was made and the spec or this module pins it.
Each check of a setting that matters loads the profile and asserts what the library will do with it (the
warm-up transformers applies, the optimizer steps trl takes).
"""

from __future__ import annotations

import inspect
import math
from pathlib import Path

import pytest
import yaml

from components.config import load_profile
from components.reports.papers import PAPERS
from components.settings import ProfileError

PROFILES = Path(__file__).resolve().parents[2] / "profiles"

PROTOCOLS = {entry.name: entry.protocol for paper in PAPERS for entry in paper.profiles if entry.protocol}
TWINS = [(entry.name, entry.twin) for paper in PAPERS for entry in paper.profiles if entry.protocol and entry.twin]


@pytest.mark.parametrize("name", sorted(PROTOCOLS))
def test_paper_profile_holds_the_protocol(name):
    """The paper's protocol as its spec writes it from the paper's text, against what the profile loads to."""
    expected = PROTOCOLS[name]
    evaluation = load_profile(PROFILES / f"{name}.yaml").evaluation
    model, sampling, scoring = evaluation.model, evaluation.sampling, evaluation.scoring
    assert (model.model, model.backend, model.chat, model.thinking) == (expected.model, expected.backend,
                                                                        expected.chat, expected.thinking)
    assert (sampling.n, sampling.temperature, sampling.top_p, sampling.max_new_tokens) == (
        expected.n, expected.temperature, expected.top_p, expected.max_new_tokens)
    assert (evaluation.prompt.style, evaluation.prompt.instruction) == expected.prompt
    assert {b.name: (b.languages, b.samples) for b in evaluation.benchmarks} == expected.benchmarks
    assert (scoring.verifier, scoring.pass_k, scoring.max_context, scoring.in_domain) == (
        expected.verifier, expected.pass_k, expected.max_context, expected.in_domain)
    assert scoring.extraction == "strict"  # the last \\boxed{} after </think>, nothing else


def test_data_missing_offline_is_read_from_the_hub():
    adamame = {b.name: b for b in load_profile(PROFILES / "qwen3-4b-adamame-evaluation.yaml").evaluation.benchmarks}
    assert adamame["mgsm_rev2"].hub_languages == ["ko"]                       # MGSM-Rev2 has no Korean
    assert (adamame["msvamp"].limit, adamame["msvamp"].selection) == (250, "sample")  # the 250-problem subset
    pcs = {b.name: b for b in load_profile(PROFILES / "qwen3-8b-pcs-evaluation.yaml").evaluation.benchmarks}
    assert pcs["mmlu_prox_math"].data_dir is None                            # MMLU-ProX: the hub only


SWITCHES = ("model.chat", "model.thinking", "sampling.temperature", "sampling.top_p", "prompt", "scoring.verifier",
            "scoring.extraction", "scoring.lcpr_rule", "scoring.lcpr_beside", "scoring.slc_threshold",
            "scoring.max_context", "scoring.slc_detector")


def _get(section, dotted: str):
    for part in dotted.split("."):
        section = getattr(section, part)
    return section


@pytest.mark.parametrize("paper, twin", TWINS)
def test_cpu_twin_keeps_every_switch_and_shrinks_the_counts(paper, twin):
    full, small = (load_profile(PROFILES / f"{name}.yaml") for name in (paper, twin))
    for switch in SWITCHES:
        assert _get(small.evaluation, switch) == _get(full.evaluation, switch), switch
    assert [b.name for b in small.evaluation.benchmarks] == [b.name for b in full.evaluation.benchmarks]
    assert [b.samples is None for b in small.evaluation.benchmarks] == [
        b.samples is None for b in full.evaluation.benchmarks]
    assert 1 < small.evaluation.sampling.n <= full.evaluation.sampling.n
    assert small.evaluation.sampling.max_new_tokens < full.evaluation.sampling.max_new_tokens
    assert len(small.evaluation.scoring.pass_k) == len(full.evaluation.scoring.pass_k)
    assert (small.audit is None) == (full.audit is None)
    if full.audit is not None:
        assert small.audit.model_dump() == full.audit.model_dump()


@pytest.mark.parametrize("path", sorted(PROFILES.glob("*-grpo.yaml")), ids=lambda p: p.stem)
def test_every_reward_of_a_shipped_grpo_profile_builds(path):
    from components.rewards import build_reward

    for reward in load_profile(path).grpo.rewards:
        built = build_reward(reward.name, reward.params, languages=["fr"])
        assert built.__name__ == reward.name
        if path.stem.startswith(("qwen3", "distill")):  # the paper recipes judge the boxed answer after </think> only
            assert (getattr(built, "accuracy", built)).extraction == "strict"


def test_pcs_recipe_is_the_papers():
    pcs = load_profile(PROFILES / "qwen3-8b-pcs-grpo.yaml")
    assert pcs.sft.model.model == pcs.grpo.model.model == "Qwen/Qwen3-8B-Base"
    assert (pcs.data.traces.language_filter, pcs.data.traces.min_slc) == ("slc", 0.1)  # code-switched cold start
    params = pcs.grpo.rewards[0].params
    assert (params["tau_start"], params["tau_step"], params["tau_interval"], params["tau_window"]) == (0.1, 0.1, 40,
                                                                                                       "batch")
    adamame = load_profile(PROFILES / "qwen3-4b-adamame-grpo.yaml")
    assert {adamame.data.traces.prompt.instruction, adamame.data.rejection.prompt.instruction,
            adamame.grpo.prompt.instruction} == {"before"}
    # "every two training batches": a batch of 512 prompts is 2 optimizer steps of 256
    assert (adamame.grpo.validation.enabled, adamame.grpo.validation.every_n_steps) == (True, 4)
    assert adamame.grpo.max_prompt_tokens == 512  # "max prompt length to 512"


# ---------------------------------------------------------------- PCS: the recipes evaluate with the protocol

PROTOCOL = ("model.chat", "model.thinking", "sampling.n", "sampling.temperature", "sampling.top_p",
            "sampling.max_new_tokens", "scoring.verifier", "scoring.extraction", "scoring.slc_threshold",
            "scoring.max_context", "scoring.pass_k", "scoring.in_domain", "scoring.slc_detector")


@pytest.mark.parametrize("recipe", ["qwen3-8b-pcs-grpo", "qwen3-4b-base-pcs-grpo", "qwen3-8b-mthinker-grpo"])
def test_pcs_recipes_evaluate_with_the_pcs_protocol(recipe):
    """The models a PCS-setting recipe trains are scored as table 2 scores them (the evaluation profile's protocol),
    under the same context limit as the Qwen3-8B row (PCS: "under the same context limit"): a Base model's context
    is 32,768 tokens (vLLM refuses a longer max_model_len), so every row gets 30,720 new tokens, leaving 2,048 for
    the prompt."""
    protocol = load_profile(PROFILES / "qwen3-8b-pcs-evaluation.yaml").evaluation
    evaluation = load_profile(PROFILES / f"{recipe}.yaml").evaluation
    assert evaluation is not None
    for switch in PROTOCOL:
        assert _get(evaluation, switch) == _get(protocol, switch), switch
    assert evaluation.model.model.endswith("-Base")
    assert (evaluation.model.max_model_len, evaluation.sampling.max_new_tokens) == (32768, 30720)
    assert (protocol.model.max_model_len, protocol.sampling.max_new_tokens) == (32768, 30720)
    assert evaluation.scoring.max_context == protocol.scoring.max_context
    assert [(b.name, b.languages, b.samples) for b in evaluation.benchmarks] == [
        (b.name, b.languages, b.samples) for b in protocol.benchmarks]
    assert evaluation.model.max_model_len >= evaluation.sampling.max_new_tokens  # the 32,768 tokens fit


def test_pcs_evaluation_rows_are_the_prompts_the_paper_names():
    """Default: table 2's "Qwen3-8B" row (no instruction); the overrides in the header give the control rows."""
    path = PROFILES / "qwen3-8b-pcs-evaluation.yaml"
    assert load_profile(path).evaluation.prompt.style == "plain"
    prompt = load_profile(path, ["evaluation.prompt.style=instruction"]).evaluation.prompt
    assert (prompt.style, prompt.instruction) == ("instruction", "after")   # Prompt Control: after the question
    prefix = load_profile(path, ["evaluation.prompt.style=prefix", "evaluation.prompt.instruction=none"])
    assert (prefix.evaluation.prompt.style, prefix.evaluation.prompt.instruction) == ("prefix", "none")
    header = path.read_text(encoding="utf-8")
    assert "evaluation.prompt.style=instruction" in header and "evaluation.prompt.instruction=none" in header


# ---------------------------------------------------------------- PCS / M-Thinker: long enough for the τ curriculum


def processes(accelerate_config: str) -> int:
    """``num_processes`` of a shipped accelerate config (the devices trl splits a step over)."""
    from components.training.runner import accelerate_config_path

    data = yaml.safe_load(accelerate_config_path(accelerate_config).read_text(encoding="utf-8"))
    return int(data.get("num_processes", 1))


def optimizer_steps(grpo, rl_rows: int) -> tuple[int, int]:
    """(prompts per optimizer step, optimizer steps) as trl 1.16 and transformers schedule them.

    One optimizer step is ``per_device_train_batch_size × processes × gradient_accumulation_steps``
    completions, i.e. that over ``num_generations`` prompts. trl's ``RepeatSampler`` hands out whole
    generation batches of ``generation_batch_size / num_generations`` prompts and drops an incomplete last one;
    each generation batch feeds ``steps_per_generation`` micro-batches. ``max_steps`` > 0 wins over epochs.
    """
    devices = processes(grpo.accelerate_config)
    per_step = grpo.per_device_train_batch_size * devices * grpo.gradient_accumulation_steps
    generation = grpo.generation_batch_size or per_step
    steps_per_generation = generation // (grpo.per_device_train_batch_size * devices)
    prompts_per_step = per_step // grpo.sampling.n
    if grpo.max_steps > 0:
        return prompts_per_step, grpo.max_steps
    batches = rl_rows // (generation // grpo.sampling.n)
    per_epoch = batches * steps_per_generation // grpo.gradient_accumulation_steps
    return prompts_per_step, math.ceil(per_epoch * grpo.num_train_epochs)


def rises_to_the_top(params: dict) -> int:
    """Checks τ must pass to climb from tau_start to tau_max (PCS: 0.1 -> 0.95 by 0.1, capped: 9)."""
    defaults = {name: p.default for name, p in inspect.signature(
        __import__("components.rewards.pcs", fromlist=["PCSReward"]).PCSReward).parameters.items()}
    start, step, top = (params.get(k, defaults[k]) for k in ("tau_start", "tau_step", "tau_max"))
    return math.ceil(round((top - start) / step, 6))


# profile -> (prompts per optimizer step, optimizer steps): hand-computed from the header's arithmetic
# (16 per device x 8 GPUs x 4 accumulation steps = 512 completions = 64 prompts x 8; max_steps 800)
RL_RUNS = {"qwen3-8b-pcs-grpo": (64, 800), "qwen3-4b-base-pcs-grpo": (64, 800), "qwen3-8b-mthinker-grpo": (64, 800)}


@pytest.mark.parametrize("name", sorted(RL_RUNS))
def test_rl_runs_take_the_steps_their_header_says(name):
    profile = load_profile(PROFILES / f"{name}.yaml")
    rows = profile.data.rejection.per_language * len(profile.data.languages)   # 1,000 x 5 = the 5,000-query RL set
    assert optimizer_steps(profile.grpo, rows) == RL_RUNS[name]
    grpo = profile.grpo   # one generation batch per optimizer step: Pass@SLC's batch is one step's rollouts
    assert grpo.generation_batch_size == (grpo.per_device_train_batch_size * processes(grpo.accelerate_config)
                                          * grpo.gradient_accumulation_steps)


@pytest.mark.parametrize("name", ["qwen3-8b-pcs-grpo", "qwen3-4b-base-pcs-grpo"])
def test_pcs_run_is_long_enough_for_the_tau_curriculum(name):
    """τ climbs at most once per check every k steps: 0.1 -> 0.95 needs 9 passing checks, 360 steps at k = 40."""
    profile = load_profile(PROFILES / f"{name}.yaml")
    params = profile.grpo.rewards[0].params
    rows = profile.data.rejection.per_language * len(profile.data.languages)
    _, steps = optimizer_steps(profile.grpo, rows)
    assert rises_to_the_top(params) == 9
    assert steps // params["tau_interval"] >= 2 * rises_to_the_top(params)   # room for checks that do not pass


def test_mthinker_baseline_trains_with_the_pcs_budget():
    """PCS reproduces M-Thinker in its own setting: the same rollouts per step and the same number of steps."""
    pcs, mthinker = (load_profile(PROFILES / f"{name}.yaml").grpo for name in ("qwen3-8b-pcs-grpo",
                                                                              "qwen3-8b-mthinker-grpo"))
    budget = ("per_device_train_batch_size", "gradient_accumulation_steps", "generation_batch_size", "max_steps",
              "num_train_epochs", "accelerate_config")
    assert [getattr(mthinker, k) for k in budget] == [getattr(pcs, k) for k in budget]
    assert (mthinker.sampling.n, mthinker.sampling.max_new_tokens) == (pcs.sampling.n, pcs.sampling.max_new_tokens)


# ---------------------------------------------------------------- RL with all weights, LoRA as the cheap variant

# profile -> (GPUs, paper's full-fine-tuning learning rate, the LoRA override's rate = 10x: "LoRA Without Regret").
# AdaMame §4: verl, lr 1e-5, one A100 (1.5B) / two A100s (Qwen3-4B); PCS: the reference reset to the policy, lr
# 1e-6 (the profile's choice); M-Thinker: lr 3e-6; LcRL: FSDP, lr 1e-6.
FULL_RL = {"qwen3-4b-adamame-grpo": (2, 1e-5), "distill-qwen-1.5b-adamame-grpo": (1, 1e-5),
           "qwen3-8b-pcs-grpo": (8, 1e-6), "qwen3-4b-base-pcs-grpo": (8, 1e-6), "qwen3-8b-mthinker-grpo": (8, 3e-6),
           "qwen2.5-3b-lcrl-mkqa": (4, 1e-6)}


@pytest.mark.parametrize("name", sorted(FULL_RL))
def test_paper_rl_trains_all_weights_and_offers_lora_at_ten_times_the_rate(name):
    from components.planning import plan_profile

    gpus, rate = FULL_RL[name]
    path = PROFILES / f"{name}.yaml"
    grpo = load_profile(path).grpo
    assert (grpo.lora, processes(grpo.accelerate_config), grpo.learning_rate) == (None, gpus, rate)
    assert "LoRA Without Regret" in path.read_text(encoding="utf-8")  # the rule the LoRA rate follows, cited
    lora = next(words for words in header_commands(path) if any(w.startswith("grpo.lora={r:") for w in words))
    variant = load_profile(path, lora).grpo
    assert variant.lora is not None and variant.learning_rate == pytest.approx(10 * rate)
    plan = plan_profile(load_profile(path, lora))
    assert plan.problems == []  # the cheap variant plans clean too
    values = next(s.values for s in plan.stages if s.stage == "grpo")
    assert (values["training_mode"], values["gpus"]) == ("lora", 1)
    full = next(s.values for s in plan_profile(load_profile(path)).stages if s.stage == "grpo")
    assert (full["training_mode"], full["gpus"]) == ("full", gpus) and full["gpu_memory_gib"] < 80


# ---------------------------------------------------------------- LcRL: the warm-up is applied


def learning_rates(grpo, steps: int) -> list[float]:
    """The learning rate at each of ``steps`` optimizer steps, from transformers' own scheduler.

    The trainer builds it as ``Trainer.create_scheduler`` does: ``get_scheduler(lr_scheduler_type,
    num_warmup_steps=args.get_warmup_steps(max_steps))``, where the section's warm-up ratio reaches trl as
    ``warmup_steps`` (a value below 1 is a ratio in transformers 5).
    """
    import torch
    from transformers import TrainingArguments, get_scheduler

    args = TrainingArguments(output_dir="unused", use_cpu=True, learning_rate=grpo.learning_rate,
                             lr_scheduler_type=grpo.lr_scheduler_type, warmup_steps=grpo.warmup_ratio,
                             max_steps=steps, report_to=[])
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=args.learning_rate)
    scheduler = get_scheduler(args.lr_scheduler_type, optimizer, num_warmup_steps=args.get_warmup_steps(steps),
                              num_training_steps=steps)
    rates = []
    for _ in range(steps):
        rates.append(scheduler.get_last_lr()[0])
        optimizer.step()
        scheduler.step()
    return rates


def test_lcrl_learning_rate_warms_up_over_the_scripts_share_of_steps():
    """LcRL's script: lr 1e-6 after a linear warm-up over 28.5 % of 1,005 steps (verl: constant with warm-up)."""
    grpo = load_profile(PROFILES / "qwen2.5-3b-lcrl-mkqa.yaml").grpo
    rates = learning_rates(grpo, grpo.max_steps)
    warmup = sum(rate < grpo.learning_rate for rate in rates)
    assert warmup == 287   # ceil(0.285 x 1005): transformers rounds up (verl rounds down: 286)
    assert rates[0] == 0.0 and rates[143] == pytest.approx(1e-6 * 143 / 287)
    assert set(rates[287:]) == {1e-6}   # then constant


# ---------------------------------------------------------------- verifier bias: a setting that would score 0


def test_strict_extraction_without_thinking_is_refused_naming_both_keys():
    """The header's Llama override needs lenient extraction: strict reads only the boxed answer after </think>."""
    path = PROFILES / "qwen3-8b-verifier-bias-evaluation.yaml"
    llama = ["evaluation.model.model=meta-llama/Llama-3.1-8B-Instruct", "evaluation.model.thinking=false"]
    with pytest.raises(ProfileError) as error:
        load_profile(path, llama)
    assert "evaluation.model.thinking false with evaluation.scoring.extraction strict" in str(error.value)
    assert load_profile(path, [*llama, "evaluation.scoring.extraction=lenient"]).evaluation.scoring.extraction == \
        "lenient"
    assert "evaluation.scoring.extraction=lenient" in path.read_text(encoding="utf-8")   # the header says so


def test_overriding_only_the_model_to_llama_is_refused_by_the_plan_naming_the_keys():
    """Llama-3.1-8B-Instruct writes no think block: with thinking left on, strict extraction would score 0."""
    from components.planning import plan_profile

    path = PROFILES / "qwen3-8b-verifier-bias-evaluation.yaml"
    llama = "evaluation.model.model=meta-llama/Llama-3.1-8B-Instruct"
    problems = plan_profile(load_profile(path, [llama])).problems
    assert [p.keys for p in problems] == [("evaluation.model.model", "evaluation.model.thinking",
                                           "evaluation.scoring.extraction")]
    assert "writes no think block" in problems[0].message
    header = [words for words in header_commands(path) if llama in words] or [
        [llama, "evaluation.model.thinking=false", "evaluation.scoring.extraction=lenient"]]
    assert plan_profile(load_profile(path, header[0])).problems == []  # the header's full override plans clean


# ---------------------------------------------------------------- words and code agree


def test_pcs_window_default_is_the_rule_its_docstring_attributes_to_the_paper():
    from components.rewards import curriculum, pcs

    default = inspect.signature(pcs.PCSReward).parameters["tau_window"].default
    assert default == curriculum.TauCurriculum().window == "batch"
    assert "``batch`` (the default, the paper's rule" in pcs.__doc__
    assert "``\"pooled\"`` is ours, not\n  the paper's" in curriculum.__doc__


@pytest.mark.parametrize("name", ["qwen3-4b-adamame-grpo", "distill-qwen-1.5b-adamame-grpo"])
def test_adamame_validates_every_two_batches_on_250_per_language_with_the_rollout_engine(name):
    """AdaMame figure 3: every two training batches (a batch of 512 prompts is 2 optimizer steps), on 250 held-out
    queries per language; generated by trl's colocated vLLM, as the rollouts are (the plan says so)."""
    from components.planning import plan_profile
    from components.training import validation

    profile = load_profile(PROFILES / f"{name}.yaml")
    grpo = profile.grpo
    prompts_per_batch = grpo.generation_batch_size // grpo.sampling.n
    optimizer_steps_per_batch = grpo.generation_batch_size // (
        grpo.per_device_train_batch_size * processes(grpo.accelerate_config) * grpo.gradient_accumulation_steps)
    assert (prompts_per_batch, optimizer_steps_per_batch) == (512, 2)
    assert grpo.validation.every_n_steps == 2 * optimizer_steps_per_batch
    assert profile.data.rejection.validation_per_language == 250 and grpo.validation.limit_per_language is None
    assert "250 per\nlanguage" in validation.__doc__
    stage = next(s for s in plan_profile(profile).stages if s.stage == "grpo")
    assert stage.values["validation_generator"] == "vllm"
    assert stage.values["validation_rows"] == 250 * len(profile.data.languages)


# ---------------------------------------------------------------- AdaMame: Pass@4 and the paper's LCPR, as scored

FR = "Calculons la somme des deux nombres."
SAMPLES = [  # one French problem, four samples, one correct; the second trace holds nothing to judge (math only)
    f"<think>{FR}\nThe sum of the two numbers is four.</think> \\boxed{{4}}",
    "<think>2+2=4</think> \\boxed{5}",
    f"<think>{FR}</think> \\boxed{{3}}",
    "<think>Nous additionnons les deux nombres.</think> \\boxed{6}",
]
# Hand-computed: accuracy (avg@4) 1/4, pass@4 = 1 (one of four correct). Line level: sample 1 has an English
# line (fails); sample 2 has no line with letters. AdaMame's code (eq. 8) counts it as passing: LPR 3/4,
# WPR 3/3, LCPR 2(.75)(1)/1.75 = 6/7. The corrected rule leaves it out: LPR 2/3, WPR 2/2, LCPR 0.8.
ADAMAME_SCORES = {"pass_at_4": 1.0, "accuracy": 0.25, "lcpr": 6 / 7, "lcpr_adamame": 0.8}


def scored_report(scoring, tmp_path):
    """The profile's scoring section run by the evaluation's own score task, rendered as its report."""
    import json

    from components.reports.benchmark import benchmark_report
    from runtime.artifacts import ArtifactRef
    from runtime.project import Project
    from tasks.evaluation import score_task

    rows = [{"id": "1", "lang": "fr", "gold": "4", "completion": text, "benchmark": "msvamp", "sample_index": i,
             "num_tokens": 10} for i, text in enumerate(SAMPLES)]
    generations = tmp_path / "generations.jsonl"
    generations.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    scores = score_task.fn(ArtifactRef(str(generations), "fp"), scoring, Project(str(tmp_path)))
    return benchmark_report("msvamp", json.loads(Path(scores.path).read_text(encoding="utf-8")))


@pytest.mark.parametrize("name", ["qwen3-4b-adamame-evaluation", "qwen3-4b-adamame-grpo",
                                  "distill-qwen-1.5b-adamame-evaluation", "distill-qwen-1.5b-adamame-grpo"])
def test_adamame_tables_lead_with_pass_at_4_and_score_lcpr_by_the_papers_code(name, tmp_path):
    from components.reports.comparison import comparison_columns

    scoring = load_profile(PROFILES / f"{name}.yaml").evaluation.scoring
    assert (scoring.headline, scoring.lcpr_rule, scoring.lcpr_beside) == ("pass_at_4", "adamame_reference", ["adamame"])
    report = scored_report(scoring, tmp_path)
    (fr,) = [row for row in report.language_table if row["lang"] == "fr"]
    values = [key for key in fr if not key.endswith(("_stderr", "_n"))]   # each value carries its error and n
    assert values[:6] == ["lang", "headline", "pass_at_4", "accuracy", "lcpr", "lcpr_adamame"]
    assert {k: fr[k] for k in ADAMAME_SCORES} == pytest.approx(ADAMAME_SCORES)
    assert comparison_columns({"base": {"msvamp": report.language_table}}, "base")[:4] == (
        "pass_at_4", "accuracy", "lcpr", "lcpr_adamame")
    assert report.metrics["evaluation/msvamp/fr/lcpr_adamame"] == pytest.approx(0.8)


def test_cpu_adamame_twin_leads_with_its_largest_pass_at_k():
    scoring = load_profile(PROFILES / "cpu-adamame-evaluation.yaml").evaluation.scoring
    assert scoring.headline == f"pass_at_{max(scoring.pass_k)}" == "pass_at_2"


# ---------------------------------------------------------------- the papers' other backbones: a model swap


def _without_models(path: Path, model: str) -> dict:
    """The profile as data with its name, registry name, nightly schedule (each profile's at its own hour),
    GRPO's node (AdaMame trains its 1.5B backbone on one A100 and Qwen3-4B on two: the GPUs and the accumulation
    that keeps the step's 2,048 completions, compared in ``test_rl_steps_are_the_same_on_each_node``) and every
    occurrence of ``model`` blanked."""
    import json

    profile = load_profile(path).model_dump(mode="json")
    profile["name"] = None
    if profile.get("registry"):
        profile["registry"]["name"] = None
    if profile.get("nightly"):
        profile["nightly"]["cron"] = None
    if profile.get("grpo"):
        profile["grpo"]["accelerate_config"] = profile["grpo"]["gradient_accumulation_steps"] = None
    return json.loads(json.dumps(profile).replace(json.dumps(model), '"MODEL"'))


@pytest.mark.parametrize("twin, original, models", [
    ("qwen3-4b-base-pcs-grpo", "qwen3-8b-pcs-grpo", ("Qwen/Qwen3-4B-Base", "Qwen/Qwen3-8B-Base")),
    ("distill-qwen-1.5b-adamame-grpo", "qwen3-4b-adamame-grpo",
     ("deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B", "Qwen/Qwen3-4B")),
    ("distill-qwen-1.5b-adamame-evaluation", "qwen3-4b-adamame-evaluation",
     ("deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B", "Qwen/Qwen3-4B")),
])
def test_other_backbones_are_the_same_recipe_with_the_model_swapped(twin, original, models):
    """PCS and AdaMame train and evaluate both of their backbones in one setting."""
    assert _without_models(PROFILES / f"{twin}.yaml", models[0]) == _without_models(PROFILES / f"{original}.yaml",
                                                                                     models[1])
    trained = load_profile(PROFILES / f"{twin}.yaml")
    assert {section.model.model for section in (trained.sft, trained.grpo, trained.evaluation) if section} <= {models[0]}


@pytest.mark.parametrize("twin, original", [("qwen3-4b-base-pcs-grpo", "qwen3-8b-pcs-grpo"),
                                            ("distill-qwen-1.5b-adamame-grpo", "qwen3-4b-adamame-grpo")])
def test_rl_steps_are_the_same_on_each_node(twin, original):
    """Per device x GPUs x accumulation: the same completions per optimizer step on either backbone's node."""
    def per_step(name):
        grpo = load_profile(PROFILES / f"{name}.yaml").grpo
        return grpo.per_device_train_batch_size * processes(grpo.accelerate_config) * grpo.gradient_accumulation_steps

    assert per_step(twin) == per_step(original)


# ---------------------------------------------------------------- every command a header gives loads


def header_commands(path: Path) -> list[list[str]]:
    """The override lists of the ``polyreason <command> profiles/<this file> …`` lines of a profile's header."""
    import shlex

    lines, joined = [], ""
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        text = line.lstrip("#").strip()
        joined = f"{joined} {text}" if joined else text
        if joined.endswith("\\"):
            joined = joined[:-1].rstrip()
            continue
        lines.append(joined)
        joined = ""
    commands = []
    for text in (line for line in lines if line.startswith("polyreason ")):
        words = shlex.split(text.split("  #")[0], comments=False)
        if len(words) >= 3 and words[0] == "polyreason" and words[2] == f"profiles/{path.name}":
            commands.append([word for word in words[3:] if "=" in word])
    return commands


@pytest.mark.parametrize("path", sorted(PROFILES.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_command_in_a_profile_header_loads(path):
    """An override a header advertises (a baseline row, an ablation) is one the profile accepts."""
    for overrides in header_commands(path):
        load_profile(path, overrides)


def test_header_commands_are_found():
    commands = header_commands(PROFILES / "cpu-lcrl.yaml")
    assert ["grpo.coupling={mode: none}"] in commands and ["grpo.lcrl.rounds=[[query]]"] in commands
    assert ["grpo.rewards.0.params={require_think: false, extraction: lenient, slc_reward: continuous}"] in \
        header_commands(PROFILES / "cpu-grpo.yaml")
