"""``polyreason plan PROFILE [key=value ...]``: what a profile will do, before any work and without a GPU.

Per stage: the rows it reads, the optimizer steps trl will take, completions and
tokens generated, the curricula's schedules, the warm-up the scheduler applies,
the evaluation protocol, GPU memory and a GPU-hours range (an estimate from the
throughput table), and where it runs (``components.planning``). A table for a
person, printed stage by stage as each is planned (a trainer section is checked by
trl when its stage is planned, so the stages before it print before trl, torch and
transformers are imported), ``--json`` for a program. Settings that cannot do what they say are
listed after the plan and the command exits 2, as every stage command refuses
them before it starts (``cli.preflight``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from cli.preflight import Refused

PROJECT_OPTION = typer.Option(Path("."), "--project-dir", help="Where relative paths of the profile are resolved.")


def _known_gpu(value: str) -> str:
    from components.planning.estimate import gpu_names

    if value not in gpu_names():
        raise typer.BadParameter(f"unknown GPU {value!r} (the throughput table has: {', '.join(gpu_names())})")
    return value


def plan(
    profile: Path = typer.Argument(..., help="Profile YAML."),
    overrides: Optional[list[str]] = typer.Argument(None, help="Dotted key=value overrides."),
    as_json: bool = typer.Option(False, "--json", help="Print the plan as JSON instead of a table."),
    gpu: str = typer.Option("H100-80GB", help="The GPU of the throughput table the estimate uses.",
                            callback=_known_gpu),
    project_dir: Path = PROJECT_OPTION,
    out: Optional[Path] = typer.Option(None, help="Write the plan here instead of printing it."),
) -> None:
    """What a profile will do before any work: rows, steps, tokens, curricula, evaluation, GPU estimate, placement.

    Exits 2, naming the keys, when a setting cannot do what it says (a curriculum out of reach, a warm-up as long as
    the run, a length above the model's context ...)."""
    from components.config import load_profile
    from components.planning import plan_profile
    from components.planning.render import footer, header, stage_text, text

    settings = load_profile(profile, overrides or [], trl_checks=())  # trl checks a trainer section as it is planned
    if settings.project_dir is None:
        settings = settings.model_copy(update={"project_dir": str(project_dir.resolve())})
    streamed = out is None and not as_json  # the table is printed stage by stage, as each is planned
    if streamed:
        typer.echo(header(settings.name, gpu, str(profile)))
    result = plan_profile(settings, gpu, on_stage=(lambda stage: typer.echo(stage_text(stage))) if streamed else None,
                          source=str(profile))
    if streamed:
        typer.echo(footer(result))
    else:
        shown = json.dumps(result.as_dict(), ensure_ascii=False, indent=2) if as_json else text(result, str(profile))
        if out is None:
            typer.echo(shown)
        else:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(shown + "\n", encoding="utf-8")
            typer.echo(f"wrote {out}")
    if result.problems:
        raise Refused([str(problem) for problem in result.problems], source=str(profile))


def register(app: typer.Typer) -> None:
    app.command()(plan)
