"""The evaluation flow: for each benchmark, load -> prompts -> generate -> score -> log.

Reads like a recipe: one MLflow run per flow run
(params = the flattened profile), cached stage tasks, summaries logged from task
return values so cached stages still report. ``polyreason evaluate PROFILE.yaml
[key=value ...]`` runs it.
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow

from components.config import flatten
from components.settings import Profile, ProfileError
from flows.runtime import prepared
from tasks import tracking
from tasks.evaluation import (
    build_prompts_task,
    generate_task,
    load_benchmark_task,
    log_benchmark_task,
    report_task,
    score_task,
)
from tasks.models import resolve_model_task


def _state_result(state):
    return state.name, state.result()


@flow(name="polyreason-evaluation")
def evaluation_flow(profile: Profile) -> dict:
    """Generate and score every benchmark of ``profile.evaluation``; returns a summary."""
    section = profile.evaluation
    if section is None or not section.benchmarks:
        raise ProfileError(f"profile {profile.name!r} has no evaluation.benchmarks")
    profile, project = prepared(profile)
    cache_dir = str(project / ".cache")
    run = tracking.open_run(profile.tracking, project, f"{profile.name}-evaluation",
                            params=flatten(profile), tags={"polyreason.stage": "evaluation"})
    summary: dict = {"run_id": run.run_id, "tracking_uri": run.tracking_uri, "benchmarks": {}}
    try:
        model = resolve_model_task(section.model, cache_dir)
        for benchmark in section.benchmarks:
            loaded = load_benchmark_task(benchmark)
            prompts = build_prompts_task(loaded["items"], section.prompt, section.model, model["path"])
            generation_state, generations = _state_result(generate_task(
                loaded["items"], prompts["prompts"], section.model, model["fingerprint"], section.sampling,
                str(project), cache_dir, prompts["stop"], return_state=True))
            score_state, scores = _state_result(score_task(generations, section.scoring, str(project), return_state=True))
            report = report_task(benchmark.name, generations, scores, str(project))
            logged = log_benchmark_task(run, benchmark.name, report, scores, loaded["errors"])
            summary["benchmarks"][benchmark.name] = {
                "generations": generations.path, "scores": scores.path, "report": report.path,
                "generation_state": generation_state, "score_state": score_state,
                "generation": generations.summary, "load_errors": len(loaded["errors"]),
                "languages": logged["languages"],
            }
    except BaseException:
        tracking.finish_run(run, "FAILED")
        raise
    tracking.finish_run(run)
    return summary


def run_evaluation(profile: Profile) -> dict:
    """CLI entry: run the flow (Prefect picks the API: a server if configured, else a temporary one)."""
    return evaluation_flow(profile)
