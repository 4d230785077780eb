"""The pilot: every stage of a profile on a small, stated part of its work, and what it measured against the plan.

``pilot_flow`` shrinks the profile with overrides (``runtime.flow_runs.pilots.pilot_profile``:
fewer source queries, SFT and GRPO steps, evaluation problems; no audit, no registry),
runs the same recipe on it (``flows.recipe.recipe_flow``: the same tasks, whose cache
keys differ from the full run's only where the shrunk work does), then reads what the
stages measured (``tasks.pilot.measure_task``) and reports it: each language's
retention and projected set, the reward's slope per step with its noise and its level
against its range (saturated at its ceiling, or flat below it), KL and the
clipped ratio, the throughput here and the full run's time recomputed from it. The
report is a MLflow run tagged as the profile's pilot (a later full run of the profile
links to the newest one) and the Prefect artifact ``pilot-<profile>``. A data stage
that refuses to go on (nothing kept, or its own probe's shortfall) ends the pilot
with that refusal in the report. ``polyreason pilot PROFILE.yaml`` runs it.
"""

from __future__ import annotations

from prefect import flow

from components.settings import Profile
from flows.recipe import recipe_flow
from runtime import tracking
from runtime.flow_runs.prefect_artifacts import publish_markdown
from runtime.flow_runs.names import stage_run_name, subject
from runtime.flow_runs.pilots import PILOT_TAG, data_facts, markdown, pilot_profile, reward_ranges, stopped_by_data
from runtime.project import prepared
from tasks.pilot import log_pilot_task, measure_task

PILOT_STAGES = ["data", "sft", "rejection", "grpo", "evaluation"]


@flow(name="polyreason-pilot", flow_run_name=stage_run_name("pilot"))
def pilot_flow(profile: Profile, sizes: dict[str, int | float] | None = None, gpu: str | None = None) -> dict:
    """Run the shrunk recipe and report what it measured; returns the report as a dict (``problems``: refusals)."""
    profile, project = prepared(profile)
    small, budget, full_plan, pilot_plan = pilot_profile(profile, sizes or {}, gpu)
    outputs, refused = None, []
    try:
        outputs = recipe_flow(small, PILOT_STAGES)
    except Exception as error:  # only the data stage's refusals: anything else fails the pilot
        if not stopped_by_data(error):
            raise
        refused = [f"data: the stage stopped: {error}"]
    min_share = profile.data.traces.early_stop.min_share if profile.data else 0.5
    report = measure_task(outputs, tracking.tracking_uri(profile.tracking, project), budget, full_plan, pilot_plan,
                          data_facts(profile, full_plan), min_share, refused, reward_ranges(profile))
    params = {"pilot.overrides": " ".join(budget.overrides)}
    with tracking.stage_run(profile.tracking, project, subject("pilot", profile.name), stage="pilot", params=params,
                            settings_of={"": profile},
                            tags={PILOT_TAG: profile.name}) as run:
        log_pilot_task(run, report, outputs.run_id if outputs else None)
    publish_markdown(f"pilot-{profile.name}", markdown(report),
                     f"polyreason pilot {profile.name}: measured against the plan")
    return {**report.as_dict(), "run_id": run.run_id, "run_url": tracking.run_url(run),
            "recipe_run_id": outputs.run_id if outputs else None}
