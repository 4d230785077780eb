"""Which processes serve a project's databases, whoever started them: found by the files they hold open.

A Prefect server keeps its SQLite database (``.prefect/prefect.db``) open for as
long as it runs, an MLflow server the tracking store ``mlruns/mlflow.db``, and
each listens on a TCP port. So the servers of a project are the processes that
hold one of those files open *and* listen (a command that logs to the SQLite
store directly holds ``mlflow.db`` too, but listens on nothing: it is no
server). ``polyreason up`` asks before it starts a server, so that it never
starts a second one on a database a live server holds; ``polyreason down``
stops every such server that is not a running command's temporary one, recorded
in ``stack.json`` or not. A temporary Prefect server (a command's own: its
environment says ``PREFECT__SERVER_EPHEMERAL=1``) belongs to that command and
ends with it.

The processes are read from ``/proc`` through psutil (open files, listening
sockets, environment, process group); those of other users are skipped. A
database on a database server (PostgreSQL) is no file and is found by nothing
here: the record alone names those servers.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

SERVICES = ("mlflow", "prefect")  # the order `up` starts them in
NAMES = {"mlflow": "MLflow", "prefect": "Prefect"}


@dataclass(frozen=True)
class ProjectServer:
    """A process serving one of a project's databases."""

    service: str  # "prefect" or "mlflow"
    pid: int  # the process that listens
    group: int  # its process group: what stopping it ends (an MLflow server's CLI and its uvicorn)
    port: int
    temporary: bool  # a command's temporary Prefect server

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def describe(self, database: Path) -> str:
        kind = "a running command's temporary Prefect server" if self.temporary else f"a {NAMES[self.service]} server"
        return f"{kind} (pid {self.pid}, {self.url}) serves {database}"


def databases(project: Path) -> dict[str, Path]:
    """Each service's database file in ``project``."""
    root = Path(project).resolve()
    return {"prefect": root / ".prefect" / "prefect.db", "mlflow": root / "mlruns" / "mlflow.db"}


def project_servers(project: Path) -> list[ProjectServer]:
    """Every process that holds one of ``project``'s databases open and listens on a TCP port."""
    import psutil

    wanted = {str(path): service for service, path in databases(project).items() if path.exists()}
    if not wanted:
        return []
    found = []
    for process in psutil.process_iter(["pid"]):
        try:
            held = {wanted[f.path] for f in process.open_files() if f.path in wanted}
            if not held:
                continue
            ports = [c.laddr.port for c in process.net_connections("tcp") if c.status == psutil.CONN_LISTEN]
            if not ports:
                continue
            temporary = process.environ().get("PREFECT__SERVER_EPHEMERAL") == "1"
            group = os.getpgid(process.pid)
        except (psutil.Error, OSError):  # ended meanwhile, or another user's
            continue
        found += [ProjectServer(service, process.pid, group, min(ports), temporary) for service in sorted(held)]
    return found
