"""``polyreason pilot PROFILE [key=value ...]``: every stage on a small, stated part of its work, before the full run.

It prints its budget first (each stage's share of the full run, and on a GPU profile the
pilot's planned GPU-hours against 2% of the full plan's upper end), runs the recipe's
own flows on the shrunk profile (``flows.pilot``), then reports what it measured against
what the plan assumed: retention and projected set size per language, the reward's slope
per GRPO step with its 95% interval, KL and the clipped ratio, throughput, and the full
run's time recomputed from it. It exits 2, naming the language or the keys to change,
when a language's projected set is below ``data.traces.early_stop.min_share`` of its
target or the reward is flat within its noise below its ceiling; a flat reward at its
ceiling is reported as saturated, not refused. ``--json`` prints the report as JSON.
"""

from __future__ import annotations

import sys
from contextlib import redirect_stdout
from pathlib import Path
from typing import Optional

import typer

from cli.plan import _known_gpu
from cli.preflight import Refused

PROJECT_OPTION = typer.Option(Path("."), "--project-dir", help="Where mlruns/, artifacts/ and .prefect/ live.")


def pilot(
    profile: Path = typer.Argument(..., help="Profile YAML."),
    overrides: Optional[list[str]] = typer.Argument(None, help="Dotted key=value overrides."),
    probe: int = typer.Option(4, min=1, help="Source queries per language the data stage translates and traces "
                                             "(traces read from a file: kept per language)."),
    sft_steps: int = typer.Option(4, min=1, help="SFT optimizer steps."),
    grpo_steps: int = typer.Option(5, min=3, help="GRPO steps the reward's slope is measured over (at most "
                                                  "--grpo-share of the profile's steps, never fewer than 3)."),
    grpo_share: float = typer.Option(0.1, min=0.01, max=1.0, help="The most of the profile's GRPO steps the pilot "
                                                               "runs, where that leaves 3 steps."),
    evaluation_limit: int = typer.Option(2, min=1, help="Problems per language of each evaluation benchmark."),
    gpu: str = typer.Option("H100-80GB", help="The throughput table's GPU for the budget's bound.",
                            callback=_known_gpu),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON and nothing else on stdout."),
    project_dir: Path = PROJECT_OPTION,
    out: Optional[Path] = typer.Option(None, help="Also write the report JSON here."),
) -> None:
    """Every stage on a small part of its work: measured yield, reward slope and throughput against the plan.

    Exits 2, naming the language or the keys, when the projected data set is too small or the reward is flat
    below its ceiling."""
    from cli.environment import configure
    from cli.preflight import check_profile
    from cli.session import run_session
    from cli.terminal import as_json as json_text, close_progress
    from components.config import load_profile
    from flows.commands import sections_for, trained_sections

    paths = configure(project_dir)
    settings = load_profile(profile, overrides or [], trl_checks=trained_sections("recipe"))
    if settings.project_dir is None:
        settings = settings.model_copy(update={"project_dir": str(project_dir.resolve())})
    check_profile(settings, sections_for("recipe", settings), source=str(profile))
    sizes = {"probe": probe, "sft_steps": sft_steps, "grpo_steps": grpo_steps, "evaluation_limit": evaluation_limit,
             "grpo_share": grpo_share}
    _announce(settings, sizes, gpu, str(profile))
    from flows.pilot import pilot_flow

    with run_session(settings, paths["prefect_home"]), redirect_stdout(sys.stderr):  # stdout: the result alone
        report = pilot_flow(settings, sizes, gpu)
    close_progress()
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json_text(report) + "\n", encoding="utf-8")
    typer.echo(json_text(report) if as_json else "\n".join([*report["lines"], f"MLflow run: {report['run_url']}"]))
    if report["problems"]:
        raise Refused(report["problems"], source=str(profile))


def _announce(settings, sizes: dict, gpu: str, source: str) -> None:
    """The budget on stderr before any work; refused when a GPU pilot would spend more than its bound."""
    from components.planning.pilot import MAX_GPU_SHARE
    from runtime.flow_runs.pilots import pilot_profile

    budget = pilot_profile(settings.with_absolute_paths(), sizes, gpu)[1]
    typer.echo("\n".join(budget.lines()), err=True)
    if budget.over_bound:
        raise Refused([f"the pilot plans {budget.pilot_gpu_hours:,.2f} GPU-hours, over {MAX_GPU_SHARE:.0%} of the "
                       f"full run's {budget.full_gpu_hours:,.1f}: lower --probe, --sft-steps, --grpo-steps or "
                       "--evaluation-limit"], source=source)


def register(app: typer.Typer) -> None:
    app.command()(pilot)
