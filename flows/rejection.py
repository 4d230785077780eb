"""The rejection-sampling flow: sample the policy on the SFT queries and keep the RL set (AdaMame §3.3).

The policy is the SFT model (base + adapter) unless ``data.rejection.policy``
names another; the strategy (``zero_one_filter``: 0 < correct < n …) selects
the queries, a per-language cap samples the training set and a disjoint
validation split is held out. The rollouts are kept: the GRPO stage audits its
reward verifier on them.
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow

# a placed stage's worker loads this file by its path, not as flows.<name>: importing the package hands the
# settings their registries before Prefect validates the profile parameter (flows/__init__.py)
import flows  # noqa: F401

from components.settings import Profile
from runtime.flow_runs.names import stage_run_name, subject
from runtime import tracking
from runtime.flow_runs.prefect_artifacts import publish_stage_run
from runtime.cache.report import mark_cache
from runtime.outputs import DataOutputs, ModelRef, RLOutputs
from runtime.project import prepared, require, was_cached
from runtime.tracking import RunRef
from tasks.data import log_step_task, rl_set_task


@flow(name="polyreason-rejection", flow_run_name=stage_run_name("rejection"), persist_result=True)
def rejection_flow(profile: Profile, data: DataOutputs, policy: ModelRef, parent: RunRef | None = None) -> RLOutputs:
    """Select the RL set from the SFT set of ``data`` by sampling ``policy``."""
    profile, project = prepared(profile)
    section, rejection = require(profile, "data"), require(profile, "data.rejection")
    with tracking.stage_run(profile.tracking, project, subject("rejection", profile.name), stage="rejection",
                            settings_of={"data.rejection.": rejection}, parent=parent,
                            tags={"polyreason.policy": policy.tag}) as run:
        state = rl_set_task(rejection, section.traces.verifier, section.languages, data.sft_set, policy, project,
                            return_state=True)
        rl_set = state.result()
        log_step_task(run, "rejection", rl_set)
        mark_cache(run, [Path(rl_set.path).parent], was_cached(state), [rl_set_task])
    publish_stage_run(run, project, f"{profile.name}-rejection")
    folder = Path(rl_set.path).parent
    return RLOutputs(rl_set=rl_set, validation=str(folder / "rl_validation.parquet"),
                     rollouts=str(folder / "rollouts.parquet"), run_id=run.run_id)
