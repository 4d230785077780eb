"""What every ``polyreason`` command gets, whoever registers it: one-line errors, interrupts, a server check.

``PolyreasonGroup`` (the typer group of ``cli.app.app``) runs each command:

* an ordinary mistake — a profile key or override (``ProfileError``), a check
  the profile fails before anything starts or a bad input file (``Refused``), an
  option value typer refuses — is one line naming the key, file or option, exit
  code 2, no traceback;
* any other error is one line with its type and message (and the URL of a
  failed HTTP request), exit code 1;
* ``--debug`` anywhere on the command line (or ``POLYREASON_DEBUG=1``) raises
  the error instead, with its traceback;
* ``--verbose`` anywhere on the command line (or ``POLYREASON_VERBOSE=1``)
  shows every library's warnings and log lines, which are filtered otherwise
  (``components.quiet``);
* Ctrl-C and SIGTERM (Prefect's ``TerminationSignal`` inside a flow) end in one
  line saying what was kept and how to resume, exit 130 or 143
  (``cli.interrupts``);
* commands in ``NEEDS_PREFECT_SERVER`` refuse to start without a reachable
  Prefect server, and say how to start one.

``PolyreasonApp`` is the process entry (console script, ``python -m cli``):
it installs the signal handling and ends the process as soon as its work and
exit handlers are done (``exit_now``). In-process test runners call the group
directly and keep their own signals.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import typer
from typer.core import TyperGroup

NEEDS_PREFECT_SERVER = {"deploy", "worker"}  # they hand runs to a server that must outlive them
DEBUG = "--debug"
VERBOSE = "--verbose"  # every library's warnings and log lines (``components.quiet``), here and in child processes


def _debugging(ctx: typer.Context) -> bool:
    return bool(ctx.meta.get("polyreason.debug")) or os.environ.get("POLYREASON_DEBUG", "") not in ("", "0")


def _fail(ctx: typer.Context, message: str, code: int) -> None:
    _close_progress()
    name = ctx.invoked_subcommand or ctx.meta.get("polyreason.command")
    typer.echo(f"polyreason{' ' + name if name else ''}: {message}", err=True)
    raise typer.Exit(code)


class PolyreasonGroup(TyperGroup):
    """The error handling, interrupts and server check every ``polyreason`` command gets."""

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        end = args.index("--") if "--" in args else len(args)
        ctx.meta["polyreason.debug"] = DEBUG in args[:end]
        if VERBOSE in args[:end]:  # before any library is imported; child processes inherit it
            from components.quiet import VERBOSE as VARIABLE

            os.environ[VARIABLE] = "1"
        args = [arg for arg in args[:end] if arg not in (DEBUG, VERBOSE)] + args[end:]
        ctx.meta["polyreason.command"] = next((arg for arg in args if arg in self.commands), None)
        return super().parse_args(ctx, args)

    def resolve_command(self, ctx: typer.Context, args: list[str]):
        name, command, rest = super().resolve_command(ctx, args)
        if name in NEEDS_PREFECT_SERVER:
            from cli.environment import configure

            configure(_project_dir(rest))
            from cli.prefect_server import require_server

            require_server(name)
        return name, command, rest

    def invoke(self, ctx: typer.Context):
        from components.settings import ProfileError
        from cli import interrupts
        from cli.preflight import Refused

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
            _failed(ctx, error)
        except BaseException as error:  # Ctrl-C, SIGTERM (Prefect's TerminationSignal during a flow)
            if not _interrupt(error):
                raise
            _closed(*interrupts.finish())


def _failed(ctx: typer.Context, error: Exception) -> None:
    """An error's last word: the dead server or full disk behind it when the watchdog finds one, else the error."""
    from cli import interrupts
    from cli.watchdog import explain

    try:
        interrupts.start_closing()
        problem = interrupts.stopping() or explain(error)
    except KeyboardInterrupt:  # the watchdog's signal crossed the failure: its cause is noted
        problem = interrupts.stopping()
    if problem is None:
        _fail(ctx, f"failed: {type(error).__name__}: {_one_line(error)} (--debug shows the traceback)", 1)
    _closed(*interrupts.close_for(problem))


def _closed(line: str, code: int) -> None:
    _close_progress()
    if line:
        typer.echo(line, err=True)
    raise typer.Exit(code) from None


def _close_progress() -> None:
    """End a progress line left open on the terminal, so the last word starts on a line of its own."""
    terminal = sys.modules.get("cli.terminal")  # loaded only by commands that show progress
    if terminal is not None:
        terminal.close_progress()


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


class PolyreasonApp(typer.Typer):
    """The process entry (console script, ``python -m cli``); tests invoke the group without it."""

    def __call__(self, *args, **kwargs):
        from cli import interrupts

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
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be said
            pass
    os._exit(code if isinstance(code, int) else (0 if code is None else 1))


def _drain_prefect_workers() -> None:
    """Send the logs and events Prefect still holds."""
    handlers, events = sys.modules.get("prefect.logging.handlers"), sys.modules.get("prefect.events.worker")
    if handlers is not None:
        handlers.APILogWorker.drain_all(timeout=5)
    if events is not None:
        events.EventsWorker.drain_all()
