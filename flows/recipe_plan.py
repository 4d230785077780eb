"""The recipe's plan: what a profile decides about a recipe run, read once, and the decisions made from it.

``RecipePlan.of(profile, stages)`` takes from the profile only what the recipe
itself decides (which stages run, how the trained models are run for rejection
sampling and evaluation, what is registered, the parent run's tags); the
decisions below take the plan and the typed outputs of earlier stages, never
the whole profile. ``run_stage`` runs a stage here, or as a deployment on the
work pool the profile places it on (``placement``), waiting for it: the stage
gets the same typed inputs and its typed outputs come back through Prefect's
persisted flow results, which live in the shared project directory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from components.config import fingerprint
from components.settings import ModelSettings, Profile, RegistrySettings
from runtime.outputs import EvaluationOutputs, GRPOOutputs, ModelRef, RegisteredModel, SFTOutputs
from runtime.project import Project
from runtime.tracking.provenance import git_commit
from runtime.tracking import RunRef
from tasks.models import resolve_model_task
from tasks.registry import link_registered_evaluation_task, merged_model_task, register_task

STAGES = ("data", "sft", "rejection", "grpo", "evaluation", "audit", "registry")


class StageFailed(RuntimeError):
    """A stage that ran on a work pool did not complete."""


@dataclass(frozen=True)
class RecipePlan:
    """The recipe's decisions: the stages to run and how each trained model is run, evaluated and registered.

    ``rejection_policy``: the model rejection sampling samples when the profile names one (else the SFT
    model, run as ``sft_model`` says); ``evaluation_model``: how every evaluated model runs (backend,
    sampling of the evaluation); ``registry``: what the final model is registered as, under ``name``;
    ``fans_out``: the models' generations are made at once, as tasks on the profile's task runner;
    ``baseline``: what the comparison's deltas are minus (``evaluation.baseline``).
    """

    name: str
    stages: tuple[str, ...]
    tags: dict[str, str]
    tracking_uri: str
    sft_model: ModelSettings | None = None
    rejection_policy: ModelSettings | None = None
    evaluation_model: ModelSettings | None = None
    registry: RegistrySettings | None = None
    fans_out: bool = False
    baseline: str = "base"
    evaluate_base: bool = True

    @classmethod
    def of(cls, profile: Profile, stages: list[str] | None, tracking_uri: str) -> RecipePlan:
        rejection = profile.data.rejection if profile.data else None
        plan = cls(name=profile.name, stages=tuple(planned_stages(profile, stages)), tags=recipe_tags(profile),
                   tracking_uri=tracking_uri, sft_model=profile.sft.model if profile.sft else None,
                   rejection_policy=rejection.policy if rejection else None,
                   evaluation_model=profile.evaluation.model if profile.evaluation else None, registry=profile.registry,
                   fans_out=profile.execution.fans_out,
                   baseline=profile.evaluation.baseline if profile.evaluation else "base",
                   evaluate_base=profile.evaluation.evaluate_base if profile.evaluation else True)
        plan.check_baseline()
        return plan

    def runs(self, stage: str) -> bool:
        return stage in self.stages

    def evaluated(self) -> list[str]:
        """The labels of the models this run evaluates, in order (``evaluation_models``)."""
        if not self.runs("evaluation"):
            return []
        return [*(["base"] if self.evaluate_base else []), *(tag for tag in ("sft", "grpo") if self.runs(tag))]

    def check_baseline(self) -> None:
        """Refuse, before any stage runs, a comparison baseline this run does not evaluate."""
        evaluated = self.evaluated()
        if evaluated and self.baseline != "previous" and self.baseline not in evaluated:
            raise ValueError(f"evaluation.baseline {self.baseline!r} is not evaluated by this run (it evaluates "
                             f"{', '.join(evaluated)}: the stages {', '.join(self.stages)}); choose one of them or "
                             "'previous'")


def planned_stages(profile: Profile, stages: list[str] | None) -> list[str]:
    """The stages a recipe run executes: those asked for (all by default) whose section the profile has."""
    unknown = sorted(set(stages or ()) - set(STAGES))
    if unknown:
        raise ValueError(f"unknown recipe stages {unknown} (known: {', '.join(STAGES)})")
    present = {"data": profile.data, "sft": profile.sft, "rejection": profile.data and profile.data.rejection,
               "grpo": profile.grpo, "evaluation": profile.evaluation, "audit": profile.audit,
               "registry": profile.registry}
    return [stage for stage in STAGES if (stages is None or stage in stages) and present[stage] is not None]


def recipe_tags(profile: Profile) -> dict[str, str]:
    """Tags of a recipe's parent run and its registered model: profile digest, git commit, languages, name (the
    parent run also carries the code's provenance, ``runtime.tracking.provenance``)."""
    languages = sorted({lang for bench in (profile.evaluation.benchmarks if profile.evaluation else [])
                        for lang in bench.languages} | set(profile.data.languages if profile.data else []))
    return {"polyreason.profile_digest": fingerprint(profile)[:16], "mlflow.source.git.commit": git_commit(),
            "polyreason.languages": ",".join(languages), "polyreason.profile": profile.name}


def trained_model(settings: ModelSettings, base: ModelRef, weights: str, kind: str) -> ModelSettings:
    """``settings`` (how to run a model) pointed at trained weights: the base plus an adapter, or a full model."""
    if kind == "adapter":
        return settings.model_copy(update={"model": base.model.model, "adapter": weights, "gguf_file": None})
    return settings.model_copy(update={"model": weights, "adapter": None, "gguf_file": None})


def rejection_policy(plan: RecipePlan, sft: SFTOutputs | None, project: Project) -> ModelRef:
    """The model rejection sampling samples: the profile's ``data.rejection.policy``, else the SFT model."""
    if plan.rejection_policy is not None:
        return resolve_model_task(plan.rejection_policy, project, "policy")
    return resolve_model_task(trained_model(plan.sft_model, sft.base, sft.weights, sft.kind), project, "sft")


def evaluation_models(plan: RecipePlan, sft: SFTOutputs | None, grpo: GRPOOutputs | None,
                      project: Project) -> list[ModelRef]:
    """The models a recipe evaluates, run as ``evaluation.model`` says: the base (unless ``evaluate_base`` is
    false), then each trained model."""
    run_as = plan.evaluation_model
    models = [resolve_model_task(run_as, project, "base", plan.tracking_uri)] if plan.evaluate_base else []
    if sft is not None:
        models.append(resolve_model_task(trained_model(run_as, sft.base, sft.weights, sft.kind), project, "sft"))
    if grpo is not None:
        models.append(resolve_model_task(trained_model(run_as, grpo.base, grpo.weights, grpo.kind), project, "grpo"))
    return models


def register_final(plan: RecipePlan, parent: RunRef, sft: SFTOutputs | None, grpo: GRPOOutputs | None,
                   evaluations: list[EvaluationOutputs], project: Project) -> RegisteredModel:
    """Register the recipe's final model (GRPO's, else SFT's), and its merged copy when the profile asks."""
    registry, base_name = plan.registry, plan.sft_model.model
    kind = grpo.kind if grpo is not None else sft.kind
    final = evaluations[-1].model if evaluations else resolve_model_task(
        trained_model(plan.sft_model, sft.base, grpo.weights if grpo else sft.weights, kind), project,
        "grpo" if grpo else "sft")
    name = registry.name or plan.name
    tags = dict(plan.tags)  # the metrics are on the registered logged model, each with its interval and n
    trained = evaluations[-1].model_id if evaluations else (grpo.model_id if grpo else sft.model_id)
    registered = register_task(parent, registry, name, base_name, final, kind, tags, project, trained)
    if evaluations:  # the final model's evaluation is its registered version's first evaluation
        link_registered_evaluation_task(parent, evaluations[-1].run_id, registered.uri)
    if registry.merged and kind == "adapter":
        merged = merged_model_task(final, project)
        merged_version = register_task(parent, registry, f"{name}-merged", base_name, merged, "full", tags, project)
        registered = registered.model_copy(update={"merged": merged_version})
    return registered


def run_stage(stage: str, stage_flow: Any, profile: Profile, **inputs: Any) -> Any:
    """``stage_flow(profile, **inputs)`` in this process, or on ``profile.placement[stage]`` (waiting for it)."""
    pool = profile.placement.get(stage)
    if pool is None:
        return stage_flow(profile, **inputs)
    from prefect.deployments import run_deployment

    from runtime.flow_runs.progress import announce, progress_tags

    announce(f"{stage}: started on work pool {pool!r} (its progress follows here, and on its own flow run there)")
    # polled every second: Prefect's default (5 s) would leave each placed stage's end unseen for 2.5 s on average
    flow_run = run_deployment(f"{stage_flow.name}/{pool}", parameters={"profile": profile, **inputs}, timeout=None,
                              poll_interval=1, tags=progress_tags())
    if not flow_run.state.is_completed():
        raise StageFailed(f"stage {stage} on work pool {pool!r} ended {flow_run.state.name}: {flow_run.state.message}")
    return flow_run.state.result()
