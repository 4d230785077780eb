"""The plans of the trainer stages: SFT and curriculum GRPO (``components.planning.optimizer_steps`` counts their steps).

Problems found here: a launch backend whose package cannot be imported
(``components.planning.launch_backend``), trl's config refusing the batch geometry on the launched
number of processes, fewer prompts than one generation batch, a warm-up as long
as the run, a τ curriculum whose maximum the planned steps cannot reach, a
generation length the model's context cannot hold, a run whose weights, gradients,
optimizer states, reference model and colocated vLLM cannot fit one GPU
(``components.planning.memory``).
"""

from __future__ import annotations

from typing import Any

from components.planning.estimate import (decode_bound_of, generation_hours, memory_lines, training_hours,
                                          training_passes)
from components.planning.lengths import context_lines, dtype_of, facts_of, on_gpu
from components.planning.memory import accelerate_yaml, sharding_of, training_memory, training_mode
from components.training.precision import training_precision
from components.planning.estimate import gpu as gpu_row
from components.planning.stage import Problem, StagePlan, where
from components.planning.rows import Rows, grpo_rows, trace_rows
from components.planning.schedules import curricula, phi_start, reward_ranges, tau_plan
from components.planning.launch import Launch, launch_problems, stage_launch
from components.planning.launch_backend import backend_problems
from components.planning.optimizer_steps import TrainerSteps, grpo_steps, sft_steps
from components.planning.validation_plan import engine_generates, validation_tokens

BATCH_KEYS = ("per_device_train_batch_size", "gradient_accumulation_steps", "generation_batch_size",
              "accelerate_config")


def run_length(section: Any, steps: TrainerSteps) -> str:
    """How the total is set: ``max_steps 800`` or ``num_train_epochs 2 × 39 steps per epoch``."""
    if steps.by_max_steps:
        return f"max_steps {steps.total_steps:,}"
    return f"num_train_epochs {section.trl_option('num_train_epochs'):g} × {steps.steps_per_epoch:,} steps per epoch"


def steps_lines(stage: StagePlan, section: Any, steps: TrainerSteps) -> None:
    stage.add("optimizer steps", f"{steps.total_steps:,} ({run_length(section, steps)})",
              optimizer_steps=steps.total_steps, steps_per_epoch=steps.steps_per_epoch, epochs=steps.epochs)
    scheduler = section.trl_option("lr_scheduler_type")
    stage.add("warm-up", f"{steps.warmup_steps:,} steps of {steps.total_steps:,} ({scheduler} schedule, as "
                         "transformers' get_warmup_steps gives it to the scheduler)", warmup_steps=steps.warmup_steps)


def warmup_problems(name: str, steps: TrainerSteps) -> list[Problem]:
    if steps.total_steps and steps.warmup_steps >= steps.total_steps:
        return [Problem(name, (f"{name}.warmup_ratio", f"{name}.warmup_steps"),
                        f"the warm-up ({steps.warmup_steps:,} steps) lasts the whole run ({steps.total_steps:,} "
                        "steps): the learning rate never reaches its peak")]
    return []


def trainer_where(profile: Any, name: str, section: Any, launch: Launch) -> str:
    device = (section.model.device if section.model is not None else "auto")
    return (f"{where(profile, name)}; trainer: accelerate {section.accelerate_config or 'none (python -m)'}, "
            f"{launch.text()}, device {device}")


def sft_stage(profile: Any, gpu: str) -> tuple[StagePlan, list[Problem]]:
    """LoRA SFT over the traces the data stage keeps."""
    section, rows = profile.sft, trace_rows(profile.data) if profile.data else Rows(None, True, "no data section")
    launch = stage_launch(profile, "sft", section)
    processes = launch.processes
    stage = StagePlan("sft", trainer_where(profile, "sft", section, launch))
    stage.values.update(processes=processes, machines=launch.machines)
    backend = backend_problems(stage, profile, "sft", section)
    stage.add("rows in", rows.text(), rows=rows.count, rows_bound=rows.bound)
    try:
        steps = sft_steps(section, rows.count or 0, processes)
    except ValueError as error:
        return stage, backend + [Problem("sft", tuple(f"sft.{k}" for k in BATCH_KEYS[:2]), f"trl refuses: {error}")]
    stage.add("batch", f"{steps.per_device} per device × {processes} process(es) × {steps.accumulation} accumulation "
                       f"= {steps.per_device * processes * steps.accumulation} rows per step")
    steps_lines(stage, section, steps)
    packing = packing_problems(stage, section, steps)
    length = section.trl_option("max_length") or 0
    tokens = steps.total_steps * steps.per_device * processes * steps.accumulation * length
    stage.add("tokens trained", f"≤ {tokens:,} (every row at max_length {length:,})", tokens_trained=tokens)
    facts = facts_of(section.model, profile.project_dir)
    problems = backend + packing + warmup_problems("sft", steps) + launch_problems(profile, "sft", section, launch)
    if on_gpu(section.model):
        passes = training_passes(lora=section.lora is not None,
                                 checkpointing=bool(section.trl_option("gradient_checkpointing")))
        stage.estimate = training_hours(tokens, facts, passes, gpu, processes)
        stage.memory = memory_lines(facts, dtype_of(section.model), gpu, None)
    problems += memory_plan(stage, "sft", section, section.model, facts, gpu, processes, reference=False,
                            vllm_share=None)
    return stage, problems


def packing_problems(stage: StagePlan, section: Any, steps: TrainerSteps) -> list[Problem]:
    """SFT packing over epochs: trl packs the tokenized rows only when it trains, so the plan bounds the steps.

    ``bfd`` (trl's default) keeps each row whole in one packed sequence and truncates its
    overflow, so an epoch has at most the unpacked count of rows; ``bfd_split`` and
    ``wrapped`` cut rows longer than ``max_length`` into several sequences, so an epoch can
    hold more sequences than rows and neither its steps nor its tokens are bounded before
    the traces are tokenized: refused, naming the keys that fix the run's length.
    """
    if not section.trl_option("packing") or steps.by_max_steps:
        return []
    strategy = section.trl_option("packing_strategy")
    if strategy == "bfd":
        stage.add("packing", f"on (bfd): rows are packed into max_length sequences when trl tokenizes them, so an "
                             f"epoch has at most {steps.steps_per_epoch:,} steps (the counts above are upper bounds; "
                             "set sft.max_steps to fix the run's length)", steps_bound=True)
        return []
    return [Problem("sft", ("sft.packing_strategy", "sft.max_steps", "sft.packing"),
                    f"packing_strategy {strategy} with num_train_epochs: rows longer than max_length are cut into "
                    "several packed sequences, so the steps of an epoch and the tokens trained are known only once "
                    "trl has tokenized the traces; set sft.max_steps, packing_strategy bfd, or packing false")]


def memory_plan(stage: StagePlan, name: str, section: Any, model: Any, facts: Any, gpu_name: str, processes: int, *,
                reference: bool, vllm_share: float | None) -> list[Problem]:
    """The training mode, the GPU count (the launch's ``processes``) and (on a GPU) the per-GPU memory; a run that
    cannot fit is a problem."""
    launch = accelerate_yaml(section.accelerate_config)
    sharding = sharding_of(launch, processes)
    full = section.lora is None
    stage.add("training", training_mode(section.lora), training_mode="full" if full else "lora")
    layout = "" if sharding.kind == "none" else f", {sharding.kind} sharding"
    stage.add("GPUs", f"{sharding.processes} (accelerate {section.accelerate_config or 'none'}{layout})",
              gpus=sharding.processes)
    if not on_gpu(model) or facts.parameters is None:
        return []
    gpu_gib = float(gpu_row(gpu_name)["memory_gib"])
    precision = training_precision(dtype_of(model), launch, full=full)
    memory = training_memory(facts.parameters, precision, sharding, full=full, reference=full and reference,
                             vllm_share=vllm_share, gpu_gib=gpu_gib)
    unsharded_master = sharding.kind == "none" and precision.bf16 and precision.weights == "float32"
    master = " (fp32 master weights, bf16 autocast)" if full and unsharded_master else ""
    parts = [f"weights {memory.weights:,.1f}{master}", f"gradients {memory.gradients:,.1f}",
             f"AdamW states {memory.optimizer:,.1f}", f"reference {memory.reference:,.1f}",
             f"vLLM {memory.vllm:,.1f}"] if full else [f"frozen weights {memory.weights:,.1f}", f"vLLM {memory.vllm:,.1f}"]
    uncounted = "activations" if full else "the adapter's gradients and AdamW states, activations"
    stage.memory.append(("per-GPU memory", f"≥ {memory.total:,.1f} GiB of {gpu_gib:g} ({', '.join(parts)} GiB; "
                                           f"{uncounted} not counted)"))
    stage.values["gpu_memory_gib"] = round(memory.total, 2)
    if memory.fits:
        return []
    keys = [f"{name}.lora", f"{name}.accelerate_config"] + ([f"{name}.beta"] if memory.reference else []) + (
        [f"{name}.model.gpu_memory_utilization"] if memory.vllm else [])
    return [Problem(name, tuple(keys), f"{training_mode(section.lora)} on {sharding.processes} GPU(s) "
                                      f"({layout.lstrip(', ') or 'no sharding'}) needs at least {memory.total:,.1f} GiB per GPU "
                                      f"({', '.join(parts)} GiB) but a {gpu_name} has {gpu_gib:g}: shard over more "
                                      "GPUs (a ZeRO-3 or FSDP config), train LoRA, or lower the vLLM share")]


def coupled_languages(profile: Any) -> int:
    """Rows in one LcRL coupled group (one per language), 1 without coupling."""
    coupling = profile.grpo.coupling
    if coupling.mode != "language":
        return 1
    if coupling.languages:
        return len(coupling.languages)
    data = profile.data.languages if profile.data else None
    lcrl = profile.grpo.lcrl.dataset.languages if profile.grpo.lcrl and profile.grpo.lcrl.dataset else None
    return len(data or lcrl or [None])


def grpo_stage(profile: Any, gpu: str) -> tuple[StagePlan, list[Problem]]:
    """GRPO: steps, generations, validation, curricula, KL, context, estimate."""
    section, rows = profile.grpo, grpo_rows(profile)
    launch = stage_launch(profile, "grpo", section)
    processes = launch.processes
    stage = StagePlan("grpo", trainer_where(profile, "grpo", section, launch))
    stage.values.update(processes=processes, machines=launch.machines)
    backend = backend_problems(stage, profile, "grpo", section)
    stage.add("rows in", rows.text(), rows=rows.count, rows_bound=rows.bound)
    try:
        steps = grpo_steps(section, rows.count or 0, processes, coupled_languages(profile))
    except ValueError as error:
        return stage, backend + [Problem("grpo", tuple(f"grpo.{k}" for k in BATCH_KEYS),
                                         f"trl's GRPOConfig refuses them on {processes} process(es): {error}")]
    problems = backend + generation_lines(stage, section, steps, rows) + warmup_problems("grpo", steps)
    problems += launch_problems(profile, "grpo", section, launch)
    steps_lines(stage, section, steps)
    problems += schedule_lines(stage, profile, steps)
    model = section.model or profile.sft.model
    facts = facts_of(model, profile.project_dir)
    lines, found = context_lines("grpo", "grpo.model", model, section.sampling.max_new_tokens, facts,
                                 "grpo.sampling.max_new_tokens")
    stage.lines += lines
    validation = validation_line(stage, profile, model, steps.total_steps) if section.validation.enabled else None
    if on_gpu(model):
        completions = steps.generations * steps.generation_batch_size
        tokens = completions * section.sampling.max_new_tokens + (validation or 0)
        passes = training_passes(lora=section.lora is not None,
                                 checkpointing=bool(section.trl_option("gradient_checkpointing")),
                                 reference=section.trl_option("beta") > 0,
                                 old_policy=section.trl_option("num_iterations") > 1)
        bound = decode_bound_of(model, facts, dtype_of(model), gpu, section.sampling.max_new_tokens)
        generating = generation_hours(tokens, facts, gpu, processes, bound)
        trained = training_hours(steps.total_steps * steps.completions_per_step * section.sampling.max_new_tokens,
                                 facts, passes, gpu, processes)
        stage.estimate = generating + trained if generating and trained else None
        share = model.gpu_memory_utilization if model.backend == "vllm" else None
        stage.memory = memory_lines(facts, dtype_of(model), gpu, share, model.max_model_len, bound)
    colocated = model.backend == "vllm" and section.trl_option("vllm_mode") == "colocate"
    problems += memory_plan(stage, "grpo", section, model, facts, gpu, processes,
                            reference=section.trl_option("beta") > 0,
                            vllm_share=model.gpu_memory_utilization if colocated else None)
    return stage, problems + found


def validation_line(stage: StagePlan, profile: Any, model: Any, total_steps: int) -> int | None:
    """The validation curves' line: passes, prompts, completions, tokens, generator. Returns the tokens the
    estimate adds (those trl's vLLM generates; ``None`` when transformers generates or the count is unknown)."""
    section = profile.grpo
    passes, rows, completions, tokens = validation_tokens(profile, total_steps)
    engine = engine_generates(section, model)
    settings = section.validation
    generator = ("trl's colocated vLLM (the rollouts' engine)" if engine
                 else "transformers generate on the trained model (not in the estimate: far slower than vLLM)")
    counted = "" if completions is None else (f" × {settings.sampling.n} = {completions:,} completions "
                                              f"(≤ {tokens:,} tokens at max_new_tokens "
                                              f"{settings.sampling.max_new_tokens:,})")
    stage.add("validation", f"{passes:,} passes (every {settings.every_n_steps} steps"
                            f"{', and before training' if settings.before_training else ''}) × {rows.text()}"
                            f"{counted}; {generator}",
              validation_passes=passes, validation_rows=rows.count, validation_completions=completions,
              validation_generator="vllm" if engine else "transformers")
    return tokens if engine else None


def generation_lines(stage: StagePlan, section: Any, steps: TrainerSteps, rows: Rows) -> list[Problem]:
    n, per_step = section.sampling.n, steps.completions_per_step
    stage.add("batch", f"{steps.per_device} per device × {steps.processes} process(es) × {steps.accumulation} "
                       f"accumulation = {per_step:,} completions = {per_step // n:,} prompts × {n} per step")
    stage.add("generation", f"{steps.generation_batch_size:,} completions per generation, one every "
                            f"{steps.steps_per_generation} micro-steps; {steps.generations:,} generations",
              generation_batch_size=steps.generation_batch_size, generations=steps.generations)
    completions = steps.generations * steps.generation_batch_size
    tokens = completions * section.sampling.max_new_tokens
    stage.add("completions", f"{completions:,} (≤ {tokens:,} tokens at max_new_tokens "
                             f"{section.sampling.max_new_tokens:,})", completions=completions, tokens_generated=tokens)
    prompts = steps.generation_batch_size // n
    if rows.count is not None and rows.count < prompts:
        return [Problem("grpo", ("grpo.generation_batch_size", "grpo.per_device_train_batch_size",
                                 "grpo.gradient_accumulation_steps"),
                        f"one generation takes {prompts:,} prompts but the dataset has {rows.text()}: trl's sampler "
                        "yields no batch")]
    return []


def schedule_lines(stage: StagePlan, profile: Any, steps: TrainerSteps) -> list[Problem]:
    """τ and φ over the planned steps, KL; a τ maximum out of reach is a problem."""
    from components.rewards.curriculum import PhiSchedule, TauCurriculum

    section, problems = profile.grpo, []
    text, total = reward_ranges(section.rewards)
    stage.add("reward range", text, reward_low=total.low, reward_high=total.high)
    schedules = curricula(section.rewards)
    for index, curriculum in schedules.items():
        if not isinstance(curriculum, TauCurriculum):
            continue
        tau = tau_plan(index, curriculum, steps.total_steps)
        stage.add(f"τ (rewards.{index})", f"{tau.start:g} → at most {tau.reachable:g} of {tau.maximum:g}: "
                                         f"{tau.effective_checks} checks every {tau.interval} steps before the last "
                                         f"step, {tau.rises_needed} rises needed", tau_reachable=tau.reachable,
                  tau_max=tau.maximum, tau_checks=tau.effective_checks)
        if tau.reachable < tau.maximum:
            prefix = f"grpo.rewards.{index}.params"
            problems.append(Problem("grpo", (f"{prefix}.tau_max", f"{prefix}.tau_interval",
                                             "grpo.max_steps" if steps.by_max_steps else "grpo.num_train_epochs"),
                                    f"the τ curriculum cannot reach {tau.maximum:g} in the planned "
                                    f"{steps.total_steps:,} optimizer steps ({run_length(section, steps)}): "
                                    f"{tau.effective_checks} check(s) every {tau.interval} steps raise τ at most to "
                                    f"{tau.reachable:g}; {tau.rises_needed} rises need at least "
                                    f"{tau.steps_needed:,} steps"))
    for index, curriculum in schedules.items():
        if isinstance(curriculum, PhiSchedule):
            start = phi_start(steps.total_steps, curriculum.floor)
            rising = f"rises from step {start:,}" if start is not None else "never rises"
            stage.add(f"φ (rewards.{index})", f"{curriculum.floor:g} at first, {rising}, 1 at step "
                                             f"{steps.total_steps:,} (cosine over max_steps)", phi_rises_from=start)
    stage.add("KL", f"beta {section.trl_option('beta'):g}" + (
        f"; reference reset when KL > {section.kl_reset.threshold:g}" if section.kl_reset.enabled else ""))
    return problems
