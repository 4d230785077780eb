"""A profile's plan: per stage what it reads, does and costs, and what cannot do what it says.

``plan_profile(profile)`` reads only settings, local files and the tables of this
package (no model weights, no network, no GPU): each stage of the recipe that
the profile has becomes a ``StagePlan`` (lines a person reads, values a program
reads, an estimate), and every setting that cannot do what it says a
``Problem`` naming its keys. The command line refuses a profile with problems
before any work (exit 2), and so does a flow run started from the Prefect UI.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from components.config import TRAINER_SECTIONS, checked_trainers
from components.planning.estimate import DEFAULT_GPU, Hours
from components.planning.estimate import gpu as gpu_row
from components.planning.generation_plan import audit_stage, data_stage, evaluation_stage, rejection_stage
from components.planning.stage import Problem, StagePlan
from components.planning.training_plan import grpo_stage, sft_stage
from components.reports.papers import paper_of

STAGE_SECTIONS = {"data": "data", "rejection": "data", "sft": "sft", "grpo": "grpo", "evaluation": "evaluation",
                  "audit": "audit"}


@dataclass
class Plan:
    """Every stage's plan and every problem, on ``gpu`` (the throughput table's row the estimate uses)."""

    profile: str
    gpu: str
    stages: list[StagePlan]
    problems: list[Problem]

    def problems_for(self, sections: list[str]) -> list[Problem]:
        """The problems of the stages a command runs (by their profile sections)."""
        return [p for p in self.problems if STAGE_SECTIONS[p.stage] in sections]

    @property
    def total(self) -> Hours | None:
        estimates = [s.estimate for s in self.stages if s.estimate is not None]
        return sum(estimates[1:], estimates[0]) if estimates else None

    def as_dict(self) -> dict[str, Any]:
        total = self.total
        paper = paper_of(self.profile)
        return {"profile": self.profile, "gpu": self.gpu, "estimate_note": ESTIMATE_NOTE,
                "paper": paper.citation if paper else None,
                "gpu_hours_estimate": list(total.gpu_hours) if total else None,
                "gpu_hours_uncapped": list(total.uncapped_hours) if total else None,
                "stages": {s.stage: {"where": s.where, **s.values, "lines": [list(line) for line in s.lines],
                                     "memory": [list(line) for line in s.memory],
                                     "gpu_hours_estimate": list(s.estimate.gpu_hours) if s.estimate else None,
                                     "gpu_hours_uncapped": list(s.estimate.uncapped_hours) if s.estimate else None,
                                     "gpus": s.estimate.gpus if s.estimate else None}
                           for s in self.stages},
                "problems": [{"stage": p.stage, "keys": list(p.keys), "message": p.message} for p in self.problems]}


ESTIMATE_NOTE = ("GPU-hours are an estimate: every completion at its max_new_tokens, published vLLM batch "
                 "throughput capped by the decode rate the KV cache's concurrency allows, and an MFU range "
                 "(components/planning/throughput.yaml)")


def plan_profile(profile: Any, gpu: str = DEFAULT_GPU, sections: list[str] | None = None,
                 on_stage: Callable[[StagePlan], None] | None = None, source: str = "<profile>") -> Plan:
    """The plan of every stage ``profile`` has (``sections``: only the stages of those profile sections), its paths
    made absolute against its project directory.

    A trainer section loaded without trl's checks is checked when its stage is planned
    (``components.config.checked_trainers``, its ``ProfileError`` naming ``source``): the
    stages before it are planned without importing trl, torch or transformers, and
    ``on_stage`` receives each stage as soon as it is planned (the command prints it).
    """
    gpu_row(gpu)  # an unknown GPU is refused before anything is planned
    if profile.project_dir is None:
        profile = profile.model_copy(update={"project_dir": str(Path.cwd())})
    profile = profile.with_absolute_paths()
    builders = [("data", data_stage, profile.data), ("sft", sft_stage, profile.sft),
                ("rejection", rejection_stage, profile.data and profile.data.rejection),
                ("grpo", grpo_stage, profile.grpo), ("evaluation", evaluation_stage, profile.evaluation),
                ("audit", audit_stage, profile.audit)]
    stages, problems = [], []
    for name, build, section in builders:
        if section is None or (sections is not None and STAGE_SECTIONS[name] not in sections):
            continue
        if name in TRAINER_SECTIONS:
            profile = checked_trainers(profile, [name], source)
        stage, found = build(profile, gpu)
        if on_stage is not None:
            on_stage(stage)
        stages.append(stage)
        problems += found
    return Plan(profile=profile.name, gpu=gpu, stages=stages, problems=problems)
