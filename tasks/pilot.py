"""Prefect tasks of a pilot: read what its stages measured, and log the report.

* ``measure_task``: from the pilot recipe's typed outputs and its stages' MLflow runs, each
  language's retention counts (``data/translation/accepted|rejected/<lang>``,
  ``data/traces/kept|total/<lang>``), the GRPO curves trl logged (the reward, each reward
  function's mean and the parts of a single one, KL, the clipped ratio, completion lengths,
  ``train_runtime``), SFT's ``train_runtime``, both trainings' step clock (``time/elapsed_s``),
  the evaluation generations' tokens and backend seconds, and each stage run's wall time;
  assembled into ``components.planning.pilot_report.PilotReport``.
* ``log_pilot_task``: the report as the pilot run's metrics, ``pilot.json`` and ``pilot.md``.
"""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from runtime import tracking
from runtime.outputs import EvaluationOutputs, RecipeOutputs
from runtime.tracking import RunRef

REWARD = "grpo/reward"
TRAINING_MEANS = {"kl": "grpo/train/kl", "clip_ratio": "grpo/clip_ratio/region_mean"}


def _history(uri: str, run_id: str, key: str) -> list[tuple[int, float]]:
    return [(m.step, m.value) for m in sorted(tracking.client(uri).get_metric_history(run_id, key),
                                              key=lambda m: (m.step, m.timestamp))]


def _wall(uri: str, run_id: str) -> tuple[float, bool]:
    """A run's wall seconds and whether it reused cached artifacts."""
    run = tracking.client(uri).get_run(run_id)
    end = run.info.end_time or run.info.start_time
    return (end - run.info.start_time) / 1000, run.data.tags.get("polyreason.cache") == "hit"


def _last(uri: str, run_id: str, key: str) -> float | None:
    history = _history(uri, run_id, key)
    return history[-1][1] if history else None


def _unit_seconds(uri: str, run_id: str, stage: str) -> float | None:
    """A training stage's steady step time from the step clock its metrics sink wrote (``<stage>/time/elapsed_s``)."""
    from components.planning.pilot_report import steady_step_seconds
    from components.training.callbacks import MetricsJsonlCallback
    from components.training.report import mlflow_key

    return steady_step_seconds(_history(uri, run_id, mlflow_key(MetricsJsonlCallback.ELAPSED, stage)))


def _projections(uri: str, run_id: str, languages: list[str], queries: dict[str, int], targets: dict[str, int],
                 translated: bool) -> list:
    from components.planning.pilot_report import projection_from_counts

    metrics = tracking.client(uri).get_run(run_id).data.metrics
    return [projection_from_counts(lang, metrics, queries.get(lang), targets.get(lang), translated)
            for lang in languages]


def _curves(uri: str, run_id: str, ranges: dict) -> list:
    """Each reward key's slope and level over the logged steps, with its range where one is stated."""
    from components.planning.pilot_report import RewardCurve, level_of, reward_keys, slope_of

    parts = tuple(key for key in ranges if key.startswith("reward/"))
    out = []
    for key in reward_keys(list(tracking.client(uri).get_run(run_id).data.metrics), REWARD, parts):
        points = _history(uri, run_id, key)
        name, values = key.removeprefix("grpo/"), [v for _, v in points]
        slope = slope_of(name, [s for s, _ in points], values)
        if slope is not None:
            out.append(RewardCurve(slope, level_of(values), ranges.get(name)))
    return out


def _generation(evaluations: list[EvaluationOutputs]) -> tuple[float, float]:
    """Tokens generated and the backend's seconds, over every benchmark of every evaluation (from the generation
    task's summary, ``components.generation.resumable.GenerationSummary``)."""
    tokens = seconds = 0.0
    for evaluation in evaluations:
        for bench in evaluation.benchmarks.values():
            tokens += float(bench.generations.summary.get("tokens") or 0)
            seconds += float(bench.generations.summary.get("backend_seconds") or 0)
    return tokens, seconds


@task(name="pilot-measure", cache_policy=NO_CACHE)
def measure_task(outputs: RecipeOutputs | None, uri: str, budget, full_plan, pilot_plan, data_facts: dict,
                 min_share: float, refused: list[str], reward_ranges: dict | None = None):
    """The pilot's report from its recipe's outputs (``None``: a stage refused; ``refused`` says why);
    ``reward_ranges``: each reward key's range (``components.rewards.ranges.ranges_by_key``)."""
    from components.planning.pilot_report import PilotReport, StageTime

    report = PilotReport(profile=full_plan.profile, budget=budget.lines(), min_share=min_share, refused=refused)
    if outputs is None:
        return report
    shares = {share.stage: share for share in budget.shares}
    plans = {s.stage: s for s in full_plan.stages}
    hours = lambda stage: None if plans[stage].estimate is None else (  # noqa: E731
        plans[stage].estimate.low / plans[stage].estimate.gpus, plans[stage].estimate.high / plans[stage].estimate.gpus)

    def timed(stage: str, run_ids: list[str], work: float | None, unit: float | None = None) -> None:
        walls = [_wall(uri, run_id) for run_id in run_ids if run_id]
        if walls and stage in shares:
            report.times.append(StageTime(shares[stage], sum(w for w, _ in walls), work, all(c for _, c in walls),
                                          hours(stage), unit))

    if outputs.data is not None and outputs.data.run_id:
        report.projections = _projections(uri, outputs.data.run_id, **data_facts)
        timed("data", [outputs.data.run_id], None)
    if outputs.sft is not None:
        runtime = _last(uri, outputs.sft.run_id, "sft/train/train_runtime")
        timed("sft", [outputs.sft.run_id], runtime, _unit_seconds(uri, outputs.sft.run_id, "sft"))
        steps = outputs.sft.trained.run.summary.get("global_step")
        if runtime and steps:
            report.throughput["sft_steps_per_s"] = steps / runtime
    if outputs.rl is not None:
        timed("rejection", [outputs.rl.run_id], None)
    if outputs.grpo is not None:
        _grpo(report, uri, outputs.grpo.run_id, pilot_plan, timed, reward_ranges or {})
    if outputs.evaluations:
        tokens, seconds = _generation(outputs.evaluations)
        timed("evaluation", [e.run_id for e in outputs.evaluations], seconds or None)
        if seconds:
            report.throughput["evaluation_tokens_per_s"] = tokens / seconds
    return report


def _grpo(report, uri: str, run_id: str, pilot_plan, timed, ranges: dict) -> None:
    """The reward's slopes and levels, KL and clipped ratio, GRPO's steps and tokens per second, and its time."""
    from components.planning.pilot_report import grpo_throughput

    report.curves = _curves(uri, run_id, ranges)
    for name, key in TRAINING_MEANS.items():
        points = _history(uri, run_id, key)
        if points:
            report.training[f"{name}_mean"] = sum(v for _, v in points) / len(points)
            report.training[f"{name}_last"] = points[-1][1]
    runtime = _last(uri, run_id, "grpo/train/train_runtime")
    timed("grpo", [run_id], runtime, _unit_seconds(uri, run_id, "grpo"))
    values = next((s.values for s in pilot_plan.stages if s.stage == "grpo"), {})
    lengths = [v for _, v in _history(uri, run_id, "grpo/completions/mean_length")]
    report.throughput.update(grpo_throughput(values.get("optimizer_steps"), values.get("completions"), runtime, lengths))


@task(name="pilot-log", cache_policy=NO_CACHE)
def log_pilot_task(run: RunRef, report, recipe_run: str | None) -> None:
    """The report as the pilot run's metrics, ``pilot.json`` and ``pilot.md``, and the pilot recipe's run as a tag."""
    tracking.log_metrics(run, report.metrics())
    tracking.log_dict(run, report.as_dict(), "pilot.json")
    tracking.log_text(run, "\n".join(report.lines()) + "\n", "pilot.md")
    tracking.set_tags(run, {"polyreason.pilot.verdict": report.verdict,
                            **({"polyreason.pilot.recipe_run": recipe_run} if recipe_run else {})})
