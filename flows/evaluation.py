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
which model it was. A QA benchmark (``evaluation.search``) is answered with LcRL's
search loop over a retrieval index built (and cached) first, and is not pooled with
the others: its rollouts take turns. ``polyreason evaluate PROFILE.yaml [key=value ...]``
runs it alone.
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow

# a placed stage's worker loads this file by its path, not as flows.<name>: importing the package hands the
# settings their registries before Prefect validates the profile parameter (flows/__init__.py)
import flows  # noqa: F401

from components.settings import BenchmarkSettings, EvaluationSettings, Profile
from runtime.flow_runs.names import stage_run_name, subject
from runtime import tracking
from runtime.flow_runs.prefect_artifacts import publish_stage_run
from runtime.artifacts import ArtifactRef, file_fingerprint
from runtime.cache.report import mark_cache
from runtime.processes.generators import release_generators
from runtime.outputs import LOAD_ERRORS_SHOWN, BenchmarkOutput, EvaluationOutputs, ModelRef, PreparedBenchmark
from runtime.project import Project, prepared, require, was_cached
from runtime.tracking import RunRef
from tasks.evaluation import (
    build_prompts_task, evaluated_model_task, generate_task, load_benchmark_task, log_benchmark_dataset_task,
    log_benchmark_task, pool_generations_task, report_task, score_task,
)  # fmt: skip
from tasks.lcrl import corpus_fingerprint, retrieval_index_task, search_generate_task
from tasks.models import resolve_model_task


def prepare_benchmark(benchmark: BenchmarkSettings, section: EvaluationSettings, model: ModelRef) -> PreparedBenchmark:
    """A benchmark's items, load errors, prompts, stop strings and sampling settings."""
    loaded = load_benchmark_task(benchmark)
    prompts = build_prompts_task(loaded.items, section.prompt, model)
    return PreparedBenchmark(name=benchmark.name, items=loaded.items, errors=loaded.errors, prompts=prompts.prompts,
                             stop=prompts.stop, sampling=section.sampling_for(benchmark))


def search_index(section: EvaluationSettings, project: Project) -> ArtifactRef | None:
    """The retrieval index of the section's search loop (built and cached unless it names one); None without."""
    if section.search is None:
        return None
    retrieval = section.search.retrieval
    if retrieval.index is not None:
        return ArtifactRef(retrieval.index, file_fingerprint(Path(retrieval.index) / "meta.json"))
    return retrieval_index_task(retrieval, corpus_fingerprint(retrieval), project)


def generate_benchmark(bench: PreparedBenchmark, section: EvaluationSettings, model: ModelRef, project: Project,
                       index: ArtifactRef | None):
    """The generate task's state: plain generation, or the search loop for a QA benchmark."""
    if bench.name in section.qa_benchmarks():
        return search_generate_task(bench.items, bench.prompts, model, bench.sampling, section.search, index, project,
                                    return_state=True)
    return generate_task(bench.items, bench.prompts, model, bench.sampling, project, bench.stop, return_state=True)


def evaluate_benchmark(run: RunRef, bench: PreparedBenchmark, section: EvaluationSettings, model: ModelRef,
                       project: Project, index: ArtifactRef | None = None, model_id: str | None = None,
                       parent: RunRef | None = None) -> BenchmarkOutput:
    """One prepared benchmark through generate, score, report and log (its metrics name ``model_id``, the logged
    model measured, and the benchmark's dataset, an input of the run and of the recipe's run ``parent``).

    ``generated``/``scored``: whether those ran or came from the cache. A benchmark pooled with
    others (``pool_generations_task``) finds its samples in its journal: its generate task then
    only finishes and publishes the file.
    """
    state = generate_benchmark(bench, section, model, project, index)
    generations = state.result()
    scoring = score_task(generations, section.scoring, project, return_state=True)
    scores = scoring.result()
    report = report_task(bench.name, generations, scores, project)
    settings = next(b for b in section.benchmarks if b.name == bench.name)
    dataset = log_benchmark_dataset_task(run, settings, bench.items)
    if parent is not None:  # the recipe's run lists what its models were measured on
        log_benchmark_dataset_task(parent, settings, bench.items)
    log_benchmark_task(run, bench.name, report, scores, bench.errors, model_id, dataset)
    return BenchmarkOutput(generations=generations, scores=scores, report=report, generated=not was_cached(state),
                           scored=not was_cached(scoring), load_errors=len(bench.errors),
                           load_error_lines=bench.errors[:LOAD_ERRORS_SHOWN])


@flow(name="polyreason-evaluation", flow_run_name=stage_run_name("evaluation"), persist_result=True)
def evaluation_flow(profile: Profile, model: ModelRef | None = None, parent: RunRef | None = None,
                    run_tags: dict[str, str] | None = None, logged_model: str | None = None,
                    title: str | None = None) -> EvaluationOutputs:
    """Generate and score every benchmark of ``profile.evaluation`` with one model (``run_tags`` go on its run;
    ``logged_model``: the MLflow logged model of those weights, when a stage logged one; ``title``: what the
    MLflow and Prefect runs are called, instead of ``<model> evaluation · <profile>``)."""
    profile, project = prepared(profile)
    section = require(profile, "evaluation")
    uri = tracking.tracking_uri(profile.tracking, project)
    model = model or resolve_model_task(section.model, project, "base", uri)
    tags = {"polyreason.model_tag": model.tag, "polyreason.model_fingerprint": model.fingerprint[:16],
            **({"polyreason.registered": model.registered} if model.registered else {}), **(run_tags or {})}
    evaluated = section.model_copy(update={"model": model.model})  # the params name the weights it evaluated
    with tracking.stage_run(profile.tracking, project, title or subject("evaluation", profile.name, model.tag),
                            stage="evaluation",
                            settings_of={"evaluation.": evaluated},
                            params={"evaluation.model_tag": model.tag,
                                    **({"evaluation.registered": model.registered} if model.registered else {})},
                            tags=tags, parent=parent) as run:
        model_id = evaluated_model_task(run, model, logged_model)
        prepared_benchmarks = [prepare_benchmark(b, section, model) for b in section.benchmarks]
        index = search_index(section, project)
        pooled = pool_generations_task([b for b in prepared_benchmarks if b.name not in section.qa_benchmarks()],
                                       model, project)
        benchmarks = {b.name: evaluate_benchmark(run, b, section, model, project, index, model_id, parent)
                      for b in prepared_benchmarks}
        release_generators()  # the benchmarks shared one load; the next model needs the memory
        mark_cache(run, [Path(b.generations.path).parent for b in benchmarks.values()],
                   not any(b.generated for b in benchmarks.values()),
                   [load_benchmark_task, build_prompts_task, generate_task, score_task, report_task,
                    *([search_generate_task] if index is not None else [])])
    publish_stage_run(run, project, f"{profile.name}-evaluation-{model.tag}")
    return EvaluationOutputs(model=model, benchmarks=benchmarks, run_id=run.run_id, pooled=pooled, model_id=model_id)
