"""What each ``polyreason`` stage command runs: a stage flow alone, or the recipe up to that stage.

A stage flow runs alone when the profile gives it everything it needs (an
evaluation of its own model, an audit of a generations file, GRPO with its own
model and dataset); otherwise the command runs the recipe restricted to the
stages it needs, so only ``flows/recipe.py`` knows their order. Every command
returns a JSON-ready summary; the recipe's also carries the comparison table.
``sections_for`` names the profile sections a command will run, which
``cli.preflight`` checks before anything starts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from components.settings import Profile, ProfileError


def _dump(outputs: Any) -> dict:
    return outputs.model_dump(mode="json") if hasattr(outputs, "model_dump") else outputs


def run_recipe(profile: Profile, stages: list[str] | None = None) -> dict:
    from flows.recipe import recipe_flow

    outputs = recipe_flow(profile, stages)
    summary = _dump(outputs)
    if outputs.comparison is not None:
        summary["comparison_table"] = (Path(outputs.comparison.path) / "comparison.txt").read_text(encoding="utf-8")
    if outputs.paper is not None:
        summary["comparison_table"] = (summary.get("comparison_table", "") + "\n"
                                       + (Path(outputs.paper.path) / "paper.txt").read_text(encoding="utf-8"))
    return summary


def run_evaluate(profile: Profile) -> dict:
    from flows.evaluation import evaluation_flow

    if profile.execution.fans_out:  # its benchmarks (or their languages) as tasks first
        from flows.fanout import evaluation_fanout_flow

        evaluation_fanout_flow(profile)
    return _dump(evaluation_flow(profile))


def run_audit(profile: Profile) -> dict:
    if profile.audit is not None and profile.audit.generations:
        from flows.audit import audit_flow

        return _dump(audit_flow(profile))
    from flows.recipe import recipe_flow

    return _dump(recipe_flow(profile, ["evaluation", "audit"]).audit)


def run_data(profile: Profile) -> dict:
    from flows.data import data_flow

    return _dump(data_flow(profile))


def run_sft(profile: Profile) -> dict:
    return run_recipe(profile, ["data", "sft", "rejection"])


def run_grpo(profile: Profile) -> dict:
    grpo = profile.grpo
    if grpo is not None and profile.sft is None and grpo.model is not None and grpo.dataset is not None:
        from flows.grpo import grpo_flow

        return _dump(grpo_flow(profile))
    return run_recipe(profile, ["data", "sft", "rejection", "grpo"])


STAGE_SECTIONS = ("data", "sft", "grpo", "evaluation", "audit")
TRAINS = {"recipe": ("sft", "grpo"), "sft": ("sft",), "grpo": ("sft", "grpo")}


def trained_sections(command: str) -> tuple[str, ...]:
    """The trainer sections ``command`` may train: those trl checks when its profile loads (the others are checked
    only by polyreason's own rules, so a command that trains nothing never imports trl)."""
    return TRAINS.get(command, ())


def sections_for(command: str, profile: Profile) -> list[str]:
    """The profile sections ``command`` runs; ``ProfileError`` naming the one it needs when the profile lacks it."""
    from runtime.project import require

    if command == "recipe":
        present = [name for name in STAGE_SECTIONS if getattr(profile, name) is not None]
        if not present:
            raise ProfileError(f"profile {profile.name!r} has no stage section ({', '.join(STAGE_SECTIONS)}): "
                               "nothing to run")
        return present
    if command == "evaluate":
        require(profile, "evaluation")
        return ["evaluation"]
    if command == "audit":
        require(profile, "audit")
        return ["audit"] + (["evaluation"] if not profile.audit.generations else [])
    if command == "data":
        require(profile, "data")
        return ["data"]
    if command == "sft":
        require(profile, "data"), require(profile, "sft")
        return ["data", "sft"]
    require(profile, "grpo")
    alone = profile.sft is None and profile.grpo.model is not None and profile.grpo.dataset is not None
    return ["grpo"] if alone else [name for name in ("data", "sft", "grpo") if getattr(profile, name) is not None]


COMMANDS = {
    "recipe": (run_recipe, "The whole recipe: data, SFT, rejection sampling, GRPO, evaluation of every model, audit, "
                           "registry, under one parent MLflow run."),
    "evaluate": (run_evaluate, "Generate and score benchmarks with the profile's model; metrics per language in MLflow."),
    "audit": (run_audit, "Audit answer verifiers: FNR/FPR/VLB per language, stress suite, selection."),
    "data": (run_data, "Translate queries, generate and filter teacher traces (or read them from a file)."),
    "sft": (run_sft, "The recipe up to LoRA SFT (trl + peft) and rejection sampling of the SFT model."),
    "grpo": (run_grpo, "Curriculum GRPO with language-aware rewards (trl), after data and SFT unless given a model "
                       "and dataset."),
}
