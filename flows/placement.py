"""Run a recipe stage here, or as a deployment on the work pool the profile places it on.

``placement: {data: gpu-inference, grpo: gpu-train}`` sends those stages to the
Prefect work pools of those names (``polyreason deploy`` registers the stage
flows there; ``polyreason worker --pool NAME`` serves a pool), so data
generation can run on a vLLM machine and training on a multi-GPU machine while
the recipe's bookkeeping runs anywhere. The stage receives the same typed
inputs as a local call and its typed outputs come back through Prefect's
persisted flow results, which live in the project directory: machines that share
that directory share artifacts, results and caches.
"""

from __future__ import annotations

from typing import Any

from components.settings import Profile


class StageFailed(RuntimeError):
    """A stage that ran on a work pool did not complete."""


def run_stage(stage: str, stage_flow: Any, profile: Profile, **inputs: Any) -> Any:
    """``stage_flow(profile, **inputs)`` in this process, or on ``profile.placement[stage]`` (waiting for it)."""
    pool = profile.placement.get(stage)
    if pool is None:
        return stage_flow(profile, **inputs)
    from prefect.deployments import run_deployment

    flow_run = run_deployment(f"{stage_flow.name}/{pool}", parameters={"profile": profile, **inputs}, timeout=None)
    if not flow_run.state.is_completed():
        raise StageFailed(f"stage {stage} on work pool {pool!r} ended {flow_run.state.name}: {flow_run.state.message}")
    return flow_run.state.result()
