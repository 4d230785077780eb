"""The local stack: a Prefect server and an MLflow tracking server for one project, started and stopped by PID.

``polyreason up`` starts both on 127.0.0.1 (the default ports 4200 and 5000, or
free ones when those are taken), waits until both answer their health checks,
and records PIDs, URLs and log files in ``<project>/.polyreason/stack.json``.
Later commands in that project find the file and use the servers
(``activate``: ``PREFECT_API_URL`` and ``MLFLOW_TRACKING_URI``, each while its
server runs), so runs show up in both UIs; a command refuses to start while a
recorded server is down (``stack_problems``: its runs would go elsewhere) and
says how to restart it.

One server per database: ``up`` keeps each recorded server that answers and
starts only the others, and never starts a server on a database another live
server holds (``cli.project_servers``: a server whose record was lost, one
started by hand, a running command's temporary Prefect server): it refuses,
naming it. ``polyreason down`` stops the recorded servers and every other
lasting server of the project's databases, whoever started it (a command's
temporary server ends with its command and is left to it).

How a server is launched (commands, environment, ports, health, process
groups): ``cli.stack_launch``. Prefect's server is its application behind a Host
check, answering only its own origin, with CSRF protection on
(``cli.prefect_app``), analytics off and ``PREFECT_UI_API_URL`` set to the port it
really listens on (without it a server off port 4200 serves a UI that calls
4200 and shows only "Oops. Something went wrong").
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

from cli.project_servers import NAMES, SERVICES, databases, project_servers
from cli.stack_launch import (
    StackError, choose_port, group_alive, healthy, mlflow_command, port_free, prefect_command, server_env, start,
    stop_pids, wait_healthy,
)
from runtime.project import prepared_project


@dataclass
class Stack:
    prefect_url: str
    mlflow_url: str
    pids: dict[str, int]
    logs: dict[str, str]

    @property
    def prefect_api(self) -> str:
        return f"{self.prefect_url}/api"

    def url(self, service: str) -> str:
        return getattr(self, f"{service}_url")

    def health(self, service: str) -> str:
        return f"{self.prefect_api}/health" if service == "prefect" else f"{self.mlflow_url}/health"


def state_file(project_dir: str | Path) -> Path:
    return prepared_project(project_dir).stack_file


ABANDON_GRACE_S = 2.0  # a server that did not come up gets this long after SIGTERM (inside an interrupt's deadline)
STOPPED: list[str] = []  # what a failed or interrupted start stopped, e.g. "prefect (pid 12)"
PENDING: list = []  # the stop of a start in progress (``up``), for an interrupt that ends the process before it unwinds


def stop_pending() -> None:
    """Stop a start still in progress (an interrupt's closing line is written before the exit handlers run)."""
    while PENDING:
        PENDING.pop()()


def recorded_port(stack: Stack | None, service: str) -> int | None:
    """The port a restarted server had, when it is free again (its URL stays the same); else ``None``."""
    if stack is None:
        return None
    port = int(stack.url(service).rsplit(":", 1)[1])
    return port if port_free(port) else None


def serving(stack: Stack | None, service: str) -> bool:
    """Whether the recorded ``service`` answers its health check."""
    return stack is not None and healthy(stack.health(service))


def blockers(project: Path, recorded: Stack | None, starting: list[str]) -> list[str]:
    """Why a server of each service in ``starting`` must not be started: a live server already holds its database."""
    problems, ours = [], set()
    for service in starting:
        if recorded is not None and group_alive(recorded.pids[service]):
            ours.add(recorded.pids[service])
            problems.append(f"the {NAMES[service]} server `polyreason up` started (pid {recorded.pids[service]}) runs but "
                            f"does not answer at {recorded.url(service)}")
    for server in project_servers(project):
        if server.service in starting and server.group not in ours:
            problems.append(server.describe(databases(project)[server.service]))
    if not problems:
        return []
    remedy = (f"`polyreason down --project-dir {project}` stops it" if "temporary" not in " ".join(problems) else
              "start `polyreason up` once that command has ended")
    return [f"{'; '.join(problems)}; {remedy} (a second server on one database is never started)"]


def up(project_dir: str | Path, *, prefect_port: int | None = None, mlflow_port: int | None = None,
       timeout: float = 180) -> tuple[Stack, list[str]]:
    """Start the servers of the stack that do not run; returns the stack and the services started now.

    A recorded server that answers is kept; a database another live server holds gets no second server
    (``StackError`` naming it). The servers are recorded in ``stack.json`` as soon as they are spawned
    (``polyreason down`` finds them even when this process is killed); a start that fails or is interrupted
    stops what it started and puts the record back, also from the exit handlers an interrupt's deadline runs.
    """
    import atexit

    from cli.disk_space import space_problems

    project = Path(project_dir).resolve()
    recorded = read_stack(project)
    kept = [service for service in SERVICES if serving(recorded, service)]
    starting = [service for service in SERVICES if service not in kept]
    if not starting:
        return recorded, []
    problems = blockers(project, recorded, starting) + space_problems([project])
    if problems:
        raise StackError(problems[0])
    asked = {"prefect": prefect_port, "mlflow": mlflow_port}
    ports = {service: choose_port(service, asked[service] if asked[service] is not None else
                                  recorded_port(recorded, service)) for service in starting}
    urls = {**{service: recorded.url(service) for service in kept},
            **{service: f"http://127.0.0.1:{port}" for service, port in ports.items()}}
    (project / "mlruns").mkdir(parents=True, exist_ok=True)
    (project / ".prefect").mkdir(parents=True, exist_ok=True)
    logs = {name: project / ".polyreason" / "logs" / f"{name}.log" for name in SERVICES}
    env = server_env(project, int(urls["prefect"].rsplit(":", 1)[1]))
    processes: dict[str, subprocess.Popen] = {}

    def abandon() -> None:
        if abandon in PENDING:
            PENDING.remove(abandon)
        if not processes or getattr(abandon, "done", False):
            return
        abandon.done = True
        stop_pids([p.pid for p in processes.values()], ABANDON_GRACE_S)
        STOPPED.extend(f"{name} (pid {p.pid})" for name, p in processes.items())
        write_stack(project, recorded) if recorded is not None else state_file(project).unlink(missing_ok=True)

    atexit.register(abandon)
    PENDING.append(abandon)
    try:
        for service in starting:
            command = prefect_command(ports[service]) if service == "prefect" else mlflow_command(project, ports[service])
            processes[service] = start(command, env, logs[service])
        stack = Stack(urls["prefect"], urls["mlflow"],
                      {n: processes[n].pid if n in processes else recorded.pids[n] for n in SERVICES},
                      {n: str(path) for n, path in logs.items()})
        write_stack(project, stack)
        wait_healthy({service: stack.health(service) for service in starting}, processes, logs, timeout)
    except BaseException:
        atexit.unregister(abandon)
        abandon()
        raise
    atexit.unregister(abandon)
    PENDING.remove(abandon)
    return stack, starting


def write_stack(project: Path, stack: Stack) -> None:
    path = state_file(project)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(asdict(stack), indent=1), encoding="utf-8")


def read_stack(project_dir: str | Path) -> Stack | None:
    path = state_file(project_dir)
    if not path.is_file():
        return None
    return Stack(**json.loads(path.read_text(encoding="utf-8")))


def down(project_dir: str | Path) -> tuple[list[int], list[str]]:
    """Stop the recorded servers and every other lasting server of the project's databases.

    Returns the process groups stopped and what was left running: a command's temporary Prefect server, which
    ends with its command.
    """
    project = Path(project_dir).resolve()
    recorded = read_stack(project)
    groups = list(recorded.pids.values()) if recorded is not None else []
    found = project_servers(project)
    groups += [server.group for server in found if not server.temporary and server.group not in groups]
    running = [group for group in groups if group_alive(group)]
    stop_pids(running)
    state_file(project).unlink(missing_ok=True)
    left = [server.describe(databases(project)[server.service]) for server in found if server.temporary]
    return running, left


def status(project_dir: str | Path) -> dict:
    """What runs: each recorded server's PID, whether it is alive and healthy, and its URL."""
    stack = read_stack(project_dir)
    if stack is None:
        return {"running": False}
    servers = {name: {"pid": pid, "alive": group_alive(pid), "healthy": healthy(stack.health(name)),
                      "url": stack.url(name)} for name, pid in stack.pids.items()}
    return {"running": all(s["alive"] and s["healthy"] for s in servers.values()), "servers": servers}


def activate(project_dir: str | Path) -> Stack | None:
    """Point this process at the project's running servers, each while it runs (values already set win)."""
    stack = read_stack(project_dir)
    if stack is None:
        return None
    if group_alive(stack.pids["prefect"]):
        os.environ.setdefault("PREFECT_API_URL", stack.prefect_api)
    if group_alive(stack.pids["mlflow"]):
        os.environ.setdefault("MLFLOW_TRACKING_URI", stack.mlflow_url)
    return stack


def stack_problems(project: Path, tracking_uri: str | None) -> list[str]:
    """A recorded server that is down, where a command would have used it (nothing else points elsewhere)."""
    stack = read_stack(project)
    if stack is None:
        return []
    uses = {"prefect": not os.environ.get("PREFECT_API_URL"),
            "mlflow": tracking_uri is None and not os.environ.get("MLFLOW_TRACKING_URI")}
    return [f"the {NAMES[name]} server `polyreason up` started for {project} "
            f"(pid {stack.pids[name]}, {stack.url(name)}) is not running; restart it with: polyreason up "
            f"--project-dir {project} (or stop the stack with polyreason down)"
            for name in SERVICES if uses[name] and not group_alive(stack.pids[name])]
