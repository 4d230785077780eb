"""The recipe: data -> LoRA SFT -> rejection sampling -> curriculum GRPO -> evaluation of every model -> audit ->
registry, as one DAG under one parent MLflow run.

Reads top to bottom like open-r1's ``grpo.py``. Each stage is its own flow with a
child run of the recipe's run (``mlflow.parentRunId``), handed the typed outputs
of the stages before it; a stage whose inputs did not change is a cache hit and
its run says so (``polyreason.cache=hit`` and the run that produced the
artifacts). The base model, the SFT model and the GRPO model are evaluated with
the same prompts and sampling; the parent run holds the profile, its digest, the
git commit, every model's per-language metrics with deltas to the base, the
comparison table and plot, and the registered version of the final model.
A stage placed on a work pool (``placement``) runs there as a deployment and the
recipe waits for it. ``polyreason recipe PROFILE.yaml [key=value ...]`` runs it;
the stage commands (``polyreason sft`` …) run the recipe up to their stage.
"""

from __future__ import annotations

from prefect import flow

from components.config import flatten
from components.settings import Profile
from flows.audit import audit_flow
from flows.data import data_flow
from flows.evaluation import evaluation_flow
from flows.grpo import grpo_flow
from flows.rejection import rejection_flow
from flows.placement import run_stage
from flows.runtime import prepared
from flows.sft import sft_flow
from tasks import tracking
from tasks.compare import log_comparison_task
from tasks.outputs import RecipeOutputs
from tasks.recipe import (
    comparison_task, evaluation_models, log_profile_task, log_stages_task, planned_stages,
    recipe_tags, register_final, rejection_policy,
)  # fmt: skip


@flow(name="polyreason-recipe")
def recipe_flow(profile: Profile, stages: list[str] | None = None) -> RecipeOutputs:
    """Run the profile's stages in order (``stages``: a subset; all by default) under one parent MLflow run."""
    profile, project = prepared(profile)
    wanted, cache_dir = planned_stages(profile, stages), str(project / ".cache")
    with tracking.stage_run(profile.tracking, project, f"{profile.name}-recipe", stage="recipe",
                            params=flatten(profile), tags=recipe_tags(profile)) as parent:
        log_profile_task(parent, profile, str(project))
        data = run_stage("data", data_flow, profile, parent=parent) if "data" in wanted else None
        sft = run_stage("sft", sft_flow, profile, data=data, parent=parent) if "sft" in wanted else None
        rl = run_stage("rejection", rejection_flow, profile, data=data, parent=parent,
                       policy=rejection_policy(profile, sft, cache_dir)) if "rejection" in wanted else None
        grpo = run_stage("grpo", grpo_flow, profile, rl=rl, sft=sft, parent=parent) if "grpo" in wanted else None
        models = evaluation_models(profile, sft, grpo, cache_dir) if "evaluation" in wanted else []
        evaluations = [run_stage("evaluation", evaluation_flow, profile, model=model, parent=parent) for model in models]
        comparison = comparison_task(evaluations, "base", str(project)) if evaluations else None
        if comparison is not None:
            log_comparison_task(parent, comparison)
        audit = run_stage("audit", audit_flow, profile, evaluation=evaluations[-1] if evaluations else None,
                          parent=parent) if "audit" in wanted else None
        registered = register_final(parent, profile, sft, grpo, evaluations, comparison, str(project)) \
            if "registry" in wanted else None
        log_stages_task(parent, {"data": data and data.run_id, "sft": sft and sft.run_id,
                                 "grpo": grpo and grpo.run_id, "audit": audit and audit["run_id"],
                                 **{f"evaluation-{e.model.tag}": e.run_id for e in evaluations}})
    return RecipeOutputs(run_id=parent.run_id, run_url=tracking.run_url(parent), evaluations=evaluations,
                         comparison=comparison, audit=audit, registered=registered, data=data, sft=sft, rl=rl,
                         grpo=grpo)
