"""A plan as a person reads it (a terminal table, a markdown artifact) and as MLflow params.

The same lines in every form: per stage where it runs, then label/value rows,
its memory figures and its GPU-hours estimate (a range, marked as an estimate);
before them, for a paper's profile, the paper and its table; the problems last, each with the keys that decide it.
"""

from __future__ import annotations

from typing import Any

from components.planning.plan import ESTIMATE_NOTE, Plan, StagePlan
from components.reports.papers import paper_line

WIDTH = 22


def stage_rows(stage: StagePlan) -> list[tuple[str, str]]:
    """Every row of a stage's table, its memory and estimate included."""
    rows = [*stage.lines, *stage.memory]
    if stage.estimate is not None:
        rows.append(("estimate", stage.estimate.text()))
    return rows


def text(plan: Plan, source: str = "") -> str:
    """The terminal table: ``header``, every ``stage_text``, ``footer`` (the command prints them as they come)."""
    return "\n".join([header(plan.profile, plan.gpu, source), *(stage_text(stage) for stage in plan.stages),
                      footer(plan)])


def header(profile: str, gpu: str, source: str = "") -> str:
    """The table's first lines: the profile, the paper it runs an experiment of (``components.reports.papers``),
    and the GPU the estimates are on."""
    paper = paper_line(profile)
    return "\n".join([f"polyreason plan: {profile}{f' ({source})' if source else ''}", *([paper] if paper else []),
                      f"estimates on {gpu}: {ESTIMATE_NOTE}", ""])


def stage_text(stage: StagePlan) -> str:
    """One stage's block: where it runs, then its rows, then a blank line."""
    rows = [f"  {label:<{WIDTH}} {value}" for label, value in stage_rows(stage)]
    return "\n".join([f"{stage.stage} — {stage.where}", *rows, ""])


def footer(plan: Plan) -> str:
    """The total estimate and the problems."""
    total = plan.total
    out = [f"{'total (estimate)':<{WIDTH + 2}} {total.text()}"] if total is not None else []
    return "\n".join([*out, problem_text(plan)])


def problem_text(plan: Plan) -> str:
    if not plan.problems:
        return "plans clean: no setting refused"
    return "\n".join([f"{len(plan.problems)} setting(s) cannot do what they say:",
                      *(f"  - [{p.stage}] {p}" for p in plan.problems)])


def markdown(plan: Plan) -> str:
    """The plan as a markdown document (the Prefect artifact and the MLflow artifact)."""
    estimated = any(stage.estimate is not None for stage in plan.stages)
    note = f"Estimates on {plan.gpu}: {ESTIMATE_NOTE}." if estimated else \
        "No GPU-hours estimate: no stage of this plan runs on a GPU."
    paper = paper_line(plan.profile)
    out = [f"# Plan of `{plan.profile}`", "", *([paper[0].upper() + paper[1:] + ".", ""] if paper else []),
           f"*{note}*", ""]
    for stage in plan.stages:
        out += [f"## {stage.stage}", "", f"Runs in {stage.where}.", "", "| | |", "|---|---|"]
        out += [f"| {label} | {_cell(value)} |" for label, value in stage_rows(stage)]
        out.append("")
    total = plan.total
    if total is not None:
        out += [f"**Total (estimate):** {total.text()}", ""]
    out.append("## Problems" if plan.problems else "Plans clean: no setting refused.")
    out += [f"- **{p.stage}** `{'`, `'.join(p.keys)}`: {p.message}" for p in plan.problems]
    return "\n".join(out) + "\n"


def _cell(value: str) -> str:
    return value.replace("|", "\\|")


def params(plan: Plan) -> dict[str, Any]:
    """Scalar values of every stage as ``plan.<stage>.<name>`` (MLflow params), the total estimate and problems."""
    out: dict[str, Any] = {"plan.gpu": plan.gpu, "plan.problems": len(plan.problems)}
    for stage in plan.stages:
        out[f"plan.{stage.stage}.where"] = stage.where
        for name, value in stage.values.items():
            if isinstance(value, (int, float, str, bool)) and value is not None:
                out[f"plan.{stage.stage}.{name}"] = value
        if stage.estimate is not None:
            low, high = stage.estimate.gpu_hours
            out[f"plan.{stage.stage}.gpu_hours_estimate"] = f"{low:.2f}-{high:.2f}"
    total = plan.total
    if total is not None:
        out["plan.gpu_hours_estimate"] = "{:.2f}-{:.2f}".format(*total.gpu_hours)
    return out
