"""What the SFT and GRPO tasks share: the run directory, launching the trainer process, logging its output.

The trainer runs in its own process (``components.training``); the task writes
the ``TrainingJob``, waits for the process and reads ``<out>/result.json``. A
training run is identified by its whole key (``training_run``): the stage's
settings without their operational fields, the fingerprints of model, adapter
and datasets, the digest of the code the task runs and the library versions of
its stages (``runtime.cache.task_code``, what its cache key holds), and the world size
of the launch (processes x nodes). The run directory is named by that key and
the trainer marks each checkpoint with it, so a run killed mid-way leaves its
checkpoints where the re-run of the same key looks, and the trainer resumes
from the last complete one; after an edit to the code the stage reaches, a
library upgrade or another world size the key differs and the run trains from
step 0 in a directory of its own. The terminal and the stage's MLflow run say
which happened (``trained from step 0`` / ``resumed from step N of this key``).
The world size also enters the training tasks' cache keys (``WorldSizeKey``):
a 1x8 and a 2x8 run of one profile are two runs. One process trains in a
directory at a time (``Project.produce``); a finished run is published with the
checksums of its adapter and ``result.json``, and a second run of the same
stage reuses it instead of training again. MLflow logging is a separate uncached
task, so a cached training still reports its curves, checkpoints and adapter to
the new run.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from prefect.cache_policies import CachePolicy

from components.config import fingerprint as fingerprint_of
from components.settings import GRPOStageSettings, SFTSettings
from components.training.multinode import Rendezvous, announced, nodes_dir
from components.training.runner import (
    TrainingJob, job_launch_command, last_complete_checkpoint, world_size, write_job,
)  # fmt: skip
from runtime.artifacts import ArtifactRef, file_fingerprint, log
from runtime.cache.policy import CheckedArtifacts, cache_policy, code_of
from runtime.processes.generators import release_generators
from runtime.outputs import TrainedRun
from runtime.processes.children import run_stage_process
from runtime.project import Made, Project, produce_in
from runtime.tracking import RunRef

CHECKPOINT_FILES = ("adapter_model.safetensors", "adapter_config.json", "curriculum_state.json",
                    "reference_resets.json", "reference_resets.safetensors")  # a full model's weights stay on disk


def run_identity(job: TrainingJob, code_digest: str, world: int, *input_fingerprints: str | None) -> list:
    """What identifies one training run: the settings (the audit's left out: it decides whether to train, not what
    is trained), the inputs' fingerprints, the code digest (``runtime.cache.task_code``: own code, modules, libraries)
    and the world size."""
    settings = job.settings
    if job.stage == "grpo":
        settings = settings.model_copy(update={"audit": type(settings.audit)()})
    return [settings, list(input_fingerprints), {"code": code_digest, "world_size": world}]


def training_dir(project: Project, job: TrainingJob, code_digest: str, world: int,
                 *input_fingerprints: str | None) -> Path:
    """Where the run of this identity writes (shared by a killed run and its re-run of the same key only)."""
    return project.directory(job.stage, run_identity(job, code_digest, world, *input_fingerprints))


def launch_world_size(job: TrainingJob, env: Mapping[str, str] | None = None) -> int:
    """The world size of the launch this process would make (the pool's rendezvous, else the accelerate config)."""
    return world_size(job.settings, Rendezvous.from_env(env))


def training_run(project: Project, job: TrainingJob, task: Any,
                 *input_fingerprints: str | None) -> tuple[TrainingJob, Path]:
    """The job with its run key, and its directory: ``task`` (a cached training task) gives the code digest its
    cache key holds, so the run is identified by what the key is."""
    world = launch_world_size(job)
    identity = run_identity(job, code_of(task).digest, world, *input_fingerprints)
    return job.model_copy(update={"run_key": fingerprint_of(identity)}), project.directory(job.stage, identity)


def training_settings(value: Any) -> SFTSettings | GRPOStageSettings | None:
    """The training section among a task's inputs: a section itself, or the one of a job (``GRPOInputs.job``)."""
    if isinstance(value, (SFTSettings, GRPOStageSettings)):
        return value
    if isinstance(value, TrainingJob):
        return value.settings
    if isinstance(value, Mapping):
        return next((found for item in value.values() if (found := training_settings(item)) is not None), None)
    job = getattr(value, "job", None)
    return job.settings if isinstance(job, TrainingJob) else None


@dataclass
class WorldSizeKey(CachePolicy):
    """Cache-key part of a training task: the world size of the launch (``launch_world_size``), which decides the
    global batch and so what is trained; ``None`` (no part) for a task without a training section."""

    def compute_key(self, task_ctx, inputs: dict[str, Any], flow_parameters: dict[str, Any],
                    **kwargs: Any) -> str | None:
        settings = training_settings(inputs or {})
        return None if settings is None else f"world_size={world_size(settings, Rendezvous.from_env())}"


def training_policy(*stages: str) -> CachePolicy:
    """``runtime.cache.policy.cache_policy(*stages)`` with the world size of the launch in the key."""
    checked = cache_policy(*stages)
    return CheckedArtifacts(inner=checked.inner + WorldSizeKey())


def trainer_command(job: TrainingJob, out: Path, phase: str = "train",
                    rendezvous: Rendezvous | None = None) -> tuple[list[str], Path, int]:
    """Write ``job.json``; the launch command, its log file and the time limit of the process for ``phase``."""
    job_path = write_job(job, out)
    command = job_launch_command(sys.executable, job, job_path, out, phase, rendezvous)
    return command, out / f"{phase}.log", job.settings.timeout_s


def run_trainer(job: TrainingJob, out: Path, phase: str = "train") -> None:
    """Launch the trainer process for ``phase`` and wait; its output goes to ``<out>/<phase>.log``.

    Models loaded for generation in this process are released first: the trainer needs the memory. In a
    multi-node job (the work pool's job sets the rendezvous, ``components.training.multinode``) this is node 0:
    the launch is announced to the other nodes while its own trainer processes run.
    """
    release_generators()
    rendezvous = Rendezvous.from_env()
    if rendezvous is not None and rendezvous.node_rank != 0:
        raise RuntimeError(f"this flow run is on node {rendezvous.node_rank}; node 0 runs the flow and the others "
                           "follow (python -m components.training.node_role follow)")
    command, log, timeout_s = trainer_command(job, out, phase, rendezvous)
    with announced(nodes_dir() if rendezvous else None, out / "job.json", out, phase):
        run_stage_process(command, log, timeout_s, f"{job.stage.upper()} {phase}")


def checkpoint_progress(out: Path, run_key: str | None = None) -> str:
    """What an interrupted training leaves for its re-run of the same key: the last complete checkpoint of it."""
    checkpoint = last_complete_checkpoint(out / "trainer", run_key)
    return f"resumes from {checkpoint.name} of this key" if checkpoint else "no complete checkpoint yet"


def trained(job: TrainingJob, out: Path) -> Made:
    """Run the trainer in ``out``; the run as a product: its weights' files (the adapter, or the full model of a
    ``lora: null`` run, as the trainer's ``result.json`` names them: ``weights`` and their directory) and
    ``result.json`` (its summary), fingerprinted by those weights. Says on the terminal where the run started
    (``start_line``)."""
    run_trainer(job, out)
    result = json.loads((out / "result.json").read_text(encoding="utf-8"))
    log(start_line(job.stage, result))
    full = result["weights"] == "full"  # the trainer's record of what it wrote, and where
    weights = Path(result["full_model_dir"] if full else result["adapter_dir"])
    files = [path for path in sorted(weights.rglob("*")) if path.is_file()]
    tensors = sorted(weights.glob("model*.safetensors")) if full else [weights / "adapter_model.safetensors"]
    return Made(summary=result, files=files + [out / "result.json"],
                fingerprint="-".join(file_fingerprint(path) for path in tensors))


def start_line(stage: str, result: Mapping[str, Any]) -> str:
    """``GRPO: trained from step 0 to step 2 (run key 1a2b3c4d5e6f)``, or ``… resumed from step N of this key …``.

    >>> start_line("sft", {"start": "trained from step 0", "global_step": 2, "run_key": "1a2b3c4d5e6f7a8b"})
    'SFT: trained from step 0 to step 2 (run key 1a2b3c4d5e6f)'
    """
    key = (result.get("run_key") or "none")[:12]
    return f"{stage.upper()}: {result.get('start', 'trained')} to step {result.get('global_step')} (run key {key})"


def train_once(job: TrainingJob, out: Path) -> TrainedRun:
    """Train in ``out`` under its write lock, or reuse the run finished there."""
    run = produce_in(out, ".", lambda directory: trained(job, directory),
                     progress=lambda directory: checkpoint_progress(directory, job.run_key))
    return trained_run(run)


def trained_run(run: ArtifactRef) -> TrainedRun:
    """A finished run's weights, as its ``result.json`` names them (the trainer's own record of what it wrote)."""
    return TrainedRun(run=run, adapter=run.summary["adapter_dir"], full_model=run.summary.get("full_model_dir"))


def log_training_output(run: RunRef, trained: TrainedRun, stage: str, dataset: str | None = None) -> list[dict]:
    """Per-step curves (``<stage>/...``), result numbers (those the curves do not hold already: one key per
    number), the metrics file and the training set (a parquet file) as the run's ``training`` dataset input; tags:
    where the run started, its key and the distributed type its trainer used (``FSDP``, ``DEEPSPEED``,
    ``MULTI_CPU`` …, as ``result.json`` records it); returns the per-step records (checkpoints: ``log_checkpoints``)."""
    from components.training.report import metric_series, mlflow_key
    from components.training.runner import read_metrics
    from runtime import tracking

    out = Path(trained.run.path)
    records = read_metrics(out / "metrics.jsonl")
    summary = trained.run.summary
    tracking.set_tags(run, {f"polyreason.{stage}.start": summary.get("start", "unknown"),
                            f"polyreason.{stage}.run_key": summary.get("run_key") or "none",
                            f"polyreason.{stage}.distributed_type": summary.get("distributed_type", "unknown")})
    series = metric_series(records, stage)
    tracking.log_metric_series(run, series)
    curves = {key for row in series for key in row}  # trl's end-of-training numbers are in its log already
    tracking.log_metrics(run, {f"{stage}/result/{key}": value for key, value in summary.items()
                               if isinstance(value, (int, float)) and not isinstance(value, bool)
                               and mlflow_key(key, stage) not in curves})
    tracking.log_artifact(run, out / "metrics.jsonl", stage)
    if dataset is not None and dataset.endswith(".parquet"):
        import pandas as pd

        tracking.log_dataset_input(run, pd.read_parquet(dataset), f"{stage}/{Path(dataset).stem}", dataset)
    return records


def log_rollout_tables(run: RunRef, trained: TrainedRun, stage: str, rows: int) -> int:
    """The first ``rows`` rollouts of each logging step as an MLflow table (``<stage>/rollouts/step_NNNNN.json``).

    trl's ``GRPOTrainer`` with ``log_completions`` writes each logging step's rollouts to
    ``<output_dir>/completions/completions_NNNNN.parquet`` (prompt, completion, each reward function's
    value, the extra columns rewards give ``log_extra``: language verdicts, τ); they are read from there,
    never recomputed. Returns the number of tables logged.
    """
    import pandas as pd

    from runtime import tracking

    if rows <= 0:
        return 0
    tables = sorted((Path(trained.run.path) / "trainer" / "completions").glob("completions_*.parquet"))
    for path in tables:
        frame = pd.read_parquet(path).head(rows)
        frame = frame.apply(lambda column: column.map(cell_text) if column.dtype == object else column)
        tracking.log_table(run, frame.to_dict("records"), f"{stage}/rollouts/step_{path.stem.split('_')[-1]}.json")
    return len(tables)


def cell_text(value):
    """A table cell MLflow can write as JSON: a chat (messages read back from parquet) as its text."""
    if isinstance(value, str) or value is None or not hasattr(value, "__iter__"):
        return value
    return "\n".join(str(m.get("content", "")) if isinstance(m, dict) else str(m) for m in value)


def log_checkpoints(run: RunRef, trained: TrainedRun, stage: str, name: str, source: str | None = None) -> str:
    """Each checkpoint (its adapter, curriculum and reset files) and the final adapter as a logged model of ``run``,
    with its step; the run's ``polyreason.checkpoint.<step>`` tags name them. Returns the final adapter's model id
    (a full-parameter run's final model, described by its path).

    ``source``: on a cache hit, the run that trained these files; its logged models are linked to ``run``
    (``logged_models.link_source_models``) and nothing is logged or copied again."""
    from runtime import tracking
    from runtime.tracking.logged_models import MODEL_PREFIX, link_source_models, log_model

    linked = link_source_models(run, source) if source else {}
    final_kind = f"{stage}-model" if trained.full else f"{stage}-adapter"
    if final_kind in linked:
        return linked[final_kind]

    out = Path(trained.run.path)
    checkpoints = sorted((out / "trainer").glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[-1]))
    tags = {}
    for checkpoint in checkpoints:
        step = int(checkpoint.name.split("-")[-1])
        model_id = log_model(run, f"{name}-{stage}-checkpoint-{step}", kind=f"{stage}-checkpoint", step=step,
                             files=[checkpoint / f for f in CHECKPOINT_FILES if (checkpoint / f).is_file()])
        tags[f"polyreason.checkpoint.{step}"] = f"{MODEL_PREFIX}{model_id}"
    tracking.set_tags(run, tags)
    final_step = trained.run.summary.get("global_step")
    if trained.full:  # all weights trained: the full model is described, not uploaded
        return log_model(run, f"{name}-{stage}-model", kind=f"{stage}-model", step=final_step,
                         params={"weights": "full", "path": trained.full_model}, tags={"polyreason.weights": "not uploaded"})
    return log_model(run, f"{name}-{stage}-adapter", kind=f"{stage}-adapter", step=final_step,
                     directory=out / "adapter")
