"""The plans of the generating stages: data construction, rejection sampling, evaluation, audit.

Each generation is counted as completions (prompts × samples) and an upper bound
on tokens (every completion at its ``max_new_tokens``); each generating model
gets its context check (``components.planning.lengths``) and, on a GPU, its
memory figures and a GPU-hours range (``components.planning.estimate``).
"""

from __future__ import annotations

from typing import Any

from components.planning.estimate import decode_bound_of, generation_hours, memory_lines
from components.planning.lengths import context_lines, dtype_of, facts_of, on_gpu
from components.planning.stage import Problem, StagePlan, where
from components.planning.rows import Rows, benchmark_rows, rl_rows, source_rows, trace_rows, translated_rows


def generate(stage: StagePlan, profile: Any, gpu: str, label: str, keys: tuple[str, str], model: Any,
             sampling: Any, prompts: Rows, copies: int = 1) -> list[Problem]:
    """One generation's line (completions, tokens, decoding) and its cost (``generation_cost``)."""
    completions = None if prompts.count is None else prompts.count * sampling.n * copies
    counted = "unknown" if completions is None else (f"{completions:,} completions "
                                                     f"(≤ {completions * sampling.max_new_tokens:,} tokens)")
    stage.add(label, f"{model.model} ({runs_on(model)}): {counted}; {decoding(sampling)}")
    return generation_cost(stage, profile, gpu, label, keys, model, sampling, completions)


def generation_cost(stage: StagePlan, profile: Any, gpu: str, label: str, keys: tuple[str, str], model: Any,
                    sampling: Any, completions: int | None, context: bool = True, passes: int = 1) -> list[Problem]:
    """A generation's context check (``keys``: the model's and the sampling's), memory and estimate.

    ``passes``: the separate generations the completions are split over (one per evaluated model)."""
    facts = facts_of(model, profile.project_dir)
    tokens = None if completions is None else completions * sampling.max_new_tokens
    stage.values.update({f"{label or 'generation'}_completions": completions,
                         f"{label or 'generation'}_tokens": tokens})
    if model.backend == "transformers" and completions is not None:
        stage.values[f"{label or 'generation'}_batches"] = backend_batches(completions, sampling.batch_size, passes)
    lines, problems = context_lines(stage.stage, keys[0], model, sampling.max_new_tokens, facts,
                                    f"{keys[1]}.max_new_tokens")
    if context:
        stage.lines += [(f"{label} {name}" if label else name, text) for name, text in lines]
    if on_gpu(model):
        bound = decode_bound_of(model, facts, dtype_of(model), gpu, sampling.max_new_tokens)
        hours = generation_hours(tokens, facts, gpu, bound=bound)
        if hours is not None:
            stage.estimate = hours if stage.estimate is None else stage.estimate + hours
        share = model.gpu_memory_utilization if model.backend in ("vllm", "vllm-server") else None
        if not stage.memory:
            stage.memory = memory_lines(facts, dtype_of(model), gpu, share, model.max_model_len, bound)
    return problems


def backend_batches(completions: int, batch_size: int, passes: int = 1) -> int:
    """The transformers backend's calls: each pass's completions in batches of ``batch_size``, the last one short.
    On a CPU a call's time grows far less than its batch (one decoding step per token for the whole batch), so a
    pilot's share of a generation is its share of these calls, not of the completions.

    >>> backend_batches(192, 16, passes=3), backend_batches(24, 16, passes=3), backend_batches(0, 16)
    (12, 3, 0)
    """
    per_pass = -(-completions // max(passes, 1))
    return max(passes, 1) * -(-per_pass // max(batch_size, 1)) if completions else 0


def runs_on(model: Any) -> str:
    """``vllm`` or ``transformers, device cpu``: the backend, and the device when the profile pins one."""
    return model.backend if model.device == "auto" or model.backend == "openai" else f"{model.backend}, {model.device}"


def decoding(sampling: Any) -> str:
    """``n 4, temperature 0.9, top-p 0.95, ≤ 32,768 new tokens`` (greedy when temperature is 0)."""
    mode = "greedy" if sampling.temperature == 0 else f"temperature {sampling.temperature:g}, top-p {sampling.top_p:g}"
    return f"n {sampling.n}, {mode}, ≤ {sampling.max_new_tokens:,} new tokens"


def data_stage(profile: Any, gpu: str) -> tuple[StagePlan, list[Problem]]:
    """Translation (and its judge), then teacher traces, capped per language; or traces read from a file."""
    data = profile.data
    stage = StagePlan("data", where(profile, "data"))
    stage.add("languages", ", ".join(data.languages), languages=list(data.languages))
    if data.traces.from_file is not None:
        rows = trace_rows(data)
        stage.add("traces", f"{rows.text()}; nothing generated", traces=rows.count)
        return stage, []
    source, translated = source_rows(data), translated_rows(data)
    stage.add("source", source.text(), source_rows=source.count)
    translation, traces = data.translation, data.traces
    problems = generate(stage, profile, gpu, "translation", ("data.translation.model", "data.translation.sampling"),
                        translation.model, translation.sampling, source, copies=len(data.languages))
    if translation.judge is not None:
        keys = ("data.translation.judge", "data.translation.judge_sampling")
        problems += generate(stage, profile, gpu, "judge", keys, translation.judge, translation.judge_sampling,
                             translated)
    problems += generate(stage, profile, gpu, "traces", ("data.traces.model", "data.traces.sampling"), traces.model,
                         traces.sampling, translated)
    kept = trace_rows(data)
    stage.add("kept for SFT", kept.text(), sft_rows=kept.count)
    probe = traces.early_stop
    stage.add("yield probe", "off: every query generated at once" if probe.probe_per_language is None else
              f"the first {probe.probe_per_language:,} queries per language first; stops there when a language's "
              f"95% retention interval projects under {probe.min_share:g} of its target",
              probe_per_language=probe.probe_per_language)
    return stage, problems


def rejection_policy(profile: Any) -> Any:
    """The model the rejection rollouts sample from: ``data.rejection.policy``, else the SFT model (``None``
    without either)."""
    rejection = profile.data.rejection if profile.data is not None else None
    if rejection is None:
        return None
    return rejection.policy or (profile.sft.model if profile.sft else None)


def rejection_stage(profile: Any, gpu: str) -> tuple[StagePlan, list[Problem]]:
    """The policy's rollouts over the SFT queries; the RL set kept and held out."""
    from components.data.rejection import get_strategy

    data, rejection = profile.data, profile.data.rejection
    stage = StagePlan("rejection", where(profile, "rejection"))
    policy = rejection_policy(profile)
    rows = trace_rows(data)
    rollouts = get_strategy(rejection.strategy).rollouts(rejection.sampling.n)
    stage.add("strategy", f"{rejection.strategy}: {rollouts} rollout(s) per query", strategy=rejection.strategy)
    problems: list[Problem] = []
    keys = ("data.rejection.policy" if rejection.policy else "sft.model", "data.rejection.sampling")
    if policy is not None and rollouts:
        sampling = rejection.sampling.model_copy(update={"n": rollouts})
        problems += generate(stage, profile, gpu, "rollouts", keys, policy, sampling, rows)
    kept = rl_rows(data)
    held = rejection.validation_per_language * len(data.languages)
    stage.add("RL set", f"{kept.text()} for training, ≤ {held:,} held out (validation_per_language "
                        f"{rejection.validation_per_language})", rl_rows=kept.count)
    if policy is not None and rejection.english_references:
        english = Rows(None if kept.count is None else kept.count + held, True, "the RL set and its held-out rows")
        problems += generate(stage, profile, gpu, "English references", keys, policy, rejection.sampling, english)
    return stage, problems


def evaluated_models(profile: Any) -> list[str]:
    """The models a recipe evaluates (the base unless ``evaluation.evaluate_base`` is false; the ``evaluate``
    command evaluates only the base)."""
    return [*(["base"] if profile.evaluation.evaluate_base else []), *(["sft"] if profile.sft else []), *(["grpo"] if profile.grpo else [])]


def evaluation_stage(profile: Any, gpu: str) -> tuple[StagePlan, list[Problem]]:
    """Every benchmark for every evaluated model: rows, samples, decoding, length; the scoring protocol."""
    evaluation, models = profile.evaluation, evaluated_models(profile)
    model = evaluation.model
    stage = StagePlan("evaluation", where(profile, "evaluation"))
    stage.add("models", f"{', '.join(models)}: {model.model} ({runs_on(model)}), prompt {evaluation.prompt.style}, "
                        f"{decoding(evaluation.sampling)}", models=models)
    problems: list[Problem] = []
    for index, bench in enumerate(evaluation.benchmarks):
        rows, sampling = benchmark_rows(bench), evaluation.sampling_for(bench)
        completions = None if rows.count is None else rows.count * sampling.n * len(models)
        counted = "" if completions is None else (f" × {sampling.n} samples × {len(models)} models = {completions:,} "
                                                  f"completions (≤ {completions * sampling.max_new_tokens:,} tokens)")
        stage.add(bench.name, f"{', '.join(bench.languages)}: {rows.text()}{counted}",
                  **{f"{bench.name}_rows": rows.count})
        problems += generation_cost(stage, profile, gpu, "" if index == 0 else bench.name,
                                    ("evaluation.model", "evaluation.sampling"), model, sampling, completions,
                                    context=index == 0, passes=len(models))
    scoring = evaluation.scoring
    problems += think_block_problems(profile)
    stage.add("scoring", f"{scoring.verifier} verifier, {scoring.extraction} extraction, headline {scoring.headline}, "
                         f"pass@k {scoring.pass_k}, SLC threshold {scoring.slc_threshold:g}, LCPR {scoring.lcpr_rule}")
    return stage, dedupe(problems)


def think_block_problems(profile: Any) -> list[Problem]:
    """Strict extraction on a model whose chat template writes no think block (``models.yaml``: ``think_block``):
    every answer would be missed, whatever ``thinking`` says (the settings refuse ``thinking: false`` themselves)."""
    evaluation = profile.evaluation
    facts = facts_of(evaluation.model, profile.project_dir)
    if facts.think_block is not False or evaluation.scoring.extraction != "strict" or not evaluation.model.thinking:
        return []
    return [Problem("evaluation", ("evaluation.model.model", "evaluation.model.thinking", "evaluation.scoring.extraction"),
                    f"{evaluation.model.model} writes no think block ({facts.source}), so strict extraction, which "
                    "reads only the \\boxed{} answer after </think>, would miss every answer (accuracy 0): set "
                    "evaluation.model.thinking=false and evaluation.scoring.extraction=lenient")]


def audit_stage(profile: Any, gpu: str) -> tuple[StagePlan, list[Problem]]:
    """Verifier audit: scoring only (CPU), on the evaluation's generations or a file."""
    audit = profile.audit
    stage = StagePlan("audit", where(profile, "audit"))
    source = audit.generations or "the last evaluation's generations"
    stage.add("audits", f"verifiers on {source}; no GPU work", generations=audit.generations)
    return stage, []


def dedupe(problems: list[Problem]) -> list[Problem]:
    """One problem per keys and message (every benchmark generates with the same model and length)."""
    return list(dict.fromkeys(problems))

