"""The curriculum GRPO flow: reward audit -> trainer process -> MLflow -> the final weights.

AdaMame §3.3 / PCS as a recipe. The policy is the SFT model (base weights with the
SFT adapter, merged in by the trainer before a fresh adapter is trained) and the
data is the rejection-sampled RL set — both handed in by the recipe — or, run
alone, the section's ``model`` and ``dataset``. Before training, the reward
verifiers are audited on the rejection-sampling rollouts, a given file, or fresh
samples of the policy; then the trainer runs as its own process, resuming from
its last complete checkpoint, and the curves (``grpo/...``), checkpoints,
adapter and curriculum plot go to the run. The final weights are relative to the
original base: the SFT and GRPO adapters concatenated into one, or the merged
model after a reference reset. With ``grpo.lcrl`` (LcRL's search loop) the QA
rows and the retrieval index are built first, by cached tasks; ``grpo.coupling``
only changes how the trainer groups rollouts. ``polyreason grpo PROFILE.yaml`` runs it.
"""

from __future__ import annotations

from prefect import flow

# a placed stage's worker loads this file by its path, not as flows.<name>: importing the package hands the
# settings their registries before Prefect validates the profile parameter (flows/__init__.py)
import flows  # noqa: F401

from components.settings import GRPOStageSettings, Profile
from runtime.flow_runs.names import stage_run_name, subject
from runtime import tracking
from runtime.flow_runs.prefect_artifacts import publish_stage_run
from runtime.cache.report import mark_cache, produced_by
from runtime.outputs import GRPOOutputs, RLOutputs, SFTOutputs
from runtime.project import Project, prepared, require, was_cached
from runtime.tracking import RunRef
from tasks.grpo import (
    audit_rollouts_task, final_weights_task, grpo_inputs_task, grpo_train_task, log_grpo_model_task, log_grpo_task,
    reward_audit_task,
)  # fmt: skip
from tasks.lcrl import corpus_fingerprint, qa_dataset_task, retrieval_index_task
from tasks.models import resolve_model_task


def stage_section(section: GRPOStageSettings, rl: RLOutputs | None, sft: SFTOutputs | None) -> GRPOStageSettings:
    """The section with the model, dataset and audit rollouts of the earlier stages filled in."""
    model = section.model or (sft.base.model if sft else None)
    if sft is not None and sft.trained.full:  # train the SFT model: its full weights (SFT with lora: null)
        model = model.model_copy(update={"model": sft.weights, "adapter": None})
    elif sft is not None:  # train the SFT model: its base weights with its adapter
        model = model.model_copy(update={"model": sft.base.model.model, "adapter": sft.adapter})
    audit = section.audit.model_copy(update={"rollouts": section.audit.rollouts or (rl.rollouts if rl else None)})
    return section.model_copy(update={"model": model, "dataset": rl.rl_set.path if rl else section.dataset,
                                      "audit": audit})


def lcrl_section(section: GRPOStageSettings, project: Project) -> GRPOStageSettings:
    """The GRPO section with LcRL's QA rows and retrieval index filled in (unchanged without ``lcrl``)."""
    lcrl = section.lcrl
    if lcrl is None:
        return section
    dataset, retrieval = section.dataset, lcrl.retrieval
    if dataset is None and lcrl.dataset is not None:
        dataset = qa_dataset_task(lcrl.dataset, project).path
    if retrieval.index is None:
        index = retrieval_index_task(retrieval, corpus_fingerprint(retrieval), project)
        retrieval = retrieval.model_copy(update={"index": index.path})
    return section.model_copy(update={"dataset": dataset, "lcrl": lcrl.model_copy(update={"retrieval": retrieval})})


@flow(name="polyreason-grpo", flow_run_name=stage_run_name("grpo"), persist_result=True)
def grpo_flow(profile: Profile, rl: RLOutputs | None = None, sft: SFTOutputs | None = None,
              parent: RunRef | None = None) -> GRPOOutputs:
    """Audit the reward, train with GRPO, log everything; returns the final weights."""
    profile, project = prepared(profile)
    section = stage_section(require(profile, "grpo"), rl, sft)
    section = lcrl_section(section, project)  # LcRL's QA rows and retrieval index, when grpo.lcrl is set
    policy = resolve_model_task(section.model, project, "policy")
    base = sft.base if sft else resolve_model_task(section.model.model_copy(update={"adapter": None}), project)
    with tracking.stage_run(profile.tracking, project, subject("grpo", profile.name), stage="grpo",
                            settings_of={"grpo.": section}, parent=parent) as run:
        inputs = grpo_inputs_task(section, policy, section.dataset)
        audit = None
        if section.audit.enabled:
            audit = reward_audit_task(run, inputs, audit_rollouts_task(inputs, project))
        state = grpo_train_task(inputs, project, return_state=True)
        trained = state.result()
        source = produced_by(trained.run.path) if was_cached(state) else None  # a hit links the source's models
        adapter_model = log_grpo_task(run, trained, section.dataset, profile.name, section.rollout_table_rows, source)
        final = final_weights_task(trained, policy.model.model, policy.model.adapter, project)
        model_id = log_grpo_model_task(run, final, trained, adapter_model, base.model.model, profile.name, source)
        mark_cache(run, [trained.run.path], was_cached(state), [grpo_train_task, final_weights_task]
                   + ([audit_rollouts_task] if section.audit.enabled else []))
    publish_stage_run(run, project, f"{profile.name}-grpo")
    return GRPOOutputs(trained=trained, base=base, weights=final.weights, kind=final.kind, audit=audit,
                       run_id=run.run_id, model_id=model_id)
