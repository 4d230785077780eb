"""Prefect tasks of the evaluation stage: thin adapters over one component each.

Cache keys (``runtime.cache.policy``): task inputs + the code the task runs + its
stage's libraries. The generation key holds the model fingerprint (path +
weight file identities) and the sampling settings with their seed; scoring is
keyed on the generations file's content hash and the scoring settings, so a new
verifier re-scores without generating again. Tasks return ``ArtifactRef``s and
never take a ``RunRef`` (a run id in the key would defeat reuse across runs).

Each product is written through ``Project.produce`` (one writer per directory,
reused when finished, published last); generation must hold every sample of
every prompt before it is published.
"""

from __future__ import annotations

import json
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from components.config import fingerprint
from components.settings import BenchmarkSettings, PromptSettings, SamplingSettings, ScoringSettings
from runtime import tracking
from runtime.artifacts import ArtifactRef, write_atomic, writing
from runtime.cache.policy import CACHED, cache_policy
from runtime.processes.generators import generator_for
from runtime.outputs import LoadedBenchmark, ModelRef, PooledGeneration, PreparedBenchmark, Prompts
from runtime.project import Made, Project
from runtime.tracking import RunRef

GENERATIONS = "generations.jsonl"


@task(name="load-benchmark", cache_policy=cache_policy("benchmarks"), **CACHED)
def load_benchmark_task(benchmark: BenchmarkSettings) -> LoadedBenchmark:
    """Benchmark items (as dicts) and the malformed rows that were skipped."""
    from components.data.benchmarks import load_configured_benchmark

    result = load_configured_benchmark(benchmark)
    return LoadedBenchmark(items=[item.to_dict() for item in result.items], errors=list(result.errors))


@task(name="build-prompts", cache_policy=cache_policy("prompts"), **CACHED)
def build_prompts_task(items: list[dict], prompt: PromptSettings, model: ModelRef) -> Prompts:
    """Prompts in item order (chat template applied for local chat models) and the stop strings they need;
    a QA item's question is the search instruction around it."""
    from components.data.prompts import build_prompts, stop_sequences
    from components.data.qa_dataset import search_items
    from components.records import BenchmarkItem

    records = search_items(BenchmarkItem.from_dict(item) for item in items)
    settings = model.model
    template = settings.chat and settings.backend in ("transformers", "vllm")  # an API applies its own template
    tokenizer = None
    if template:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(settings.model)
    prompts = build_prompts(records, prompt, tokenizer=tokenizer, chat=template, thinking=settings.thinking)
    return Prompts(prompts=prompts, stop=stop_sequences(records, prompt, chat=settings.chat))


def generation_identity(items: list[dict], prompts: list[str], model: ModelRef, sampling: SamplingSettings,
                        stop: list[str]) -> dict:
    """What shapes a benchmark's generations: its directory is content-addressed by it."""
    return {"items": items, "prompts": prompts, "model": model.fingerprint, "sampling": sampling, "stop": stop}


@task(name="generate", cache_policy=cache_policy("generation"), **CACHED)
def generate_task(items: list[dict], prompts: list[str], model: ModelRef, sampling: SamplingSettings,
                  project: Project, stop: list[str]) -> ArtifactRef:
    """Generate samples into a resumable JSONL artifact, with the process's loaded generator of ``model``."""
    from components.generation.resumable import generate_to_jsonl
    from components.records import BenchmarkItem

    def generate(out: Path) -> dict:
        records = [BenchmarkItem.from_dict(item) for item in items]
        generator = generator_for(model, project.cache_dir)
        return generate_to_jsonl(generator, records, prompts, sampling, out / GENERATIONS, stop,
                                 label=model.tag).to_dict()

    return project.produce("generation", generation_identity(items, prompts, model, sampling, stop), GENERATIONS,
                           generate, progress=lambda out: journal_progress(out / GENERATIONS, len(prompts) * sampling.n))


@task(name="generate-pooled", cache_policy=NO_CACHE)
def pool_generations_task(benchmarks: list[PreparedBenchmark], model: ModelRef,
                          project: Project) -> list[PooledGeneration]:
    """Generate the missing prompts of several benchmarks in shared backend calls, into their journals.

    Benchmarks with the same sampling settings and stop strings whose
    generations file is not finished yet are pooled; a group of one is left to
    its own ``generate_task``. Each pooled benchmark's directory lock is held
    (in path order, so two runs cannot deadlock) while its journal is written;
    the file itself is then finished, published and cached by the benchmark's
    ``generate_task``, which finds every prompt in the journal and calls the
    backend no more: a journal is the hand-over, the file has one publisher.
    """
    from contextlib import ExitStack

    from components.generation.resumable import GenerationJob, generate_into_journals
    from components.records import BenchmarkItem

    groups: dict[str, list[tuple[PreparedBenchmark, Path]]] = {}
    for bench in benchmarks:
        identity = generation_identity(bench.items, bench.prompts, model, bench.sampling, bench.stop)
        out = project.directory("generation", identity) / GENERATIONS
        if not out.exists():
            groups.setdefault(fingerprint([bench.sampling, bench.stop]), []).append((bench, out))
    pooled = []
    for members in groups.values():
        if len(members) < 2:
            continue
        members.sort(key=lambda member: str(member[1]))
        sampling, stop = members[0][0].sampling, members[0][0].stop
        with ExitStack() as stack:
            for bench, out in members:
                expected = len(bench.prompts) * sampling.n
                stack.enter_context(writing(out.parent, progress=lambda o=out, e=expected: journal_progress(o, e)))
            jobs = [GenerationJob([BenchmarkItem.from_dict(i) for i in bench.items], bench.prompts, out)
                    for bench, out in members if not out.exists()]  # another run may have finished one meanwhile
            if not jobs:
                continue
            results, backend = generate_into_journals(generator_for(model, project.cache_dir), jobs, sampling, stop,
                                                       label=model.tag)
        pooled.append(PooledGeneration(benchmarks=[bench.name for bench, _ in members],
                                       prompts_generated=sum(r.prompts_generated for r in results),
                                       backend_seconds=round(backend.seconds, 4), first_call_at=backend.first_call_at,
                                       last_return_at=backend.last_return_at))
    return pooled


def journal_progress(out: Path, expected: int) -> str:
    """How many generated rows the journals of ``out`` keep (what an interrupted run leaves for its re-run)."""
    rows = sum(1 for path in out.parent.glob(out.name + ".partial*") for line in path.open("rb") if line.strip())
    return f"{rows} of {expected} generated rows kept"


@task(name="score", cache_policy=cache_policy("scoring"), **CACHED)
def score_task(generations: ArtifactRef, scoring: ScoringSettings, project: Project) -> ArtifactRef:
    """Score every sample; write per-row verdicts and the per-language aggregate."""
    from components.scoring import score_file

    def score(out: Path) -> dict:
        result = score_file(generations.path, scoring)
        write_atomic(out / "scores.json", json.dumps(result, ensure_ascii=False, default=str))
        return {"errors": len(result.get("errors", []))}

    return project.produce("scores", [generations.fingerprint, scoring], "scores.json", score)


@task(name="report", cache_policy=cache_policy("reporting"), **CACHED)
def report_task(benchmark: str, generations: ArtifactRef, scores: ArtifactRef, project: Project) -> ArtifactRef:
    """Render the benchmark's metrics, tables and plot (groups as scored) into a content-addressed directory."""
    from components.reports.benchmark import write_report

    def render(out: Path) -> Made:
        report = write_report(benchmark, generations.path, scores.path, out)
        # fingerprinted by its numbers: a plot re-drawn by another matplotlib is the same report downstream
        return Made(summary={"languages": report.language_table}, fingerprint=fingerprint(report.metrics))

    return project.produce("reports", [benchmark, generations.fingerprint, scores.fingerprint], ".", render)


@task(name="evaluated-model", cache_policy=NO_CACHE)
def evaluated_model_task(run: RunRef, model: ModelRef, logged_model: str | None) -> str:
    """The logged model an evaluation measures, named as an input of its run: the one handed in (a trained
    stage's), a registered version's, else a logged model describing the reference (no weights uploaded; the one
    logged for the same fingerprint before, if any)."""
    from runtime.tracking.logged_models import log_model_input, reference_model, registered_model_id

    model_id = logged_model or (registered_model_id(run.tracking_uri, model.registered) if model.registered else None)
    if model_id is None:  # described once per fingerprint: a re-run measures the same logged model
        settings = model.model
        model_id = reference_model(run, f"{model.tag}-{Path(settings.model).name}", f"{model.tag}-reference",
                                   model.fingerprint, {"model": settings.model, "adapter": settings.adapter,
                                                       "backend": settings.backend},
                                   {"polyreason.model_tag": model.tag, "polyreason.weights": "not uploaded"})
    log_model_input(run, model_id)
    return model_id


def benchmark_source(benchmark: BenchmarkSettings) -> str:
    """Where a benchmark's rows come from: its local directory, else its Hugging Face hub page."""
    from components.data.benchmarks import benchmark_spec

    if benchmark.data_dir is not None and not benchmark.hub_languages:
        return str(benchmark.data_dir)
    hub = benchmark_spec(benchmark.name).hub
    repo = hub.repo if hub is not None else benchmark.name
    return f"https://huggingface.co/datasets/{repo}"


@task(name="log-benchmark-dataset", cache_policy=NO_CACHE)
def log_benchmark_dataset_task(run: RunRef, benchmark: BenchmarkSettings, items: list[dict]):
    """The benchmark's evaluated rows as an MLflow dataset input of the run (context ``evaluation``)."""
    from runtime.tracking.logged_models import log_dataset

    return log_dataset(run, items, benchmark.name, benchmark_source(benchmark), context="evaluation")


@task(name="log-benchmark", cache_policy=NO_CACHE)
def log_benchmark_task(run: RunRef, benchmark: str, report: ArtifactRef, scores: ArtifactRef,
                       load_errors: list[str], model_id: str | None = None, dataset=None) -> int:
    """Upload one rendered benchmark report (metrics, generations, tables, plot) to the flow's MLflow run; the
    number of metrics logged. The metrics name the logged model they measure and the benchmark's dataset. The plot
    is ``<benchmark>_accuracy_vs_lcpr.png`` at the run's top level, where MLflow's compare view finds it in every
    evaluation run (it lists only top-level files common to the runs compared)."""
    from components.reports.benchmark import FIGURE_FILE, generations_file, read_report

    rendered = read_report(benchmark, report.path)
    score_errors = scores.summary.get("errors", 0)
    count = tracking.log_metrics(run, {**rendered.metrics, f"evaluation/{benchmark}/load_errors": len(load_errors),
                                       f"evaluation/{benchmark}/score_errors": score_errors},
                                 model_id=model_id, dataset=dataset)
    out_dir = Path(report.path)
    tracking.log_artifact(run, out_dir / generations_file(benchmark), f"evaluation/{benchmark}")
    tracking.log_artifact_as(run, out_dir / FIGURE_FILE, f"{benchmark}_{FIGURE_FILE}")  # top level: compare view
    tracking.log_table(run, rendered.language_table, f"evaluation/{benchmark}/languages.json")
    if rendered.failed_lines:  # each line that failed LCPR's line level, with the language detected in it
        tracking.log_table(run, rendered.failed_lines, f"evaluation/{benchmark}/failed_lines.json")
    if load_errors:  # the skipped rows, as a file of the run (no file in the published scores directory)
        tracking.log_text(run, "\n".join(load_errors) + "\n", f"evaluation/{benchmark}/{benchmark}_load_errors.txt")
    return count
