"""The nightly re-evaluation: every registered model the profile names, on the profile's benchmarks.

For each model (``nightly.models``, else the registry section's name, else the
profile's) it evaluates the version its alias points at and its newest
``nightly.latest`` versions, each in its own dated evaluation run named after the
version and the day (``cpu-demo v1 nightly 2026-12-05``; tags ``polyreason.registered``
and ``polyreason.nightly``), whose metrics land on the logged model the version
registered (MLflow's model page lists each nightly's), and tags each model version
with the run (``polyreason.nightly.<date>`` and ``polyreason.nightly.last_run``).
The flow run itself is renamed after the versions and the day once it knows them,
and its page shows, per version, the version, the metrics with their intervals, the
delta to the version's previous evaluation (its last nightly, else its recipe's) with
its paired interval, and the links to the MLflow run and model; the evaluations'
progress lines are on its Logs tab. ``polyreason deploy`` schedules it with
``nightly.cron`` (02:00 UTC by default).
"""

from __future__ import annotations

import datetime

from prefect import flow

from components.settings import NightlySettings, Profile, ProfileError
from flows.entry import DEFAULT_PROFILE, ProfileName, chosen_profile
from flows.evaluation import evaluation_flow
from runtime import tracking
from runtime.flow_runs.prefect_artifacts import publish_nightly_summary, results_on_started_run
from runtime.flow_runs.names import entry_run_name, nightly_title, rename_flow_run
from runtime.flow_runs.plans import refused
from runtime.project import prepared, require
from runtime.tracking.registry import parse_reference
from tasks.compare import previous_comparison_task, previous_evaluation_task
from tasks.models import resolve_model_task
from tasks.registry import link_evaluation_task, nightly_references_task


@flow(name="nightly-evaluation", log_prints=True, flow_run_name=entry_run_name("nightly"))
def nightly_evaluation(profile: ProfileName = DEFAULT_PROFILE, overrides: list[str] = [],  # noqa: B006 - never mutated
                       advanced_profile: Profile | None = None) -> dict:
    """Re-evaluate the registered models of a profile on its benchmarks, one dated run per model version.

    Args:
        profile: A profile of the profiles folder: its evaluation section and its nightly section.
        overrides: Dotted key=value changes to the profile (values are read as YAML).
        advanced_profile: Optional; leave it at None (the form then says 'Property is type "None"') to use the
            profile chosen above, or switch its type to Profile to type a whole profile.
    """
    try:
        chosen = chosen_profile(profile, overrides, advanced_profile, "evaluate")
    except ProfileError as error:  # a mistyped key, a bad value: one line, no traceback
        return refused(str(error))
    chosen, project = prepared(chosen)
    section, nightly = require(chosen, "evaluation"), chosen.nightly or NightlySettings()
    uri = tracking.tracking_uri(chosen.tracking, project)
    names = nightly.models or [(chosen.registry.name if chosen.registry else None) or chosen.name]
    day = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    references = nightly_references_task(uri, names, nightly.alias, nightly.latest)
    rename_flow_run(nightly_title(references, day, chosen.name))
    runs = {}
    with results_on_started_run():  # this flow run's page shows each version's results and progress
        for reference in references:
            name, _, version = parse_reference(reference)
            model = resolve_model_task(section.model.model_copy(update={"model": reference, "adapter": None}),
                                       project, f"{name}-v{version}", uri)
            previous = previous_evaluation_task(uri, reference)
            outputs = evaluation_flow(chosen, model, run_tags={"polyreason.nightly": day},
                                      title=f"{name} v{version} nightly {day}")
            link_evaluation_task(uri, reference, outputs.run_id, day)
            comparison = previous_comparison_task(uri, previous, outputs.run_id, project)
            publish_nightly_summary(uri, outputs.run_id, project, f"{name}-v{version}", reference, day,
                                    outputs.model_id, previous, comparison)
            runs[reference] = outputs.run_id
    return {"date": day, "runs": runs}
