"""The ``polyreason`` command line (typer). Flows are imported lazily, after
``flows.runtime.configure`` has pointed Prefect and MLflow at project-local state.

Every command, including those other modules register on ``app``, runs through
``PolyreasonGroup``: an ordinary mistake (a profile key, an override, an input
file, an option value, a check the profile fails before anything starts) is one
line naming the key, file or option, with exit code 2 and no traceback;
``--debug`` anywhere on the command line (or ``POLYREASON_DEBUG=1``) shows the
traceback instead. Ctrl-C and SIGTERM end any command within seconds with one
line saying what was kept and how to resume (``flows.interrupts``, installed by
``PolyreasonApp``, the process entry). Commands in ``NEEDS_PREFECT_SERVER``
refuse to start without a reachable Prefect server.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Optional

import typer
from typer.core import TyperGroup

NEEDS_PREFECT_SERVER = {"deploy", "worker"}  # they hand runs to a server that must outlive them
DEBUG = "--debug"


def _debugging(ctx: typer.Context) -> bool:
    return bool(ctx.meta.get("polyreason.debug")) or os.environ.get("POLYREASON_DEBUG", "") not in ("", "0")


def _fail(ctx: typer.Context, message: str, code: int) -> None:
    name = ctx.invoked_subcommand or ctx.meta.get("polyreason.command")
    typer.echo(f"polyreason{' ' + name if name else ''}: {message}", err=True)
    raise typer.Exit(code)


class PolyreasonGroup(TyperGroup):
    """The error handling, interrupts and server check every ``polyreason`` command gets."""

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        end = args.index("--") if "--" in args else len(args)
        ctx.meta["polyreason.debug"] = DEBUG in args[:end]
        args = [arg for arg in args[:end] if arg != DEBUG] + args[end:]
        ctx.meta["polyreason.command"] = next((arg for arg in args if arg in self.commands), None)
        return super().parse_args(ctx, args)

    def resolve_command(self, ctx: typer.Context, args: list[str]):
        name, command, rest = super().resolve_command(ctx, args)
        if name in NEEDS_PREFECT_SERVER:
            from flows.runtime import configure

            configure(_project_dir(rest))
            from flows.prefect_server import require_server

            require_server(name)
        return name, command, rest

    def invoke(self, ctx: typer.Context):
        from components.settings import ProfileError
        from flows import interrupts
        from tasks.preflight import Refused

        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort):
            raise
        except typer.TyperException as error:  # a bad option or argument (typer's own click exceptions)
            if _debugging(ctx) or not hasattr(error, "format_message"):
                raise
            _fail(ctx, error.format_message(), getattr(error, "exit_code", 2))
        except (Refused, ProfileError) as error:
            if _debugging(ctx):
                raise
            _fail(ctx, str(error), 2)
        except Exception as error:  # noqa: BLE001 - the CLI's last word: one line, the traceback with --debug
            if _debugging(ctx):
                raise
            _fail(ctx, f"failed: {type(error).__name__}: {_one_line(error)} (--debug shows the traceback)", 1)
        except BaseException as error:  # Ctrl-C, SIGTERM (Prefect's TerminationSignal during a flow)
            if not _interrupt(error):
                raise
            line, code = interrupts.finish()
            if line:
                typer.echo(line, err=True)
            raise typer.Exit(code) from None


def _interrupt(error: BaseException) -> bool:
    prefect_exceptions = sys.modules.get("prefect.exceptions")
    signal_types = (prefect_exceptions.ExternalSignal,) if prefect_exceptions is not None else ()
    return isinstance(error, (KeyboardInterrupt, *signal_types))


def _one_line(error: BaseException) -> str:
    """The error's first line, with the URL of a failed HTTP request (an unreachable endpoint says where)."""
    text = (str(error).strip().splitlines() or [""])[0]
    request = getattr(error, "request", None)
    url = getattr(request, "url", None)
    return f"{text} ({url})" if url is not None and str(url) not in text else text


def _project_dir(args: list[str]) -> Path:
    if "--project-dir" in args and args.index("--project-dir") + 1 < len(args):
        return Path(args[args.index("--project-dir") + 1])
    return Path(".")


HELP = """polyreason: post-train reasoning models to think in the language of the question, and measure it.

Stage commands take a profile YAML and dotted key=value overrides. Mistakes are reported in one line (exit 2);
add --debug to any command to see the traceback. Ctrl-C ends a run within seconds and keeps what it finished."""

class PolyreasonApp(typer.Typer):
    """The process entry (console script, ``python -m flows.cli``); tests invoke the group without it."""

    def __call__(self, *args, **kwargs):
        from flows import interrupts

        interrupts.install()  # the process's signals; in-process test runners keep theirs
        try:
            return super().__call__(*args, **kwargs)
        except SystemExit as done:
            exit_now(done.code)


def exit_now(code) -> None:
    """End the process once its work and exit handlers are done, without the interpreter's final collection.

    Tearing down the modules a run imports (torch, transformers, Prefect, MLflow) costs 3-4 s on a small CPU
    after everything is written; a command, an interrupted one included, should end when its work ends.
    """
    import atexit
    import threading

    if isinstance(code, str):
        sys.stderr.write(code + "\n")
    _drain_prefect_workers()  # while the server is up: at exit its logs would wait 5 s for a stopped server
    atexit._run_exitfuncs()  # Prefect stops its threads and temporary server here
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join(timeout=5)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(code if isinstance(code, int) else (0 if code is None else 1))


def _drain_prefect_workers() -> None:
    """Send the logs and events Prefect still holds."""
    handlers, events = sys.modules.get("prefect.logging.handlers"), sys.modules.get("prefect.events.worker")
    if handlers is not None:
        handlers.APILogWorker.drain_all(timeout=5)
    if events is not None:
        events.EventsWorker.drain_all()


app = PolyreasonApp(cls=PolyreasonGroup, add_completion=False, no_args_is_help=True, help=HELP,
                    pretty_exceptions_enable=False)

PROJECT_OPTION = typer.Option(Path("."), "--project-dir", help="Where mlruns/, artifacts/ and .prefect/ live.")


def _configure(project_dir: Path) -> dict[str, Path]:
    from flows.runtime import configure

    return configure(project_dir)


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

    return load_profile(profile, overrides)


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
    from tasks.preflight import Refused

    if not path.exists():
        raise Refused([f"{path}: no such file"])
    if not path.is_file():
        raise Refused([f"{path}: is a directory, expected a JSONL file"])
    return path


def _report_rows(result: dict, path: Path) -> None:
    """Exit 2 when no row was valid; otherwise say how many rows were skipped."""
    from components.scoring import bad_rows
    from tasks.preflight import Refused

    bad, problems = bad_rows(result), len(result.get("errors", []))
    if not result.get("rows"):
        first = result["errors"][0]["message"] if problems else "the file holds no row"
        raise Refused([f"{path}: no valid row ({bad} bad row(s)); first: {first}"])
    if bad:
        typer.echo(f"{bad} bad row(s) skipped ({problems} problem(s)); see 'errors'", err=True)


@app.command()
def score(
    input: Path = typer.Argument(..., help="JSONL rows {id, lang, gold, completion}."),
    verifier: str = typer.Option("trusted", help="Verifier name.", callback=_registered("verifier")),
    lcpr_rule: str = typer.Option("adamame", help="LCPR rule (adamame | lcb | ...).", callback=_registered("LCPR rule")),
    words: Optional[Path] = typer.Option(None, help="English word list for --lcpr-rule lcb."),
    max_context: int = typer.Option(8192, min=1, help="Context length for TTC."),
    out: Optional[Path] = typer.Option(None, help="Write the JSON here instead of stdout."),
) -> None:
    """Score completions: accuracy, pass@k, LPR/WPR/LCPR, SLC, SLC&Acc, TTC per language."""
    from components.scoring import score_file

    if lcpr_rule.startswith("lcb") and words is None:
        raise typer.BadParameter(f"--lcpr-rule {lcpr_rule} needs --words (the LCB English word list)",
                                 param_hint="'--words'")
    result = score_file(_input_file(input), verifier=verifier, lcpr_rule=lcpr_rule, words_path=words,
                        max_context=max_context)
    _report_rows(result, input)
    _emit(result, out)


@app.command()
def verify(
    input: Path = typer.Argument(..., help="JSONL rows {id, lang, gold, answer[, expected]}."),
    verifier: str = typer.Option("trusted", help="exact | numeric | math_verify | trusted | hybrid",
                                 callback=_registered("verifier")),
    out: Optional[Path] = typer.Option(None, help="Write the JSON here instead of stdout."),
) -> None:
    """Verify final answers against golds with one verifier."""
    from components.scoring import verify_file

    result = verify_file(_input_file(input), verifier=verifier)
    _report_rows(result, input)
    _emit(result, out)


def _stage_command(name: str, runner):
    def command(
        profile: Path = typer.Argument(..., help="Profile YAML."),
        overrides: Optional[list[str]] = typer.Argument(None, help="Dotted key=value overrides."),
        project_dir: Path = PROJECT_OPTION,
        out: Optional[Path] = typer.Option(None, help="Write the summary JSON here."),
    ) -> None:
        from components.settings import ProfileError
        from flows.commands import sections_for
        from flows.session import run_session
        from tasks.preflight import Refused, check_profile

        paths = _configure(project_dir)
        settings = _load(profile, overrides or [], project_dir)
        if settings.project_dir is None:
            settings = settings.model_copy(update={"project_dir": str(project_dir.resolve())})
        try:
            sections = sections_for(name, settings)
        except ProfileError as error:
            raise Refused([str(error)], source=str(profile)) from None
        check_profile(settings, sections, source=str(profile))
        with run_session(settings, paths["prefect_home"]):
            summary = runner(settings)
        _emit(summary, out)
        if summary.get("comparison_table"):
            typer.echo(f"\n{summary['comparison_table']}\n\nparent run: {summary['run_url']}", err=True)

    return command


def _register_stage_commands() -> None:
    from flows.commands import COMMANDS

    for name, (runner, help_text) in COMMANDS.items():
        app.command(name=name, help=help_text)(_stage_command(name, runner))


_register_stage_commands()


def _register_cockpit_commands() -> None:
    from flows.cli_cockpit import register

    register(app)


_register_cockpit_commands()


def main() -> None:  # pragma: no cover - console entry
    app(prog_name="polyreason")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
