"""The data-construction flow: source -> translation -> teacher traces (-> rejection sampling).

Reads like a recipe: one MLflow run, cached stage
tasks, every table logged as a dataset input with its digest, and the step
summaries (counts, chrF, retention per language and per reason) logged from the
task return values, so a fully cached re-run still reports. Low retention is
reported and the flow goes on with what was kept; a step that keeps nothing
stops the flow with a message that gives the per-language report
(``NothingKeptError``). Rejection sampling runs here only when
``data.rejection.policy`` names a model; with ``policy: null`` it samples the
merged SFT model at the end of the SFT flow (AdaMame §3.3).
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow

from components.config import flatten
from components.settings import Profile, ProfileError
from flows.runtime import prepared
from tasks import tracking
from tasks.data import (
    log_step_task, model_identity_task, rl_set_task, source_identity_task, source_task, traces_task, translate_task,
)  # fmt: skip


def sft_dataset(profile: Profile, run) -> dict:
    """Source, translation and trace steps (cached tasks); returns per-step reports and the SFT table ref."""
    data, project = profile.data, Path(profile.project_dir)
    cache_dir = str(project / ".cache")
    source = source_task(data.source, source_identity_task(data.source), str(project))
    report = {"source": log_step_task(run, "source", source)}
    models = [model_identity_task(data.translation.model, cache_dir), model_identity_task(data.translation.judge, cache_dir)]
    translations = translate_task(data.translation, data.source, data.languages, data.source_language, source,
                                  models, str(project), cache_dir)  # fmt: skip
    report["translation"] = log_step_task(run, "translation", translations)
    teacher = model_identity_task(data.traces.model, cache_dir)
    traces = traces_task(data.traces, data.languages, translations, teacher, str(project), cache_dir)
    report["traces"] = log_step_task(run, "traces", traces)
    return {"report": report, "sft": traces}


def rl_dataset(profile: Profile, run, sft_data, policy) -> dict:
    """Rejection sampling over the SFT set with ``policy`` (a ``ModelSettings``)."""
    data, project = profile.data, Path(profile.project_dir)
    cache_dir = str(project / ".cache")
    identity = model_identity_task(policy, cache_dir)
    rl = rl_set_task(data.rejection, data.traces.verifier, data.languages, sft_data, policy, identity,
                     str(project), cache_dir)  # fmt: skip
    return log_step_task(run, "rejection", rl)


@flow(name="polyreason-data")
def data_flow(profile: Profile) -> dict:
    """Build the SFT set (and the RL set when a policy model is given); returns the step reports."""
    if profile.data is None:
        raise ProfileError(f"profile {profile.name!r} has no data section")
    profile, project = prepared(profile)
    run = tracking.open_run(profile.tracking, project, f"{profile.name}-data",
                            params=flatten(profile), tags={"polyreason.stage": "data"})  # fmt: skip
    try:
        built = sft_dataset(profile, run)
        summary = {"run_id": run.run_id, "tracking_uri": run.tracking_uri, **built["report"]}
        rejection = profile.data.rejection
        if rejection is not None and rejection.policy is not None:
            summary["rejection"] = rl_dataset(profile, run, built["sft"], rejection.policy)
    except BaseException:
        tracking.finish_run(run, "FAILED")
        raise
    tracking.finish_run(run)
    return summary


def run_data(profile: Profile) -> dict:
    """CLI entry (``polyreason data PROFILE.yaml``)."""
    return data_flow(profile)
