"""The evaluation flow: one model, every benchmark of the profile: load -> prompts -> generate -> score -> report.

Reads like a recipe: one MLflow run per evaluated model (a child of the recipe's
run when one is given), cached stage tasks, summaries logged from task return
values so cached stages still report. The model is the section's own
(``evaluation.model``, a hub id, a local directory or a ``models:/`` registry
reference) or the one a recipe hands in (its base, SFT or GRPO model); the
benchmarks share one loaded generator. Metric keys are
``evaluation/<benchmark>/<lang>/<metric>`` in every evaluation run, so MLflow's
compare view lines up runs of any model; the run's ``polyreason.model_tag`` says
which model it was. ``polyreason evaluate PROFILE.yaml [key=value ...]`` runs it alone.
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow

from components.config import flatten
from components.settings import EvaluationSettings, Profile
from flows.runtime import prepared, require, was_cached
from tasks import tracking
from tasks.evaluation import (
    build_prompts_task, generate_task, load_benchmark_task, log_benchmark_task, report_task, score_task,
)  # fmt: skip
from tasks.models import release_generators, resolve_model_task
from tasks.outputs import BenchmarkOutput, EvaluationOutputs, ModelRef
from tasks.tracking import RunRef


def evaluate_benchmark(run: RunRef, benchmark, section: EvaluationSettings, model: ModelRef,
                       project: Path) -> BenchmarkOutput:
    """One benchmark through every task; ``generated``/``scored``: whether those ran or came from the cache."""
    cache_dir = str(project / ".cache")
    loaded = load_benchmark_task(benchmark)
    prompts = build_prompts_task(loaded["items"], section.prompt, model)
    state = generate_task(loaded["items"], prompts["prompts"], model, section.sampling_for(benchmark), str(project),
                          cache_dir, prompts["stop"], return_state=True)
    generations = state.result()
    scoring = score_task(generations, section.scoring, str(project), return_state=True)
    scores = scoring.result()
    report = report_task(benchmark.name, generations, scores, str(project))
    log_benchmark_task(run, benchmark.name, report, scores, loaded["errors"])
    return BenchmarkOutput(generations=generations, scores=scores, report=report, generated=not was_cached(state),
                           scored=not was_cached(scoring),
                           load_errors=len(loaded["errors"]))


@flow(name="polyreason-evaluation", persist_result=True)
def evaluation_flow(profile: Profile, model: ModelRef | None = None, parent: RunRef | None = None,
                    run_tags: dict[str, str] | None = None) -> EvaluationOutputs:
    """Generate and score every benchmark of ``profile.evaluation`` with one model (``run_tags`` go on its run)."""
    profile, project = prepared(profile)
    section = require(profile, "evaluation")
    uri = tracking.tracking_uri(profile.tracking, project)
    model = model or resolve_model_task(section.model, str(project / ".cache"), "base", uri)
    tags = {"polyreason.model_tag": model.tag, "polyreason.model_fingerprint": model.fingerprint[:16],
            **({"polyreason.registered": model.registered} if model.registered else {}), **(run_tags or {})}
    with tracking.stage_run(profile.tracking, project, f"{profile.name}-evaluation-{model.tag}", stage="evaluation",
                            params=flatten(section, "evaluation."), tags=tags, parent=parent) as run:
        benchmarks = {b.name: evaluate_benchmark(run, b, section, model, project) for b in section.benchmarks}
        release_generators()  # the benchmarks shared one load; the next model needs the memory
        tracking.mark_cache(run, [Path(b.generations.path).parent for b in benchmarks.values()],
                            cached=not any(b.generated for b in benchmarks.values()))
    return EvaluationOutputs(model=model, benchmarks=benchmarks, run_id=run.run_id)
