"""Prefect tasks of the evaluation stage: thin adapters over one component each.

Cache keys (``tasks.caching``): task inputs + task source + the source of the
components called. The generation key holds the model fingerprint (path +
weight file identities) and the sampling settings with their seed; scoring is
keyed on the generations file's content hash and the scoring settings, so a new
verifier re-scores without generating again. Tasks return ``ArtifactRef``s and
never take a ``RunRef`` (a run id in the key would defeat reuse across runs).

Each writing task holds its directory's lock (``tasks.artifacts.writing``): a
second run of the same profile waits for the first and reuses what it
finished; generation must hold every sample of every prompt before it is
published.
"""

from __future__ import annotations

import json
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from components.config import fingerprint
from components.settings import BenchmarkSettings, PromptSettings, SamplingSettings, ScoringSettings
from tasks.artifacts import writing, write_atomic
from tasks.caching import CACHED, ArtifactRef, artifact_dir, component_cache_policy
from tasks.models import generator_for
from tasks.outputs import ModelRef
from tasks.tracking import RunRef


@task(name="load-benchmark", cache_policy=component_cache_policy("components.data.benchmarks", "components.records"),
      **CACHED)
def load_benchmark_task(benchmark: BenchmarkSettings) -> dict:
    """Benchmark items (as dicts) and the malformed rows that were skipped."""
    from components.data.benchmarks import load_benchmark

    result = load_benchmark(
        benchmark.name, data_dir=benchmark.data_dir, languages=benchmark.languages, limit=benchmark.limit,
        selection=benchmark.selection, sample_seed=benchmark.sample_seed, hub_languages=benchmark.hub_languages,
    )
    return {"items": [item.to_dict() for item in result.items], "errors": list(result.errors)}


@task(name="build-prompts", cache_policy=component_cache_policy("components.data.prompts"), **CACHED)
def build_prompts_task(items: list[dict], prompt: PromptSettings, model: ModelRef) -> dict:
    """Prompts in item order (chat template applied for local chat models) and the stop strings they need."""
    from components.data.datasets import LOCAL_BACKENDS
    from components.data.prompts import build_prompts, stop_sequences
    from components.records import BenchmarkItem

    records = [BenchmarkItem.from_dict(item) for item in items]
    settings = model.model
    template = settings.chat and settings.backend in LOCAL_BACKENDS  # an API applies its template server-side
    tokenizer = None
    if template:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(settings.model)
    prompts = build_prompts(records, prompt, tokenizer=tokenizer, chat=template, thinking=settings.thinking)
    return {"prompts": prompts, "stop": stop_sequences(records, prompt, chat=settings.chat)}


@task(name="generate", cache_policy=component_cache_policy("components.generation", "components.records"), **CACHED)
def generate_task(items: list[dict], prompts: list[str], model: ModelRef, sampling: SamplingSettings,
                  project_dir: str, cache_dir: str, stop: list[str]) -> ArtifactRef:
    """Generate samples into a resumable JSONL artifact (content-addressed directory), with the process's
    loaded generator of ``model``."""
    from components.generation.resumable import generate_to_jsonl
    from components.records import BenchmarkItem

    out = generation_path(project_dir, items, prompts, model, sampling, stop)
    with writing(out.parent, progress=lambda: journal_progress(out, len(prompts) * sampling.n)) as slot:
        if (done := slot.reuse(out)) is not None:
            return done
        generator = generator_for(model, cache_dir)
        summary = generate_to_jsonl(generator, [BenchmarkItem.from_dict(i) for i in items], prompts, sampling, out,
                                    stop)
        return slot.publish(out, summary.to_dict())


def generation_path(project_dir: str, items: list[dict], prompts: list[str], model: ModelRef,
                    sampling: SamplingSettings, stop: list[str]) -> Path:
    """The generations file of one benchmark: content-addressed by everything that shapes its rows."""
    key = fingerprint({"items": items, "prompts": prompts, "model": model.fingerprint, "sampling": sampling,
                       "stop": stop})
    return artifact_dir(project_dir, "generation", key) / "generations.jsonl"


@task(name="generate-pooled", cache_policy=NO_CACHE)
def pool_generations_task(benchmarks: list[dict], model: ModelRef, project_dir: str, cache_dir: str) -> dict:
    """Generate the missing prompts of several benchmarks in shared backend calls, into their journals.

    ``benchmarks``: one dict per benchmark (``name``, ``items``, ``prompts``,
    ``sampling``, ``stop``). Benchmarks with the same sampling settings and stop
    strings whose generations file is not finished yet are pooled; a group of
    one is left to its own ``generate_task``. Each pooled benchmark's directory
    lock is held (in path order, so two runs cannot deadlock) while its
    journal is written; the file itself is then finished, published and
    cached by the benchmark's ``generate_task``, which finds every prompt in
    the journal and calls the backend no more. Returns one dict per pooled
    group: its benchmarks, prompts generated and the backend's time.
    """
    from contextlib import ExitStack

    from components.generation.resumable import GenerationJob, generate_into_journals
    from components.records import BenchmarkItem

    groups: dict[str, list[tuple[dict, Path]]] = {}
    for bench in benchmarks:
        out = generation_path(project_dir, bench["items"], bench["prompts"], model, bench["sampling"], bench["stop"])
        if not out.exists():
            groups.setdefault(fingerprint([bench["sampling"], bench["stop"]]), []).append((bench, out))
    pooled = []
    for members in groups.values():
        if len(members) < 2:
            continue
        members.sort(key=lambda member: str(member[1]))
        sampling, stop = members[0][0]["sampling"], members[0][0]["stop"]
        with ExitStack() as stack:
            for bench, out in members:
                expected = len(bench["prompts"]) * sampling.n
                stack.enter_context(writing(out.parent, progress=lambda o=out, e=expected: journal_progress(o, e)))
            jobs = [GenerationJob([BenchmarkItem.from_dict(i) for i in bench["items"]], bench["prompts"], out)
                    for bench, out in members if not out.exists()]  # another run may have finished one meanwhile
            if not jobs:
                continue
            results, backend = generate_into_journals(generator_for(model, cache_dir), jobs, sampling, stop)
        pooled.append({"benchmarks": [bench["name"] for bench, _ in members],
                       "prompts_generated": sum(r.prompts_generated for r in results),
                       "backend_seconds": round(backend.seconds, 4), "first_call_at": backend.first_call_at,
                       "last_return_at": backend.last_return_at})
    return pooled


def journal_progress(out: Path, expected: int) -> str:
    """How many generated rows the journals of ``out`` keep (what an interrupted run leaves for its re-run)."""
    rows = sum(1 for path in out.parent.glob(out.name + ".partial*") for line in path.open("rb") if line.strip())
    return f"{rows} of {expected} generated rows kept"


@task(
    name="score",
    cache_policy=component_cache_policy(
        "components.scoring", "components.verification", "components.metrics", "components.language"
    ),
    **CACHED,
)
def score_task(generations: ArtifactRef, scoring: ScoringSettings, project_dir: str) -> ArtifactRef:
    """Score every sample; write per-row verdicts and the per-language aggregate."""
    from components.scoring import score_file

    out = artifact_dir(project_dir, "scores", fingerprint([generations.fingerprint, scoring])) / "scores.json"
    with writing(out.parent) as slot:
        if (done := slot.reuse(out)) is not None:
            return done
        result = score_file(
            generations.path, verifier=scoring.verifier, lcpr_rule=scoring.lcpr_rule, words_path=scoring.words_path,
            max_context=scoring.max_context, slc_threshold=scoring.slc_threshold, pass_k=scoring.pass_k,
            in_domain=scoring.in_domain, extraction=scoring.extraction,
        )
        write_atomic(out, json.dumps(result, ensure_ascii=False, default=str))
        return slot.publish(out, {"errors": len(result.get("errors", []))})


@task(name="report", cache_policy=component_cache_policy("components.reporting", "components.metrics"), **CACHED)
def report_task(benchmark: str, generations: ArtifactRef, scores: ArtifactRef, project_dir: str) -> ArtifactRef:
    """Render the benchmark's metrics, tables and plot (groups as scored) into a content-addressed directory."""
    from components.reporting import write_report

    out = artifact_dir(project_dir, "reports", fingerprint([benchmark, generations.fingerprint, scores.fingerprint]))
    with writing(out) as slot:
        if (done := slot.reuse(out)) is not None:
            return done
        report = write_report(benchmark, generations.path, scores.path, out)
        files = [path for path in out.iterdir() if path.is_file() and not path.name.startswith(".")]
        return slot.publish(out, {"languages": report.language_table}, files=files,
                            fingerprint=fingerprint(report.metrics))


@task(name="log-benchmark", cache_policy=NO_CACHE)
def log_benchmark_task(run: RunRef, benchmark: str, report: ArtifactRef, scores: ArtifactRef,
                       load_errors: list[str]) -> dict:
    """Upload one rendered benchmark report (metrics, generations, table, plot) to the flow's MLflow run."""
    from components.reporting import FIGURE_FILE, generations_file, read_report
    from tasks import tracking

    rendered = read_report(benchmark, report.path)
    score_errors = scores.summary.get("errors", 0)
    tracking.log_metrics(run, {**rendered.metrics, f"evaluation/{benchmark}/load_errors": len(load_errors),
                               f"evaluation/{benchmark}/score_errors": score_errors})
    out_dir = Path(report.path)
    tracking.log_artifact(run, out_dir / generations_file(benchmark), f"evaluation/{benchmark}")
    tracking.log_artifact(run, out_dir / FIGURE_FILE, f"evaluation/{benchmark}")
    tracking.log_table(run, rendered.language_table, f"evaluation/{benchmark}/languages.json")
    if load_errors:
        errors_path = Path(scores.path).parent / f"{benchmark}_load_errors.txt"
        errors_path.write_text("\n".join(load_errors) + "\n", encoding="utf-8")
        tracking.log_artifact(run, errors_path, f"evaluation/{benchmark}")
    return {"metrics": rendered.metrics, "languages": rendered.language_table}
