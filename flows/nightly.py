"""The nightly re-evaluation: every registered model the profile names, on the profile's benchmarks.

For each model (``nightly.models``, else the registry section's name, else the
profile's) it evaluates the version its alias points at and its newest
``nightly.latest`` versions, each in its own dated evaluation run (tags
``polyreason.registered`` and ``polyreason.nightly``), and tags each model version
with the run (``polyreason.nightly.<date>`` and ``polyreason.nightly.last_run``),
so the registry page leads to the numbers. ``polyreason deploy`` schedules it
with ``nightly.cron`` (02:00 UTC by default).
"""

from __future__ import annotations

import datetime

from prefect import flow

from components.settings import NightlySettings, Profile
from flows.entry import DEFAULT_PROFILE, ProfileName, chosen_profile
from flows.evaluation import evaluation_flow
from runtime import tracking
from runtime.flow_names import entry_run_name
from runtime.project import prepared, require
from tasks.models import resolve_model_task
from tasks.registry import link_evaluation_task, nightly_references_task


@flow(name="nightly-evaluation", log_prints=True, flow_run_name=entry_run_name("nightly-evaluation"))
def nightly_evaluation(profile: ProfileName = DEFAULT_PROFILE, overrides: list[str] = [],  # noqa: B006 - never mutated
                       advanced_profile: Profile | None = None) -> dict:
    """Re-evaluate the registered models of a profile on its benchmarks, one dated run per model version.

    Args:
        profile: A profile of the profiles folder: its evaluation section and its nightly section.
        overrides: Dotted key=value changes to the profile (values are read as YAML).
        advanced_profile: A whole profile instead of a file (then ``profile`` is ignored).
    """
    chosen, project = prepared(chosen_profile(profile, overrides, advanced_profile, "evaluate"))
    section, nightly = require(chosen, "evaluation"), chosen.nightly or NightlySettings()
    uri = tracking.tracking_uri(chosen.tracking, project)
    names = nightly.models or [(chosen.registry.name if chosen.registry else None) or chosen.name]
    day = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    runs = {}
    for reference in nightly_references_task(uri, names, nightly.alias, nightly.latest):
        tag = reference.removeprefix("models:/").replace("/", "-v")
        model = resolve_model_task(section.model.model_copy(update={"model": reference, "adapter": None}), project,
                                   tag, uri)
        outputs = evaluation_flow(chosen, model, run_tags={"polyreason.nightly": day})
        link_evaluation_task(uri, reference, outputs.run_id, day)
        runs[reference] = outputs.run_id
    return {"date": day, "runs": runs}
