"""What a stage command does around its flows: stores ready, leftovers of killed runs closed, runs owned, servers watched.

Before the first flow of a command (after its profile passed ``cli.preflight``):

* the tracking store's tables exist (created by one process at a time);
* MLflow runs and Prefect flow runs that a killed process left RUNNING are
  closed (``runtime.processes.abandoned``), and the command says how many;
* a configured Prefect server answers, or this process starts its own
  temporary one (``cli.prefect_server``);
* every flow run is tagged with this process's owner token, so the next start
  can close it if this process is killed;
* while the flows run, the watchdog (``cli.watchdog``) watches the local servers
  the command uses (``polyreason up``'s, the temporary one, another on 127.0.0.1)
  and the free space of the project's state, and stops the command, naming the
  server or the disk, when one fails.
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

    from cli.disk_space import state_paths
    from cli.prefect_server import check_configured_server, start_temporary_server
    from cli.watchdog import bound_mlflow_client, watching
    from runtime.processes.abandoned import close_abandoned_runs, crash_abandoned_flow_runs, flow_run_owner_tag
    from runtime.processes.children import owner_token
    from cli.store_check import prepare_store, tracking_uri_of

    uri = tracking_uri_of(profile.tracking, Path(profile.project_dir))
    bound_mlflow_client(uri)
    prepare_store(uri)
    closed = close_abandoned_runs(uri)
    check_configured_server()
    server = start_temporary_server(prefect_home)
    crashed = crash_abandoned_flow_runs()
    if closed or crashed:
        typer.echo(f"closed what killed runs left open: {len(closed)} MLflow run(s) marked KILLED, "
                   f"{len(crashed)} Prefect flow run(s) marked Crashed", err=True)
    servers = local_servers(Path(profile.project_dir), uri, server)
    with watching(servers, state_paths(Path(profile.project_dir), uri)), \
            tags("polyreason", flow_run_owner_tag(owner_token())):
        yield


def local_servers(project: Path, tracking_uri: str, temporary=None) -> list:
    """The servers on this machine a command's flows talk to, each with where it came from and how to restart it."""
    from cli.prefect_server import configured_api_url
    from cli.stack import read_stack
    from cli.stack_launch import group_alive
    from cli.watchdog import Watched, is_local
    from components.settings.base import redact_credentials

    servers = []
    if temporary is not None:
        process = temporary.server_process
        servers.append(Watched("Prefect", temporary.address, f"{temporary.api_url}/health",
                               "this command's temporary one", "running the command again starts a new one",
                               process.pid,
                               lambda: process.poll() is None))
    stack = read_stack(project)
    restart_stack = f"restart it with: polyreason up --project-dir {project}"
    api = (configured_api_url() or "").rstrip("/") if temporary is None else ""
    for name, url, health in (("Prefect", api.removesuffix("/api"), f"{api}/health"),
                              ("MLflow", tracking_uri.rstrip("/"), f"{tracking_uri.rstrip('/')}/health")):
        if not is_local(url):
            continue
        recorded = stack is not None and url == getattr(stack, f"{name.lower()}_url")
        pid = stack.pids.get(name.lower()) if recorded else None
        shown = redact_credentials(url)  # the health check keeps them; the lines never show them
        servers.append(Watched(name, shown, health, "`polyreason up`'s" if recorded else "the one configured",
                               restart_stack if recorded else f"restart the server at {shown}", pid,
                               (lambda pid=pid: group_alive(pid)) if pid else None))
    return servers
