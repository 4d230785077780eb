"""Deployments for the Prefect UI: trigger recipe stages by hand, re-evaluate nightly.

``polyreason serve PROFILE.yaml ... [--cron "0 2 * * *"]`` builds one deployment
per profile and stage present in it (``Flow.to_deployment``) with the validated
profile as its default parameter, and serves them (``prefect.serve``): each
appears in the Prefect UI under its flow, where "Run" starts it (parameters
editable there) and the cron schedule re-runs the evaluation nightly. Serving
needs a Prefect server (``prefect server start``; ``PREFECT_API_URL`` set).
"""

from __future__ import annotations

import importlib
from pathlib import Path

from components.config import load_profile
from components.settings import Profile

STAGE_FLOWS = {
    "recipe": ("flows.recipe", "recipe_flow"),
    "evaluation": ("flows.evaluation", "evaluation_flow"),
}


def stage_flow(stage: str):
    module, name = STAGE_FLOWS[stage]
    return getattr(importlib.import_module(module), name)


def stages_of(profile: Profile) -> list[str]:
    """The recipe when the profile trains something, and its evaluation (the nightly re-evaluation)."""
    trains = any(getattr(profile, stage) is not None for stage in ("data", "sft", "grpo"))
    return (["recipe"] if trains else []) + (["evaluation"] if profile.evaluation is not None else [])


def build_deployments(profile_paths: list[Path], cron: str | None, project_dir: Path) -> list:
    """One ``RunnerDeployment`` per (profile, stage); the nightly cron goes on evaluations only."""
    deployments = []
    for path in profile_paths:
        profile = load_profile(path)
        if profile.project_dir is None:
            profile = profile.model_copy(update={"project_dir": str(project_dir.resolve())})
        for stage in stages_of(profile):
            schedule = {"cron": cron} if cron and stage == "evaluation" else {}
            deployments.append(stage_flow(stage).to_deployment(
                name=f"{profile.name}-{stage}",
                parameters={"profile": profile.model_dump(mode="json")},
                description=f"{stage} stage of profile {path}",
                tags=["polyreason", stage],
                **schedule,
            ))
    return deployments


def serve_profiles(profile_paths: list[Path], cron: str | None, project_dir: Path) -> None:
    """Serve the deployments until interrupted."""
    from prefect import serve

    serve(*build_deployments(profile_paths, cron, project_dir))
