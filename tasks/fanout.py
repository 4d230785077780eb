"""Prefect tasks of a fanned-out evaluation: cut the models' generations into tasks, run one, log where they ran.

``plan_units_task`` cuts the generations still to make (files not finished yet)
into tasks as ``execution`` asks: one per model (its benchmarks grouped by
sampling and stop strings and ordered by path, so the backend calls are those of
a sequential evaluation), one per model x benchmark (``split: benchmark``), and
one per language of each benchmark in ``shard_languages``. ``generate_unit_task``
runs one (``runtime.processes.fanout``) wherever the task runner puts it. None is cached:
the generations are cached by the evaluation's own ``generate`` task, which
publishes them from the journals these tasks write.
"""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from components.config import fingerprint
from components.settings import ExecutionSettings
from runtime import tracking
from runtime.outputs import GenerationUnit, ModelRef, PreparedBenchmark, UnitFile, UnitGroup, UnitResult
from runtime.project import Project
from runtime.tracking import RunRef
from tasks.evaluation import GENERATIONS, generation_identity


def unit_files(bench: PreparedBenchmark, model: ModelRef, project: Project, shard: bool) -> list[UnitFile]:
    """The files of ``bench`` still to generate for ``model``: the benchmark's, or one per language."""
    identity = generation_identity(bench.items, bench.prompts, model, bench.sampling, bench.stop)
    out = project.directory("generation", identity) / GENERATIONS
    if out.exists():
        return []
    if not shard:
        return [UnitFile(benchmark=bench.name, items=bench.items, prompts=bench.prompts, out=str(out))]
    languages = list(dict.fromkeys(item["lang"] for item in bench.items))
    files = []
    for lang in languages:
        indices = [i for i, item in enumerate(bench.items) if item["lang"] == lang]
        files.append(UnitFile(benchmark=bench.name, language=lang, items=[bench.items[i] for i in indices],
                              prompts=[bench.prompts[i] for i in indices], out=str(out), indices=indices))
    return files


def grouped(files: list[tuple[PreparedBenchmark, UnitFile]]) -> list[UnitGroup]:
    """Files by sampling and stop strings, each group in path order (the pooled generation's order)."""
    groups: dict[str, list[tuple[PreparedBenchmark, UnitFile]]] = {}
    for bench, file in files:
        groups.setdefault(fingerprint([bench.sampling, bench.stop]), []).append((bench, file))
    return [UnitGroup(sampling=members[0][0].sampling, stop=members[0][0].stop,
                      files=[file for _, file in sorted(members, key=lambda member: member[1].out)])
            for members in groups.values()]


def unit_name(model: ModelRef, files: list[UnitFile]) -> str:
    """``sft: mgsm, msvamp`` or ``base: mgsm[fr]``."""
    return f"{model.tag}: " + ", ".join(f.benchmark + (f"[{f.language}]" if f.language else "") for f in files)


@task(name="plan-generation-tasks", cache_policy=NO_CACHE)
def plan_units_task(models: list[ModelRef], benchmarks: list[list[PreparedBenchmark]], execution: ExecutionSettings,
                    project: Project) -> list[GenerationUnit]:
    """The generation tasks of ``models`` (``benchmarks[i]``: model ``i``'s prepared benchmarks)."""
    units = []
    for model, prepared in zip(models, benchmarks):
        files = [(bench, f) for bench in prepared
                 for f in unit_files(bench, model, project, bench.name in execution.shard_languages)]
        whole = [(bench, f) for bench, f in files if f.language is None]
        parts = [whole] if execution.split == "model" and whole else [[member] for member in whole]
        parts += [[member] for member in files if member[1].language is not None]
        units += [GenerationUnit(name=unit_name(model, [f for _, f in part]), model=model, groups=grouped(part))
                  for part in parts]
    return units


@task(name="generate-unit", task_run_name="generate {unit.name}", cache_policy=NO_CACHE)
def generate_unit_task(unit: GenerationUnit, execution: ExecutionSettings, project: Project) -> UnitResult:
    """Generate one task's files into their journals, in a process of its own on the task's GPUs."""
    from runtime.processes.fanout import run_unit

    return run_unit(unit, execution, project)


@task(name="log-fanout", cache_policy=NO_CACHE)
def log_fanout_task(run: RunRef, results: list[UnitResult]) -> None:
    """Where and when each generation task ran, as a table of the recipe's run, and the fan-out's wall time."""
    if not results:
        return
    rows = [{"task": r.name, "host": r.host, "gpus": r.gpus or "", "prompts_generated": r.prompts_generated,
             "backend_seconds": r.backend_seconds, "seconds": round(r.ended_at - r.started_at, 3),
             "skipped": r.skipped} for r in results]
    tracking.log_table(run, rows, "evaluation/fanout.json")
    wall = max(r.ended_at for r in results) - min(r.started_at for r in results)
    tracking.log_metrics(run, {"evaluation/fanout/wall_seconds": round(wall, 3),
                               "evaluation/fanout/tasks": len(results)})

