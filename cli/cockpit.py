"""The cockpit commands of ``polyreason``: the local stack, deployments, workers, comparisons.

``up`` / ``down`` / ``status`` manage the project's Prefect and MLflow servers
(``cli/stack.py``); ``deploy`` registers the deployments and work pools
(``cli/deploy.py``); ``worker`` serves a work pool; ``compare`` puts evaluations
side by side (``flows/compare.py``).
"""

from __future__ import annotations

import json
import os
import sys
from contextlib import redirect_stdout
from pathlib import Path
from typing import Optional

import typer

PROJECT_OPTION = typer.Option(Path("."), "--project-dir", help="Where mlruns/, artifacts/ and .prefect/ live.")


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=2)


def up(project_dir: Path = PROJECT_OPTION,
       prefect_port: Optional[int] = typer.Option(None, help="Port of the Prefect server (default 4200, or a free "
                                                  "one; 0: a free one)."),
       mlflow_port: Optional[int] = typer.Option(None, help="Port of the MLflow server (default 5000, or a free one; "
                                                 "0: a free one).")
       ) -> None:
    """Start the project's Prefect server and MLflow tracking server on 127.0.0.1 and print their URLs."""
    from cli import interrupts
    from cli import stack as stack_module

    def interrupted(signal_name: str, _ended: list[str]) -> str:
        stack_module.stop_pending()  # a start still in progress is stopped before the line says what was
        return f"polyreason up: interrupted by {signal_name}; " + _stopped(stack_module.STOPPED)

    interrupts.describe(interrupted)
    try:
        stack, started = stack_module.up(project_dir, prefect_port=prefect_port, mlflow_port=mlflow_port)
    except stack_module.StackError as error:
        _fail(f"{error}; {_stopped(stack_module.STOPPED)}")
    from runtime.tracking import runs_page

    from cli.project_servers import NAMES

    kept = [NAMES[name] for name in NAMES if name not in started]
    state = ("started" if not kept else "already running" if not started else
             f"started {', '.join(NAMES[name] for name in started)} ({', '.join(kept)} was already running)")
    typer.echo(f"{state}:\n  Prefect UI  {stack.prefect_url}\n"
               f"  MLflow UI   {runs_page(stack.mlflow_url)}\nlater polyreason commands in {project_dir.resolve()} use them; "
               "next: polyreason deploy, then polyreason worker")


def _stopped(stopped: list[str]) -> str:
    """What a failed or interrupted ``up`` left: nothing, and what it stopped to get there."""
    return (f"stopped what it had started ({', '.join(stopped)}); nothing is left running" if stopped
            else "nothing was started")


def down(project_dir: Path = PROJECT_OPTION) -> None:
    """Stop the project's Prefect and MLflow servers: those `polyreason up` started, and any other serving its
    databases (a running command's temporary server is left to end with it)."""
    from cli.stack import down as stop_stack

    pids, left = stop_stack(project_dir)
    typer.echo(f"stopped {', '.join(map(str, pids))}" if pids else "nothing was running")
    for server in left:
        typer.echo(f"left running: {server} (it ends with its command)")


def status(project_dir: Path = PROJECT_OPTION,
           as_json: bool = typer.Option(False, "--json", help="Print the state as JSON and nothing else.")) -> None:
    """Say what runs: each server's URL, PID and health, and the workers serving each work pool."""
    from cli.stack import status as stack_status

    state = stack_status(project_dir)
    prefect = state.get("servers", {}).get("prefect", {})
    if prefect.get("healthy"):
        state["workers"] = pool_workers(f"{prefect['url']}/api")
    typer.echo(json.dumps(state, indent=2) if as_json else status_text(state, project_dir))


def pool_workers(api_url: str) -> dict[str, list[str]]:
    """Work pool -> the workers Prefect counts as online there (each polls its pool and sends heartbeats)."""
    from prefect import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: api_url}), get_client(sync_client=True) as client:
        return {pool.name: [w.name for w in client.read_workers_for_work_pool(pool.name)
                            if str(w.status).upper().endswith("ONLINE")] for pool in client.read_work_pools()}


def status_text(state: dict, project_dir: Path) -> str:
    """``status`` for a person: a line per server, then a line per work pool with its workers, then what to do."""
    if not state.get("running") and not state.get("servers"):
        return f"nothing runs for {project_dir.resolve()}; start it: polyreason up"
    lines = [f"{name:<8} {s['url']}  pid {s['pid']}, {'healthy' if s['healthy'] else 'NOT answering'}"
             + ("" if s["alive"] else " (process gone)") for name, s in state["servers"].items()]
    workers = state.get("workers")
    if workers is None:
        return "\n".join([*lines, "workers  unknown: the Prefect server does not answer"])
    for pool, names in sorted(workers.items()):
        served = f"{len(names)} worker(s) online" if names else f"no worker: polyreason worker --pool {pool}"
        lines.append(f"pool     {pool}: {served}")
    if not workers:
        lines.append("pools    none yet: polyreason deploy")
    return "\n".join(lines)


def _require_server(project_dir: Path, command: str) -> None:
    """The project's (or the configured) Prefect server must answer; its URL is exported for child processes.

    The same check as the command line's own (``cli.prefect_server.require_server``): the URL
    comes from ``PREFECT_API_URL`` or Prefect's settings profile, so a server configured either way
    is found by both.
    """
    from cli.prefect_server import require_server
    from cli.environment import configure

    configure(project_dir)
    os.environ["PREFECT_API_URL"] = require_server(command)


def deploy(project_dir: Path = PROJECT_OPTION,
           pool: str = typer.Option("polyreason", help="The process work pool of the command deployments."),
           profiles_dir: Optional[Path] = typer.Option(None, help="Profiles offered in the Run form (default profiles/)."),
           all_nightlies: bool = typer.Option(False, "--all-nightlies", help="Schedule the nightly re-evaluation of "
                                              "every profile with a nightly section, not only of registered models.")
           ) -> None:
    """Register the deployments (recipe and every stage command, nightly evaluations, placed stages)."""
    _require_server(project_dir, "deploy")
    from cli import interrupts
    from cli.deploy import deploy as register

    done: list[str] = []
    interrupts.describe(lambda signal_name, _: f"polyreason deploy: interrupted by {signal_name}; {len(done)} "
                        "deployment(s) registered; run it again to register every one (it updates them in place)")
    _, skipped = register(project_dir, pool=pool, profiles_dir=profiles_dir, all_nightlies=all_nightlies, done=done)
    for line in done:
        typer.echo(f"deployed {line}")
    if skipped:
        typer.echo(f"no nightly for {len(skipped)} profile(s) whose model is not registered yet "
                   f"({', '.join(skipped)}); deploy again after a recipe registers one, or --all-nightlies")
    typer.echo(f"start a worker: polyreason worker --pool {pool} --project-dir {project_dir}")


def worker(pool: str = typer.Option("polyreason", help="The work pool to serve."),
           project_dir: Path = PROJECT_OPTION) -> None:
    """Serve a process work pool: each flow run of its deployments runs in its own process here.

    The ``prefect worker`` runs as a child under ``components.lifeline`` (``runtime.processes.children.spawn``): SIGTERM or
    Ctrl-C here ends it and the flow-run processes below it before this command exits, and a ``kill -9`` here
    ends it too.
    """
    _require_server(project_dir, "worker")
    from cli import interrupts
    from cli.deploy import worker_command
    from runtime.processes.children import spawn

    interrupts.describe(lambda signal_name, ended: f"polyreason worker: stopped by {signal_name}; ended "
                        f"{', '.join(ended) or 'the prefect worker'} and the flow runs it was running")
    child = spawn(worker_command(pool), f"prefect worker for pool {pool}")
    raise typer.Exit(code=child.wait())


def _paper_table(paper: Optional[str], project_dir: Path) -> Optional[str]:
    """The table file ``--paper`` names, refused in one line (exit 2) when there is none."""
    if paper is None:
        return None
    from cli.preflight import Refused
    from components.reports.paper_tables import load_table, resolve_table

    try:
        table = resolve_table(paper, project_dir)
        load_table(table)  # a malformed file is refused before any run, naming its rows and fields
    except ValueError as error:
        raise Refused(str(error).splitlines(), source="--paper") from None
    return str(table.resolve())


def compare(items: list[str] = typer.Argument(..., help="Run ids, a recipe's parent run id, or models:/NAME/VERSION."),
            baseline: Optional[str] = typer.Option(None, help="The model label deltas are taken against "
                                            "(the first by default), or 'previous': each model against the one before it."),
            paper: Optional[str] = typer.Option(None, help="Hold the runs against a paper's table: a paper profile "
                                                "(profiles/NAME.yaml), its table file, or its name."),
            as_json: bool = typer.Option(False, "--json", help="Print the comparison (and paper) rows as JSON."),
            project_dir: Path = PROJECT_OPTION) -> None:
    """Evaluations side by side: per-language table with deltas to a baseline and a Pareto plot, in a new run;
    with --paper also measured against the paper's table, row by row."""
    from cli.environment import configure

    table = _paper_table(paper, project_dir)
    paths = configure(project_dir)
    from cli.prefect_server import check_configured_server, start_temporary_server
    from flows.compare import compare_flow

    check_configured_server()
    start_temporary_server(paths["prefect_home"])  # ours, closed to other origins, rather than Prefect's default

    with redirect_stdout(sys.stderr):  # stdout holds the result alone
        result = compare_flow(items, baseline=baseline, project_dir=str(project_dir), paper=table)
    if as_json:
        def read(path: Optional[str]):
            return json.loads(Path(path).read_text(encoding="utf-8")) if path else None

        typer.echo(json.dumps({"run_id": result.run_id, "run_url": result.run_url, "models": result.models,
                               "baseline": result.baseline, "comparison": read(result.rows),
                               "paper": read(result.paper_rows)}, ensure_ascii=False, indent=2))
        return
    typer.echo(Path(result.table).read_text(encoding="utf-8"))
    if result.paper_table:
        typer.echo(Path(result.paper_table).read_text(encoding="utf-8"))
    typer.echo(f"comparison run: {result.run_url}")


def register(app: typer.Typer) -> None:
    for command in (up, down, status, deploy, worker, compare):
        app.command()(command)
