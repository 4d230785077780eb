"""The LoRA SFT flow: the SFT set (cached data tasks) -> trainer process -> MLflow (-> RL set).

AdaMame §3.2-3.3 as a recipe: the data steps run (or come from cache), the
trainer runs as its own ``accelerate launch`` process and resumes from its last
checkpoint when a previous run was killed, the loss curve and adapter go to the
flow's MLflow run, and with ``data.rejection.policy: null`` the merged SFT model
is sampled to build the RL set (0 < correct < k by default). A data step that
kept nothing stops the flow with its per-language report.
"""

from __future__ import annotations

from prefect import flow

from components.config import flatten
from components.settings import Profile, ProfileError
from flows.data import rl_dataset, sft_dataset
from flows.runtime import prepared
from tasks import tracking
from tasks.models import resolve_model_task
from tasks.sft import log_sft_task, sft_policy, sft_task


@flow(name="polyreason-sft")
def sft_flow(profile: Profile) -> dict:
    """Train a LoRA adapter on the kept traces; returns the data reports, the SFT result and the RL set."""
    if profile.sft is None or profile.data is None:
        raise ProfileError(f"profile {profile.name!r} needs both a data and an sft section")
    profile, project = prepared(profile)
    run = tracking.open_run(profile.tracking, project, f"{profile.name}-sft", params=flatten(profile),
                            tags={"polyreason.stage": "sft"})  # fmt: skip
    try:
        built = sft_dataset(profile, run)
        base = resolve_model_task(profile.sft.model, str(project / ".cache"))
        trained = sft_task(profile.sft, base, built["sft"], str(project))
        logged = log_sft_task(run, trained)
        summary = {"run_id": run.run_id, "tracking_uri": run.tracking_uri, "data": built["report"],
                   "sft": {"path": trained.path, "result": trained.summary, **logged}}  # fmt: skip
        rejection = profile.data.rejection
        if rejection is not None:
            policy = rejection.policy or sft_policy(profile.sft, base, trained)
            summary["rejection"] = rl_dataset(profile, run, built["sft"], policy)
    except BaseException:
        tracking.finish_run(run, "FAILED")
        raise
    tracking.finish_run(run)
    return summary


def run_sft(profile: Profile) -> dict:
    """CLI entry (``polyreason sft PROFILE.yaml``)."""
    return sft_flow(profile)
