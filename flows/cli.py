"""The ``polyreason`` command line (typer). Flows are imported lazily, after
``flows.runtime.configure`` has pointed Prefect and MLflow at project-local state."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)

PROJECT_OPTION = typer.Option(Path("."), "--project-dir", help="Where mlruns/, artifacts/ and .prefect/ live.")


def _configure(project_dir: Path) -> None:
    from flows.runtime import configure

    configure(project_dir)


def _emit(result: dict, out: Optional[Path]) -> None:
    text = json.dumps(result, ensure_ascii=False, indent=2, default=str)
    if out is None:
        typer.echo(text)
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text + "\n", encoding="utf-8")
    typer.echo(f"wrote {out}")


def _load(profile: Path, overrides: list[str], project_dir: Path):
    from components.config import load_profile
    from components.settings import ProfileError

    try:
        return load_profile(profile, overrides)
    except ProfileError as error:
        typer.echo(str(error), err=True)
        raise typer.Exit(code=2) from None


@app.command()
def score(
    input: Path = typer.Argument(..., help="JSONL rows {id, lang, gold, completion}."),
    verifier: str = typer.Option("trusted", help="Verifier name."),
    lcpr_rule: str = typer.Option("adamame", help="adamame | lcb"),
    words: Optional[Path] = typer.Option(None, help="English word list for --lcpr-rule lcb."),
    max_context: int = typer.Option(8192, help="Context length for TTC."),
    out: Optional[Path] = typer.Option(None, help="Write the JSON here instead of stdout."),
) -> None:
    """Score completions: accuracy, pass@k, LPR/WPR/LCPR, SLC, SLC&Acc, TTC per language."""
    from components.scoring import score_file

    result = score_file(input, verifier=verifier, lcpr_rule=lcpr_rule, words_path=words, max_context=max_context)
    _emit(result, out)
    if result.get("errors"):
        typer.echo(f"{len(result['errors'])} bad row(s) skipped; see 'errors'", err=True)


@app.command()
def verify(
    input: Path = typer.Argument(..., help="JSONL rows {id, lang, gold, answer}."),
    verifier: str = typer.Option("trusted", help="exact | numeric | math_verify | trusted | hybrid"),
    out: Optional[Path] = typer.Option(None, help="Write the JSON here instead of stdout."),
) -> None:
    """Verify final answers against golds with one verifier."""
    from components.scoring import verify_file

    _emit(verify_file(input, verifier=verifier), out)


def _stage_command(runner):
    def command(
        profile: Path = typer.Argument(..., help="Profile YAML."),
        overrides: Optional[list[str]] = typer.Argument(None, help="Dotted key=value overrides."),
        project_dir: Path = PROJECT_OPTION,
        out: Optional[Path] = typer.Option(None, help="Write the summary JSON here."),
    ) -> None:
        _configure(project_dir)
        settings = _load(profile, overrides or [], project_dir)
        if settings.project_dir is None:
            settings = settings.model_copy(update={"project_dir": str(project_dir.resolve())})
        summary = runner(settings)
        _emit(summary, out)
        if summary.get("comparison_table"):
            typer.echo(f"\n{summary['comparison_table']}\n\nparent run: {summary['run_url']}", err=True)

    return command


def _register_stage_commands() -> None:
    from flows.commands import COMMANDS

    for name, (runner, help_text) in COMMANDS.items():
        app.command(name=name, help=help_text)(_stage_command(runner))


_register_stage_commands()


def _register_cockpit_commands() -> None:
    from flows.cli_cockpit import register

    register(app)


_register_cockpit_commands()


def main() -> None:  # pragma: no cover - console entry
    app(prog_name="polyreason")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
