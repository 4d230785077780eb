"""What the SFT and GRPO tasks share: the run directory, launching the trainer process, logging its output.

The trainer runs in its own process (``components.training``); the task writes
the ``TrainingJob``, waits for the process and reads ``<out>/result.json``. The
run directory is content-addressed (the stage's settings without their
operational fields + the fingerprints of model, adapter and dataset), so a run
killed mid-way leaves its checkpoints where the re-run looks and the trainer
resumes from the last complete one. One process trains in a directory at a
time (its write lock, ``tasks.artifacts``); a finished run is published with
the checksums of its adapter and ``result.json``, and a second run of the same
stage reuses it instead of training again. MLflow logging is a separate
uncached task, so a cached training still reports its curves, checkpoints and
adapter to the new run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from components.config import fingerprint
from components.training.runner import TrainingJob, job_launch_command, last_complete_checkpoint, write_job
from tasks.artifacts import Slot, writing
from tasks.caching import ArtifactRef, artifact_dir, file_fingerprint
from tasks.process import run_stage_process
from tasks.tracking import RunRef

CHECKPOINT_FILES = ("adapter_model.safetensors", "adapter_config.json", "curriculum_state.json",
                    "reference_resets.json", "reference_resets.safetensors")


def training_dir(project_dir: str, job: TrainingJob, *input_fingerprints: str | None) -> Path:
    """Where one training run writes (shared by a killed run and its re-run)."""
    settings = job.settings
    if job.stage == "grpo":  # the audit decides whether to train, not what is trained
        settings = settings.model_copy(update={"audit": type(settings.audit)()})
    return artifact_dir(project_dir, job.stage, fingerprint([settings, list(input_fingerprints)]))


def trainer_command(job: TrainingJob, out: Path, phase: str = "train") -> tuple[list[str], Path, int]:
    """Write ``job.json``; the launch command, its log file and the time limit of the process for ``phase``."""
    job_path = write_job(job, out)
    return job_launch_command(sys.executable, job, job_path, out, phase), out / f"{phase}.log", job.settings.timeout_s


def run_trainer(job: TrainingJob, out: Path, phase: str = "train") -> None:
    """Launch the trainer process for ``phase`` and wait; its output goes to ``<out>/<phase>.log``.

    Models loaded for generation in this process are released first: the trainer needs the memory.
    """
    from tasks.models import release_generators

    release_generators()
    command, log, timeout_s = trainer_command(job, out, phase)
    run_stage_process(command, log, timeout_s, f"{job.stage.upper()} {phase}")


def trained_ref(out: Path) -> ArtifactRef:
    """The run directory, fingerprinted by its adapter, with ``result.json`` as summary."""
    result = json.loads((out / "result.json").read_text(encoding="utf-8"))
    return ArtifactRef(str(out), file_fingerprint(out / "adapter" / "adapter_model.safetensors"), result)


def checkpoint_progress(out: Path) -> str:
    """What an interrupted training leaves for its re-run: the last complete checkpoint."""
    checkpoint = last_complete_checkpoint(out / "trainer")
    return f"resumes from {checkpoint.name}" if checkpoint else "no complete checkpoint yet"


def publish_trained(slot: Slot, out: Path) -> ArtifactRef:
    """Record a finished run: the adapter's files and ``result.json`` with their checksums."""
    ref = trained_ref(out)
    files = [path for path in sorted((out / "adapter").rglob("*")) if path.is_file()] + [out / "result.json"]
    return slot.publish(out, ref.summary, files=files, fingerprint=ref.fingerprint)


def train_once(job: TrainingJob, out: Path) -> ArtifactRef:
    """Train in ``out`` under its write lock, or reuse the run finished there; the run directory's ref."""
    with writing(out, progress=lambda: checkpoint_progress(out)) as slot:
        if (done := slot.reuse(out)) is not None:
            return done
        run_trainer(job, out)
        return publish_trained(slot, out)


def log_training_output(run: RunRef, trained: ArtifactRef, stage: str) -> dict:
    """Per-step curves (``<stage>/...``), result numbers, checkpoints (with their step) and the final adapter."""
    from components.training.report import metric_series
    from components.training.runner import read_metrics
    from tasks import tracking

    out = Path(trained.path)
    records = read_metrics(out / "metrics.jsonl")
    tracking.log_metric_series(run, metric_series(records, stage))
    tracking.log_metrics(run, {f"{stage}/result/{key}": value for key, value in trained.summary.items()
                               if isinstance(value, (int, float)) and not isinstance(value, bool)})
    checkpoints = sorted((out / "trainer").glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[-1]))
    for checkpoint in checkpoints:
        for name in CHECKPOINT_FILES:
            if (checkpoint / name).is_file():
                tracking.log_artifact(run, checkpoint / name, f"{stage}/checkpoints/{checkpoint.name}")
    tracking.set_tags(run, {f"polyreason.checkpoint.{c.name.split('-')[-1]}": f"{stage}/checkpoints/{c.name}"
                            for c in checkpoints})
    tracking.log_artifact(run, out / "adapter", f"{stage}/adapter")
    tracking.log_artifact(run, out / "metrics.jsonl", stage)
    return {"steps_logged": len(records), "adapter": str(out / "adapter"), "records": records,
            "checkpoints": [c.name for c in checkpoints]}
