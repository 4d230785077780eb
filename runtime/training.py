"""What the SFT and GRPO tasks share: the run directory, launching the trainer process, logging its output.

The trainer runs in its own process (``components.training``); the task writes
the ``TrainingJob``, waits for the process and reads ``<out>/result.json``. The
run directory is content-addressed (the stage's settings without their
operational fields + the fingerprints of model, adapter and dataset), so a run
killed mid-way leaves its checkpoints where the re-run looks and the trainer
resumes from the last complete one. One process trains in a directory at a
time (``Project.produce``); a finished run is published with the checksums of
its adapter and ``result.json``, and a second run of the same stage reuses it
instead of training again. MLflow logging is a separate
uncached task, so a cached training still reports its curves, checkpoints and
adapter to the new run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from components.training.nodes import Rendezvous, announced, nodes_dir
from components.training.runner import TrainingJob, job_launch_command, last_complete_checkpoint, write_job
from runtime.artifacts import ArtifactRef, file_fingerprint
from runtime.generators import release_generators
from runtime.outputs import TrainedRun
from runtime.process import run_stage_process
from runtime.project import Made, Project, produce_in
from runtime.tracking import RunRef

CHECKPOINT_FILES = ("adapter_model.safetensors", "adapter_config.json", "curriculum_state.json",
                    "reference_resets.json", "reference_resets.safetensors")


def training_dir(project: Project, job: TrainingJob, *input_fingerprints: str | None) -> Path:
    """Where one training run writes (shared by a killed run and its re-run)."""
    settings = job.settings
    if job.stage == "grpo":  # the audit decides whether to train, not what is trained
        settings = settings.model_copy(update={"audit": type(settings.audit)()})
    return project.directory(job.stage, [settings, list(input_fingerprints)])


def trainer_command(job: TrainingJob, out: Path, phase: str = "train",
                    rendezvous: Rendezvous | None = None) -> tuple[list[str], Path, int]:
    """Write ``job.json``; the launch command, its log file and the time limit of the process for ``phase``."""
    job_path = write_job(job, out)
    command = job_launch_command(sys.executable, job, job_path, out, phase, rendezvous)
    return command, out / f"{phase}.log", job.settings.timeout_s


def run_trainer(job: TrainingJob, out: Path, phase: str = "train") -> None:
    """Launch the trainer process for ``phase`` and wait; its output goes to ``<out>/<phase>.log``.

    Models loaded for generation in this process are released first: the trainer needs the memory. In a
    multi-node job (the work pool's job sets the rendezvous, ``components.training.nodes``) this is node 0:
    the launch is announced to the other nodes while its own trainer processes run.
    """
    release_generators()
    rendezvous = Rendezvous.from_env()
    if rendezvous is not None and rendezvous.node_rank != 0:
        raise RuntimeError(f"this flow run is on node {rendezvous.node_rank}; node 0 runs the flow and the others "
                           "follow (python -m components.training.node follow)")
    command, log, timeout_s = trainer_command(job, out, phase, rendezvous)
    with announced(nodes_dir() if rendezvous else None, out / "job.json", out, phase):
        run_stage_process(command, log, timeout_s, f"{job.stage.upper()} {phase}")


def checkpoint_progress(out: Path) -> str:
    """What an interrupted training leaves for its re-run: the last complete checkpoint."""
    checkpoint = last_complete_checkpoint(out / "trainer")
    return f"resumes from {checkpoint.name}" if checkpoint else "no complete checkpoint yet"


def trained(job: TrainingJob, out: Path) -> Made:
    """Run the trainer in ``out``; the run as a product: its adapter's files and ``result.json`` (its summary),
    fingerprinted by the adapter's weights."""
    run_trainer(job, out)
    result = json.loads((out / "result.json").read_text(encoding="utf-8"))
    files = [path for path in sorted((out / "adapter").rglob("*")) if path.is_file()] + [out / "result.json"]
    return Made(summary=result, files=files, fingerprint=file_fingerprint(out / "adapter" / "adapter_model.safetensors"))


def train_once(job: TrainingJob, out: Path) -> TrainedRun:
    """Train in ``out`` under its write lock, or reuse the run finished there."""
    run = produce_in(out, ".", lambda directory: trained(job, directory), progress=checkpoint_progress)
    return trained_run(run)


def trained_run(run: ArtifactRef) -> TrainedRun:
    """A finished run's weights, as its ``result.json`` names them (the trainer's own record of what it wrote)."""
    return TrainedRun(run=run, adapter=run.summary["adapter_dir"], merged=run.summary.get("merged_dir"))


def log_training_output(run: RunRef, trained: TrainedRun, stage: str, dataset: str | None = None) -> list[dict]:
    """Per-step curves (``<stage>/...``), result numbers, the metrics file and the training set (a parquet file) as the
    run's ``training`` dataset input; returns the per-step records (checkpoints: ``log_checkpoints``)."""
    from components.training.report import metric_series
    from components.training.runner import read_metrics
    from runtime import tracking

    out = Path(trained.run.path)
    records = read_metrics(out / "metrics.jsonl")
    tracking.log_metric_series(run, metric_series(records, stage))
    tracking.log_metrics(run, {f"{stage}/result/{key}": value for key, value in trained.run.summary.items()
                               if isinstance(value, (int, float)) and not isinstance(value, bool)})
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
    with its step; the run's ``polyreason.checkpoint.<step>`` tags name them. Returns the final adapter's model id.

    ``source``: on a cache hit, the run that trained these files; its logged models are linked to ``run``
    (``logged_models.link_source_models``) and nothing is logged or copied again."""
    from runtime import tracking
    from runtime.logged_models import MODEL_PREFIX, link_source_models, log_model

    linked = link_source_models(run, source) if source else {}
    if f"{stage}-adapter" in linked:
        return linked[f"{stage}-adapter"]

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
    return log_model(run, f"{name}-{stage}-adapter", kind=f"{stage}-adapter", step=final_step,
                     directory=out / "adapter")
