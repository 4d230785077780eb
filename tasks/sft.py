"""Prefect tasks of the LoRA SFT stage: train in the trainer process, log what it wrote."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from components.settings import SFTSettings
from components.training.runner import TrainingJob
from tasks.caching import CACHED, ArtifactRef, component_cache_policy
from tasks.outputs import ModelRef
from tasks.tracking import RunRef
from tasks.training import log_training_output, train_once, training_dir

TRAIN_MODULES = ("components.training", "components.settings")


@task(name="sft-train", cache_policy=component_cache_policy(*TRAIN_MODULES), **CACHED)
def sft_task(sft: SFTSettings, base: ModelRef, train: ArtifactRef, project_dir: str) -> ArtifactRef:
    """Launch the trainer process (resuming if checkpoints exist); return the run directory."""
    job = TrainingJob(stage="sft", sft=sft, model=base.model.model, adapter=base.model.adapter, dataset=train.path)
    return train_once(job, training_dir(project_dir, job, base.fingerprint, train.fingerprint))


@task(name="sft-log", cache_policy=NO_CACHE)
def log_sft_task(run: RunRef, trained: ArtifactRef) -> dict:
    """Loss/learning rate per step, the result numbers, checkpoints and the adapter, to the stage's run."""
    logged = log_training_output(run, trained, "sft")
    return {key: value for key, value in logged.items() if key != "records"}


def sft_policy(sft: SFTSettings, base: ModelRef, trained: ArtifactRef):
    """The SFT model as a generator (base weights + the trained adapter), e.g. the rejection-sampling policy."""
    from components.training.sft import policy_model

    return policy_model(sft.model, sft.template, base.model.model, trained.summary["adapter_dir"])
