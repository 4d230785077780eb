"""The evaluation flow: one model, every benchmark of the profile: load -> prompts -> generate -> score -> report.

Reads like a recipe: one MLflow run per evaluated model (a child of the recipe's
run when one is given), cached stage tasks, summaries logged from task return
values so cached stages still report. The model is the section's own
(``evaluation.model``, a hub id, a local directory or a ``models:/`` registry
reference) or the one a recipe hands in (its base, SFT or GRPO model); the
benchmarks share one loaded generator, and the prompts of every benchmark still to generate go to
it together (one backend call when the batch size allows; one cache entry per benchmark). Metric keys are
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
    build_prompts_task, generate_task, load_benchmark_task, log_benchmark_task, pool_generations_task, report_task,
    score_task,
)  # fmt: skip
from tasks.models import release_generators, resolve_model_task
from tasks.outputs import BenchmarkOutput, EvaluationOutputs, ModelRef
from tasks.tracking import RunRef


def prepare_benchmark(benchmark, section: EvaluationSettings, model: ModelRef) -> dict:
    """A benchmark's items, load errors, prompts, stop strings and sampling settings."""
    loaded = load_benchmark_task(benchmark)
    prompts = build_prompts_task(loaded["items"], section.prompt, model)
    return {"name": benchmark.name, "items": loaded["items"], "errors": loaded["errors"],
            "prompts": prompts["prompts"], "stop": prompts["stop"], "sampling": section.sampling_for(benchmark)}


def evaluate_benchmark(run: RunRef, bench: dict, section: EvaluationSettings, model: ModelRef,
                       project: Path) -> BenchmarkOutput:
    """One prepared benchmark through generate, score, report and log.

    ``generated``/``scored``: whether those ran or came from the cache. A benchmark pooled with
    others (``pool_generations_task``) finds its samples in its journal: its generate task then
    only finishes and publishes the file.
    """
    state = generate_task(bench["items"], bench["prompts"], model, bench["sampling"], str(project),
                          str(project / ".cache"), bench["stop"], return_state=True)
    generations = state.result()
    scoring = score_task(generations, section.scoring, str(project), return_state=True)
    scores = scoring.result()
    report = report_task(bench["name"], generations, scores, str(project))
    log_benchmark_task(run, bench["name"], report, scores, bench["errors"])
    return BenchmarkOutput(generations=generations, scores=scores, report=report, generated=not was_cached(state),
                           scored=not was_cached(scoring), load_errors=len(bench["errors"]))


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
        prepared_benchmarks = [prepare_benchmark(b, section, model) for b in section.benchmarks]
        pooled = pool_generations_task(prepared_benchmarks, model, str(project), str(project / ".cache"))
        benchmarks = {b["name"]: evaluate_benchmark(run, b, section, model, project) for b in prepared_benchmarks}
        release_generators()  # the benchmarks shared one load; the next model needs the memory
        tracking.mark_cache(run, [Path(b.generations.path).parent for b in benchmarks.values()],
                            cached=not any(b.generated for b in benchmarks.values()))
    return EvaluationOutputs(model=model, benchmarks=benchmarks, run_id=run.run_id, pooled=pooled)
