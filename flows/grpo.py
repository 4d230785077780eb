"""The curriculum GRPO flow: inputs -> reward-audit guard -> trainer process -> MLflow.

AdaMame §3.3 / PCS as a recipe. The policy is the base model with the SFT
adapter merged in and the data is the rejection-sampled RL set — both from the
earlier stages (the cached data/SFT flow runs first when the ``grpo`` section
does not name a ``model`` and a ``dataset``), or given directly in the section.
Before training, the reward verifier is audited on a sample of rollouts (the
rejection-sampling rollouts, a given file, or fresh samples from the policy);
then the trainer runs as its own ``accelerate launch`` process, resuming from
its last checkpoint when a previous run was killed, and the curves
(``grpo/...``), the adapters and the curriculum plot go to the flow's run.
``polyreason grpo PROFILE.yaml [key=value ...]`` runs it.
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow

from components.config import flatten
from components.settings import GRPOStageSettings, Profile, ProfileError
from flows.runtime import prepared
from tasks import tracking
from tasks.grpo import audit_rollouts_task, grpo_inputs_task, grpo_train_task, log_grpo_task, reward_audit_task
from tasks.models import resolve_model_task


def _upstream(profile: Profile, project: Path) -> dict:
    """Model (with the SFT adapter), dataset and audit rollouts: from the section, else from the data + SFT flow."""
    section, cache_dir = profile.grpo, str(project / ".cache")
    model = section.model
    found = {"dataset": section.dataset, "rollouts": section.audit.rollouts}
    if model is None or section.dataset is None:
        from flows.sft import run_sft

        earlier = run_sft(profile)
        rl_set = Path(earlier["rejection"]["path"])
        if profile.sft is not None:
            model = (model or profile.sft.model).model_copy(update={"adapter": earlier["sft"]["result"]["adapter_dir"]})
        found["dataset"] = found["dataset"] or rl_set
        found["rollouts"] = found["rollouts"] or rl_set.parent / "rollouts.parquet"
    found["model"] = model
    found["base"] = resolve_model_task(found["model"], cache_dir)
    return found


def _section(profile: Profile, found: dict) -> GRPOStageSettings:
    """The section with the resolved model, dataset and audit rollouts (what the tasks read)."""
    rollouts = str(found["rollouts"]) if found["rollouts"] else None
    audit = profile.grpo.audit.model_copy(update={"rollouts": rollouts})
    return profile.grpo.model_copy(update={"audit": audit, "model": found["model"], "dataset": str(found["dataset"])})


@flow(name="polyreason-grpo")
def grpo_flow(profile: Profile) -> dict:
    """Audit the reward, train with GRPO, log everything; returns the stage summary."""
    if profile.grpo is None:
        raise ProfileError(f"profile {profile.name!r} has no grpo section")
    profile, project = prepared(profile)
    found = _upstream(profile, project)
    section = _section(profile, found)
    run = tracking.open_run(profile.tracking, project, f"{profile.name}-grpo", params=flatten(section, "grpo."),
                            tags={"polyreason.stage": "grpo"})  # fmt: skip
    try:
        inputs = grpo_inputs_task(section, found["base"], section.dataset)
        audit = None
        if section.audit.enabled:
            rollouts = audit_rollouts_task(inputs, str(project))
            audit = reward_audit_task(run, inputs, rollouts)
        trained = grpo_train_task(inputs, str(project))
        logged = log_grpo_task(run, trained)
    except BaseException:
        tracking.finish_run(run, "FAILED")
        raise
    tracking.finish_run(run)
    return {"run_id": run.run_id, "tracking_uri": run.tracking_uri, "audit": audit, "path": trained.path,
            "result": trained.summary, **logged}


def run_grpo(profile: Profile) -> dict:
    """CLI entry (``polyreason grpo PROFILE.yaml``)."""
    return grpo_flow(profile)
