"""The LoRA SFT flow: the SFT set -> trainer process -> MLflow (loss curve; checkpoints and adapter as logged models).

AdaMame §3.2 as a recipe: the trainer runs as its own ``accelerate launch``
process and resumes from its last complete checkpoint when a previous run was
killed; a run whose settings, base model and SFT set did not change is a cache
hit and its MLflow run says so. The SFT model is the base plus the adapter.
"""

from __future__ import annotations

from prefect import flow

# a placed stage's worker loads this file by its path, not as flows.<name>: importing the package hands the
# settings their registries before Prefect validates the profile parameter (flows/__init__.py)
import flows  # noqa: F401

from components.settings import Profile
from runtime.flow_runs.names import stage_run_name, subject
from runtime import tracking
from runtime.flow_runs.prefect_artifacts import publish_stage_run
from runtime.cache.report import mark_cache, produced_by
from runtime.outputs import DataOutputs, SFTOutputs
from runtime.project import prepared, require, was_cached
from runtime.tracking import RunRef
from tasks.models import resolve_model_task
from tasks.sft import log_sft_task, sft_task


@flow(name="polyreason-sft", flow_run_name=stage_run_name("sft"), persist_result=True)
def sft_flow(profile: Profile, data: DataOutputs, parent: RunRef | None = None) -> SFTOutputs:
    """Train a LoRA adapter on the SFT set of ``data``; returns the run directory and the adapter."""
    profile, project = prepared(profile)
    sft = require(profile, "sft")
    base = resolve_model_task(sft.model, project, "base")
    with tracking.stage_run(profile.tracking, project, subject("sft", profile.name), stage="sft",
                            settings_of={"sft.": sft}, parent=parent) as run:
        state = sft_task(sft, base, data.sft_set, project, return_state=True)
        trained = state.result()
        source = produced_by(trained.run.path) if was_cached(state) else None  # a hit links the source's models
        model_id = log_sft_task(run, trained, data.sft_set, profile.name, source)
        mark_cache(run, [trained.run.path], was_cached(state), [sft_task])
    publish_stage_run(run, project, f"{profile.name}-sft")
    return SFTOutputs(trained=trained, base=base, run_id=run.run_id, model_id=model_id)
