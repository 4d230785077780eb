"""What a stage command does around its flows: stores ready, leftovers of killed runs closed, runs owned.

Before the first flow of a command (after its profile passed ``cli.preflight``):

* the tracking store's tables exist (created by one process at a time);
* MLflow runs and Prefect flow runs that a killed process left RUNNING are
  closed (``runtime.abandoned``), and the command says how many;
* a configured Prefect server answers, or this process starts its own
  temporary one (``cli.prefect_server``);
* every flow run is tagged with this process's owner token, so the next start
  can close it if this process is killed.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import typer

from components.settings import Profile


@contextmanager
def run_session(profile: Profile, prefect_home: Path) -> Iterator[None]:
    from prefect import tags

    from cli.prefect_server import check_configured_server, start_temporary_server
    from runtime.abandoned import close_abandoned_runs, crash_abandoned_flow_runs, flow_run_owner_tag
    from runtime.process import owner_token
    from cli.store_check import prepare_store, tracking_uri_of

    uri = tracking_uri_of(profile.tracking, Path(profile.project_dir))
    prepare_store(uri)
    closed = close_abandoned_runs(uri)
    check_configured_server()
    start_temporary_server(prefect_home)
    crashed = crash_abandoned_flow_runs()
    if closed or crashed:
        typer.echo(f"closed what killed runs left open: {len(closed)} MLflow run(s) marked KILLED, "
                   f"{len(crashed)} Prefect flow run(s) marked Crashed", err=True)
    with tags("polyreason", flow_run_owner_tag(owner_token())):
        yield
