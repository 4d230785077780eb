"""The recipe: data -> LoRA SFT -> rejection sampling -> curriculum GRPO -> evaluation of every model -> audit ->
registry, as one DAG under one parent MLflow run.

Reads top to bottom like open-r1's ``grpo.py``. Each stage is its own flow with a
child run of the recipe's run (``mlflow.parentRunId``), handed the typed outputs
of the stages before it; a stage whose inputs did not change is a cache hit and
its run says so (``polyreason.cache=hit`` and the run that produced the
artifacts). The base model, the SFT model and the GRPO model are evaluated with
the same prompts and sampling; the parent run holds the profile, its digest, the
git commit, every model's per-language metrics with deltas to the base, the
comparison table and plot, the newest pilot of the profile (``polyreason pilot``)
as tags, the profile's paper table held against the run when it has one
(``profiles/papers/<name>.yaml``), and the registered version of the final model.
A stage placed on a work pool (``placement``) runs there as a deployment and the
recipe waits for it. With ``execution.runner`` other than ``sequential`` the
generations of every evaluated model are first made at once, as tasks on that
task runner (``flows.fanout``); the evaluations then publish, score and log them.
``polyreason recipe PROFILE.yaml [key=value ...]`` runs it; the stage commands
(``polyreason sft`` …) run the recipe up to their stage.
"""

from __future__ import annotations

from prefect import flow
from prefect.runtime import flow_run

from components.settings import Profile
from flows.audit import audit_flow
from flows.data import data_flow
from flows.evaluation import evaluation_flow
from flows.fanout import evaluation_fanout_flow
from flows.grpo import grpo_flow
from flows.recipe_plan import RecipePlan, evaluation_models, register_final, rejection_policy, run_stage
from flows.rejection import rejection_flow
from flows.sft import sft_flow
from runtime.flow_runs.names import stage_run_name, subject
from runtime import tracking
from runtime.flow_runs.prefect_artifacts import publish_recipe_summary, publish_stage_run
from runtime.outputs import RecipeOutputs
from runtime.project import prepared
from tasks.compare import gather_measurements_task, log_comparison_task, log_paper_task, paper_task
from tasks.fanout import log_fanout_task
from tasks.registry import link_models_task
from tasks.recipe import (
    comparison_task, link_pilot_task, log_plan_task, log_profile_task, log_stages_task, paper_table_task,
)  # fmt: skip


@flow(name="polyreason-recipe", flow_run_name=stage_run_name("recipe"))
def recipe_flow(profile: Profile, stages: list[str] | None = None) -> RecipeOutputs:
    """Run the profile's stages in order (``stages``: a subset; all by default) under one parent MLflow run."""
    profile, project = prepared(profile)
    plan = RecipePlan.of(profile, stages, tracking.tracking_uri(profile.tracking, project))
    with tracking.stage_run(profile.tracking, project, subject("recipe", profile.name), stage="recipe",
                            settings_of={"": profile}, tags=plan.tags) as parent:
        log_profile_task(parent, profile)
        log_plan_task(parent, profile, list(plan.stages))
        link_pilot_task(parent, profile.name)  # the newest pilot of this profile, when one ran
        data = run_stage("data", data_flow, profile, parent=parent) if plan.runs("data") else None
        sft = run_stage("sft", sft_flow, profile, data=data, parent=parent) if plan.runs("sft") else None
        rl = run_stage("rejection", rejection_flow, profile, data=data, parent=parent,
                       policy=rejection_policy(plan, sft, project)) if plan.runs("rejection") else None
        grpo = run_stage("grpo", grpo_flow, profile, rl=rl, sft=sft, parent=parent) if plan.runs("grpo") else None
        models = evaluation_models(plan, sft, grpo, project) if plan.runs("evaluation") else []
        fanout = run_stage("evaluation", evaluation_fanout_flow, profile, models=models) \
            if plan.fans_out and models else []
        logged = {"sft": sft.model_id if sft else None, "grpo": grpo.model_id if grpo else None}  # their weights in MLflow
        evaluations = [run_stage("evaluation", evaluation_flow, profile, model=model, parent=parent,
                                 logged_model=logged.get(model.tag)) for model in models]
        in_domain = list(profile.evaluation.scoring.in_domain) if profile.evaluation else None
        comparison = comparison_task(evaluations, plan.baseline, project, in_domain) if evaluations else None
        if comparison is not None:
            log_comparison_task(parent, comparison)
        log_fanout_task(parent, fanout)
        audit = run_stage("audit", audit_flow, profile, evaluation=evaluations[-1] if evaluations else None,
                          parent=parent) if plan.runs("audit") else None
        table = paper_table_task(profile.name, project)
        paper = paper_task(gather_measurements_task(plan.tracking_uri, [parent.run_id]), table,
                           project) if table else None
        if paper is not None:
            log_paper_task(parent, paper)
        registered = register_final(plan, parent, sft, grpo, evaluations, project) if plan.runs("registry") else None
        link_models_task(parent, [logged["sft"], logged["grpo"], registered and registered.model_id])
        log_stages_task(parent, {"data": data and data.run_id, "sft": sft and sft.run_id,
                                 "grpo": grpo and grpo.run_id, "audit": audit and audit.run_id,
                                 **{f"evaluation-{e.model.tag}": e.run_id for e in evaluations}})
    publish_stage_run(parent, project, f"{profile.name}-recipe")
    publish_recipe_summary(parent, project, f"{profile.name}-recipe", comparison, plan.baseline, registered)
    return RecipeOutputs(run_id=parent.run_id, run_url=tracking.run_url(parent), flow_run_id=flow_run.get_id(),
                         evaluations=evaluations,
                         comparison=comparison, audit=audit, registered=registered, data=data, sft=sft, rl=rl,
                         grpo=grpo, paper=paper)
