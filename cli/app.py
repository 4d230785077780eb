"""The ``polyreason`` command line (typer). Flows are imported lazily, after
``cli.environment.configure`` has pointed Prefect and MLflow at project-local state.

Every command, including those other modules register on ``app`` (one line
each), runs through ``cli.base.PolyreasonGroup``: one-line errors with exit
code 2 for ordinary mistakes (``--debug`` shows the traceback), interrupts that
end a run within seconds, and a Prefect server for the commands that need one.
A stage command checks its profile (``cli.preflight``) before any Prefect
work, then runs its flows in a ``cli.session.run_session``.
"""

from __future__ import annotations

import sys
from contextlib import redirect_stdout
from pathlib import Path
from typing import Optional

import typer

from cli.base import PolyreasonApp, PolyreasonGroup

HELP = """polyreason: post-train reasoning models to think in the language of the question, and measure it.

Stage commands take a profile YAML and dotted key=value overrides. Mistakes are reported in one line (exit 2);
add --debug to any command to see the traceback, --verbose to see every library's warnings and log lines.
Progress goes to stderr; the result to stdout (--json: the machine-readable result alone).
Ctrl-C ends a run within seconds and keeps what it finished."""

app = PolyreasonApp(cls=PolyreasonGroup, add_completion=False, no_args_is_help=True, help=HELP,
                    pretty_exceptions_enable=False)

PROJECT_OPTION = typer.Option(Path("."), "--project-dir", help="Where mlruns/, artifacts/ and .prefect/ live.")


def _configure(project_dir: Path) -> dict[str, Path]:
    from cli.environment import configure

    return configure(project_dir)


JSON_OPTION = typer.Option(False, "--json", help="Print the machine-readable result (JSON) and nothing else on stdout.")


def _emit(result: dict, out: Optional[Path], text: Optional[str] = None) -> None:
    """The result on stdout: ``text`` for a person, or the JSON when there is no text (``--json``); ``out`` also
    gets the JSON."""
    from cli.terminal import as_json, close_progress

    close_progress()
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(as_json(result) + "\n", encoding="utf-8")
    typer.echo(as_json(result) if text is None else text)


def _load(profile: Path, overrides: list[str], command: str):
    """The command's profile, its trainer sections checked by trl only when the command trains them."""
    from components.config import load_profile
    from flows.commands import trained_sections

    return load_profile(profile, overrides, trl_checks=trained_sections(command))


def _registered(kind: str):
    """An option callback refusing names the ``kind`` registry does not know (the error names the option)."""

    def check(value: str) -> str:
        from components.settings import check_registered

        try:
            return check_registered(kind, value)
        except ValueError as error:
            raise typer.BadParameter(str(error)) from None

    return check


def _input_file(path: Path) -> Path:
    from cli.preflight import Refused

    if not path.exists():
        raise Refused([f"{path}: no such file"])
    if not path.is_file():
        raise Refused([f"{path}: is a directory, expected a JSONL file"])
    return path


def _report_rows(result: dict, path: Path, named: bool = False, scored: int | None = None) -> None:
    """Exit 2 when no row was valid (``scored``: the rows scored, when the result does not hold them); otherwise say
    how many rows were skipped (``named``: and which, on stderr, when stdout holds the JSON alone)."""
    from components.scoring import bad_rows
    from cli.preflight import Refused
    from cli.terminal import error_lines

    bad, problems = bad_rows(result), len(result.get("errors", []))
    if not (scored if scored is not None else len(result.get("rows") or [])):
        first = result["errors"][0]["message"] if problems else "the file holds no row"
        raise Refused([f"{path}: no valid row ({bad} bad row(s)); first: {first}"])
    if bad:
        typer.echo(f"{bad} bad row(s) skipped ({problems} problem(s)); see 'errors'", err=True)
        if named:
            typer.echo("\n".join(error_lines(result["errors"])[1:]), err=True)


@app.command()
def score(
    input: Path = typer.Argument(..., help="JSONL rows {id, lang, gold, completion}."),
    verifier: str = typer.Option("trusted", help="Verifier name.", callback=_registered("verifier")),
    lcpr_rule: str = typer.Option("adamame", help="LCPR rule (adamame | lcb | ...).", callback=_registered("LCPR rule")),
    words: Optional[Path] = typer.Option(None, help="English word list for --lcpr-rule lcb."),
    max_context: int = typer.Option(8192, min=1, help="Context length for TTC."),
    explain: Optional[str] = typer.Option(None, "--explain", metavar="ID",
                                          help="Print the LCPR verdict of the rows with this id, line by line."),
    out: Optional[Path] = typer.Option(None, help="Also write the JSON result here."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Score completions: accuracy, pass@k, LPR/WPR/LCPR, SLC, SLC&Acc, TTC per language, with 95% intervals."""
    from components.metrics.aggregate import with_intervals
    from components.scoring import score_file
    from components.settings import ScoringSettings
    from cli.score_output import RowSpool, emit_streamed
    from cli.terminal import score_text

    if lcpr_rule.startswith("lcb") and words is None:
        raise typer.BadParameter(f"--lcpr-rule {lcpr_rule} needs --words (the LCB English word list)",
                                 param_hint="'--words'")
    settings = ScoringSettings(verifier=verifier, lcpr_rule=lcpr_rule, max_context=max_context,
                               words_path=None if words is None else str(words))
    if explain is not None:
        return _explain(_input_file(input), explain, settings, out, as_json)
    spool = RowSpool()  # the scored rows wait on disk, not in memory, for the JSON (cli.score_output)
    try:
        result = with_intervals(score_file(_input_file(input), settings, rows_to=spool.write))
        _report_rows(result, input, named=as_json, scored=spool.count)  # the table lists skipped rows itself
        emit_streamed(result, spool, out, None if as_json else score_text(result))
    finally:
        spool.close()


def _explain(path: Path, row_id: str, settings, out: Optional[Path], as_json: bool) -> None:
    """``score --explain ID``: the rows with that id, line by line (exit 2 when the file has none)."""
    from components.scoring_explain import explain_file
    from cli.preflight import Refused
    from cli.terminal import explain_text

    explained = explain_file(path, row_id, settings)
    if not explained["rows"]:
        raise Refused([f"{path}: no valid row with id {row_id!r}"])
    _emit(explained, out, None if as_json else explain_text(explained))


@app.command()
def verify(
    input: Path = typer.Argument(..., help="JSONL rows {id, lang, gold, answer[, expected]}."),
    verifier: str = typer.Option("trusted", help="exact | numeric | math_verify | trusted | hybrid",
                                 callback=_registered("verifier")),
    out: Optional[Path] = typer.Option(None, help="Also write the JSON result here."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Verify final answers against golds with one verifier: accuracy, FNR and FPR per language."""
    from components.scoring import verify_file
    from cli.terminal import verify_text

    result = verify_file(_input_file(input), verifier=verifier)
    _report_rows(result, input)
    _emit(result, out, None if as_json else verify_text(result, verifier))


def _stage_command(name: str, runner):
    def command(
        profile: Path = typer.Argument(..., help="Profile YAML."),
        overrides: Optional[list[str]] = typer.Argument(None, help="Dotted key=value overrides."),
        project_dir: Path = PROJECT_OPTION,
        out: Optional[Path] = typer.Option(None, help="Also write the summary JSON here."),
        as_json: bool = JSON_OPTION,
    ) -> None:
        from components.settings import ProfileError
        from flows.commands import sections_for
        from cli.session import run_session
        from cli.preflight import Refused, check_profile
        from cli.prefect_server import configured_api_url

        paths = _configure(project_dir)
        settings = _load(profile, overrides or [], name)
        if settings.project_dir is None:
            settings = settings.model_copy(update={"project_dir": str(project_dir.resolve())})
        try:
            sections = sections_for(name, settings)
        except ProfileError as error:
            raise Refused([str(error)], source=str(profile)) from None
        check_profile(settings, sections, source=str(profile))
        lasting = configured_api_url() is not None  # a temporary server's pages are gone when the command ends
        with run_session(settings, paths["prefect_home"]), redirect_stdout(sys.stderr):  # stdout: the result alone
            summary = runner(settings)
        if not as_json and summary.get("run_id") and not summary.get("run_url"):
            summary = {**summary, "run_url": _run_url(settings, summary["run_id"])}
        _emit(summary, out, None if as_json else _result_text(summary, lasting, settings, name))

    return command


def _result_text(summary: dict, lasting_server: bool, settings=None, command: str = "recipe") -> str:
    """The recipe's headline and where its runs are; an evaluation's table; another command's summary in short
    lines."""
    from cli.terminal import evaluation_text, recipe_text, summary_text

    flow_run = _flow_run_url(summary.get("flow_run_id")) if lasting_server else None
    if "comparison_table" in summary or "evaluations" in summary:
        evaluation = settings.evaluation if settings is not None else None
        return recipe_text(summary, flow_run, evaluation.scoring.in_domain if evaluation else None, command)
    if "benchmarks" in summary and "model" in summary:
        return evaluation_text(summary)
    return summary_text(summary, flow_run)


def _run_url(settings, run_id: str) -> str:
    """Where a person opens a stage's MLflow run (its experiment read back from the store)."""
    from mlflow import MlflowClient

    from cli.store_check import tracking_uri_of
    from runtime.tracking import RunRef, run_url

    uri = tracking_uri_of(settings.tracking, Path(settings.project_dir))
    experiment = MlflowClient(uri).get_run(run_id).info.experiment_id
    return run_url(RunRef(tracking_uri=uri, run_id=run_id, experiment_id=experiment))


def _flow_run_url(flow_run_id: Optional[str]) -> Optional[str]:
    """The flow run's page in the Prefect UI (Prefect's own ``url_for``, from its configured UI URL)."""
    if not flow_run_id:
        return None
    from prefect.utilities.urls import url_for

    return url_for("flow-run", obj_id=flow_run_id)


def _register_stage_commands() -> None:
    from flows.commands import COMMANDS

    for name, (runner, help_text) in COMMANDS.items():
        app.command(name=name, help=help_text)(_stage_command(name, runner))


_register_stage_commands()


def _register_cockpit_commands() -> None:
    from cli.cockpit import register

    register(app)


_register_cockpit_commands()


def _register_plan_command() -> None:
    from cli.plan import register

    register(app)


_register_plan_command()


def _register_pilot_command() -> None:
    from cli.pilot import register

    register(app)


_register_pilot_command()


def main() -> None:  # pragma: no cover - console entry
    app(prog_name="polyreason")
