"""Prefect tasks of the LoRA SFT stage: train in the trainer process, log what it wrote."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from components.settings import SFTSettings
from components.training.runner import TrainingJob
from runtime.artifacts import ArtifactRef
from runtime.cache.policy import CACHED
from runtime.outputs import ModelRef, TrainedRun
from runtime.project import Project
from runtime.tracking import RunRef
from runtime.processes.trainer import log_checkpoints, log_training_output, train_once, training_policy, training_run


@task(name="sft-train", cache_policy=training_policy("training"), **CACHED)
def sft_task(sft: SFTSettings, base: ModelRef, train: ArtifactRef, project: Project) -> TrainedRun:
    """Launch the trainer process in the directory of this run's key (resuming only an interrupted run of the same
    key); the finished run and its adapter."""
    job = TrainingJob(stage="sft", sft=sft, model=base.model.model, adapter=base.model.adapter, dataset=train.path)
    return train_once(*training_run(project, job, sft_task, base.fingerprint, train.fingerprint))


@task(name="sft-log", cache_policy=NO_CACHE)
def log_sft_task(run: RunRef, trained: TrainedRun, train: ArtifactRef, name: str, source: str | None = None) -> str:
    """Loss/learning rate per step and the result numbers to the stage's run, the SFT set as its training input,
    its checkpoints and adapter as logged models (named after ``name``, the profile; on a cache hit those of
    ``source``, the run that trained them, linked); the adapter's logged model id."""
    log_training_output(run, trained, "sft", train.path)
    return log_checkpoints(run, trained, "sft", name, source)
