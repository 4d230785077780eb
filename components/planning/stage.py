"""One stage of a plan (``StagePlan``) and a setting that cannot do what it says (``Problem``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from components.planning.estimate import Hours


@dataclass(frozen=True)
class Problem:
    """A setting that cannot do what it says: the stage, the keys that decide it, why."""

    stage: str
    keys: tuple[str, ...]
    message: str

    def __str__(self) -> str:
        return f"{', '.join(self.keys)}: {self.message}"


@dataclass
class StagePlan:
    """One stage: where it runs, the lines of its table, its values, its estimate (``None``: no GPU work)."""

    stage: str
    where: str
    lines: list[tuple[str, str]] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)
    estimate: Hours | None = None
    memory: list[tuple[str, str]] = field(default_factory=list)

    def add(self, label: str, text: str, **values: Any) -> None:
        self.lines.append((label, text))
        self.values.update(values)


def where(profile: Any, stage: str) -> str:
    """Where a stage runs: its work pool, or the process of the command; an evaluation's generations also say
    how they fan out (``fanout_where``)."""
    pool = profile.placement.get(stage)
    place = f"work pool {pool!r}" if pool else "the command's process (no placement)"
    return f"{place}; {fanout_where(profile.execution)}" if stage == "evaluation" else place


def fanout_where(execution: Any) -> str:
    """Where the evaluations' generations run (``components.settings.execution``), in words.

    >>> from components.settings import ExecutionSettings
    >>> fanout_where(ExecutionSettings(runner="threads", gpus=[0, 1]))
    'generations: one task per model, 2 at once on threads, each in its own process on GPUs 0 | 1'
    """
    if not execution.fans_out:
        return "generations: one model after another in that process"
    cut = {"model": "one task per model", "benchmark": "one task per model x benchmark"}[execution.split]
    if execution.shard_languages:
        cut += f", one per language of {', '.join(execution.shard_languages)}"
    if execution.runner == "threads":
        slots = " | ".join(",".join(str(g) for g in slot) for slot in execution.gpu_slots())
        on = f"{execution.concurrent_tasks()} at once on threads, each in its own process" + (
            f" on GPUs {slots}" if slots else " on the CPU")
    else:
        cluster = execution.address or f"a local {execution.runner} cluster"
        on = f"on {execution.runner} at {cluster}, {execution.gpus_per_task} GPU(s) each"
    return f"generations: {cut}, {on}"
