"""The local stack: a Prefect server and an MLflow tracking server for one project, started and stopped by PID.

``polyreason up`` starts both on 127.0.0.1 (the default ports 4200 and 5000, or
free ones when those are taken), waits until both answer their health checks,
and records PIDs, URLs and log files in ``<project>/.polyreason/stack.json``.
Later commands in that project find the file and use the servers
(``activate``: ``PREFECT_API_URL`` and ``MLFLOW_TRACKING_URI``), so runs show up
in both UIs. ``polyreason down`` stops exactly the recorded processes.

Lean settings: MLflow with ``--workers 1`` and job execution off (2 processes,
~0.5 GB instead of 15 and 3.2 GB), SQLite under ``mlruns/`` with artifacts beside
it; Prefect with analytics off and ``PREFECT_UI_API_URL`` set to the port it
really listens on (without it a server off port 4200 serves a UI that calls
4200 and shows only "Oops. Something went wrong").
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

from runtime.project import prepared_project

BIN = Path(sys.executable).parent
DEFAULT_PORTS = {"prefect": 4200, "mlflow": 5000}


class StackError(RuntimeError):
    """The stack could not be started (the message is one line; nothing is left running)."""


@dataclass
class Stack:
    prefect_url: str
    mlflow_url: str
    pids: dict[str, int]
    logs: dict[str, str]

    @property
    def prefect_api(self) -> str:
        return f"{self.prefect_url}/api"


def state_file(project_dir: str | Path) -> Path:
    return prepared_project(project_dir).stack_file


def port_free(port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        return sock.connect_ex(("127.0.0.1", port)) != 0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def choose_port(service: str, asked: int | None) -> int:
    """The port asked for (an error when taken), else the default, else a free one; 0 asks for a free one.

    The port is chosen here, not by the server: the health check, the UI's API URL and ``stack.json`` all need
    the number before the server listens (a server told ``--port 0`` binds a port nobody here knows).
    """
    if asked == 0:
        return free_port()
    if asked is not None:
        if not 0 < asked < 65536:
            raise StackError(f"--{service}-port {asked}: not a TCP port (1-65535, or 0 for a free one)")
        if not port_free(asked):
            raise StackError(f"port {asked} (asked for {service}) is already taken; choose another or leave it out")
        return asked
    return DEFAULT_PORTS[service] if port_free(DEFAULT_PORTS[service]) else free_port()


def health_problem(url: str, timeout_s: float = 2.0) -> str | None:
    """Why ``url`` (a server's health endpoint) does not answer 200 within ``timeout_s``; ``None`` when it does."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            return None if response.status == 200 else f"HTTP {response.status}"
    except OSError as error:
        return str(getattr(error, "reason", None) or error)


def healthy(url: str) -> bool:
    return health_problem(url) is None


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a child of this process that ended is reaped, not counted as a zombie)."""
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    except ChildProcessError:  # not this process's child: ask the kernel
        pass
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def mlflow_command(project: Path, port: int) -> list[str]:
    store = project / "mlruns"
    return [str(BIN / "mlflow"), "server", "--backend-store-uri", f"sqlite:///{store / 'mlflow.db'}",
            "--artifacts-destination", str(store / "artifacts"), "--host", "127.0.0.1", "--port", str(port),
            "--workers", "1"]


def prefect_command(port: int) -> list[str]:
    return [str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)]


def memo_store_path(prefect_home: str | Path) -> str:
    """Where a Prefect server keeps its memo of registered blocks: in ``prefect_home``.

    Prefect 3.7 computes the default from the server settings, which have no
    home, so it is ``~/.prefect/memo_store.toml`` whatever ``PREFECT_HOME`` says;
    on a machine without ``~/.prefect`` every server start then warns that it
    cannot write there (and registers every block again next time).
    """
    return str(Path(prefect_home) / "memo_store.toml")


def server_env(project: Path, prefect_port: int) -> dict[str, str]:
    return dict(os.environ, PREFECT_HOME=str(project / ".prefect"), PREFECT_SERVER_ANALYTICS_ENABLED="false",
                PREFECT_SERVER_MEMO_STORE_PATH=memo_store_path(project / ".prefect"),
                PREFECT_UI_API_URL=f"http://127.0.0.1:{prefect_port}/api", MLFLOW_SERVER_ENABLE_JOB_EXECUTION="false",
                MLFLOW_DISABLE_TELEMETRY="true", DO_NOT_TRACK="1")


def start(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a", encoding="utf-8") as handle:
        env = {key: value for key, value in env.items() if key != "PREFECT_API_URL"}
        return subprocess.Popen(command, env=env, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)


def stop_pids(pids: list[int], timeout: float = 20) -> None:
    """End processes and their groups together: SIGTERM to every group, then SIGKILL to those left after ``timeout``."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        left = [pid for pid in pids if alive(pid)]
        for pid in left:
            try:
                os.killpg(pid, sig)
            except OSError:
                pass
        deadline = time.time() + timeout
        while time.time() < deadline and any(alive(pid) for pid in left):
            time.sleep(0.2)


def wait_healthy(urls: dict[str, str], processes: dict[str, subprocess.Popen], logs: dict[str, Path],
                 timeout: float) -> None:
    deadline, waiting = time.time() + timeout, dict(urls)
    while waiting and time.time() < deadline:
        for name in list(waiting):
            if processes[name].poll() is not None:
                raise StackError(f"{name} server exited during start-up (exit {processes[name].returncode}); "
                                 f"see {logs[name]}")
            if healthy(waiting[name]):
                del waiting[name]
        time.sleep(0.5)
    if waiting:
        raise StackError(f"{', '.join(waiting)} not healthy after {timeout:.0f} s; see "
                         + ", ".join(str(logs[name]) for name in waiting))


ABANDON_GRACE_S = 2.0  # a server that did not come up gets this long after SIGTERM (inside an interrupt's deadline)
STOPPED: list[str] = []  # what a failed or interrupted start stopped, e.g. "prefect (pid 12)"
PENDING: list = []  # the stop of a start in progress (``up``), for an interrupt that ends the process before it unwinds


def stop_pending() -> None:
    """Stop a start still in progress (an interrupt's closing line is written before the exit handlers run)."""
    while PENDING:
        PENDING.pop()()


def up(project_dir: str | Path, *, prefect_port: int | None = None, mlflow_port: int | None = None,
       timeout: float = 180) -> tuple[Stack, bool]:
    """Start the stack (or find it running); returns it and whether it was started now.

    The servers are recorded in ``stack.json`` as soon as they are spawned (``polyreason down`` finds them even
    when this process is killed); a start that fails or is interrupted stops both and removes the record, also
    from the exit handlers an interrupt's deadline runs.
    """
    import atexit

    project = Path(project_dir).resolve()
    running = read_stack(project)
    if running is not None and stack_healthy(running):
        return running, False
    ports = {"prefect": choose_port("prefect", prefect_port), "mlflow": choose_port("mlflow", mlflow_port)}
    (project / "mlruns").mkdir(parents=True, exist_ok=True)
    (project / ".prefect").mkdir(parents=True, exist_ok=True)
    logs = {name: project / ".polyreason" / "logs" / f"{name}.log" for name in ports}
    env = server_env(project, ports["prefect"])
    processes: dict[str, subprocess.Popen] = {}

    def abandon() -> None:
        if abandon in PENDING:
            PENDING.remove(abandon)
        if not processes or getattr(abandon, "done", False):
            return
        abandon.done = True
        stop_pids([p.pid for p in processes.values()], ABANDON_GRACE_S)
        STOPPED.extend(f"{name} (pid {p.pid})" for name, p in processes.items())
        state_file(project).unlink(missing_ok=True)

    atexit.register(abandon)
    PENDING.append(abandon)
    try:
        processes["mlflow"] = start(mlflow_command(project, ports["mlflow"]), env, logs["mlflow"])
        processes["prefect"] = start(prefect_command(ports["prefect"]), env, logs["prefect"])
        urls = {"prefect": f"http://127.0.0.1:{ports['prefect']}", "mlflow": f"http://127.0.0.1:{ports['mlflow']}"}
        stack = Stack(urls["prefect"], urls["mlflow"], {n: p.pid for n, p in processes.items()},
                      {n: str(path) for n, path in logs.items()})
        state_file(project).write_text(json.dumps(asdict(stack), indent=1), encoding="utf-8")
        wait_healthy({"prefect": f"{urls['prefect']}/api/health", "mlflow": f"{urls['mlflow']}/health"},
                     processes, logs, timeout)
    except BaseException:
        atexit.unregister(abandon)
        abandon()
        raise
    atexit.unregister(abandon)
    PENDING.remove(abandon)
    return stack, True


def read_stack(project_dir: str | Path) -> Stack | None:
    path = state_file(project_dir)
    if not path.is_file():
        return None
    return Stack(**json.loads(path.read_text(encoding="utf-8")))


def stack_healthy(stack: Stack) -> bool:
    return all(alive(pid) for pid in stack.pids.values()) and healthy(f"{stack.prefect_api}/health") \
        and healthy(f"{stack.mlflow_url}/health")


def down(project_dir: str | Path) -> list[int]:
    """Stop the recorded processes; returns their PIDs (none when nothing was recorded)."""
    stack = read_stack(project_dir)
    if stack is None:
        return []
    stop_pids(list(stack.pids.values()))
    state_file(project_dir).unlink()
    return list(stack.pids.values())


def status(project_dir: str | Path) -> dict:
    """What runs: each recorded server's PID, whether it is alive and healthy, and its URL."""
    stack = read_stack(project_dir)
    if stack is None:
        return {"running": False}
    checks = {"prefect": f"{stack.prefect_api}/health", "mlflow": f"{stack.mlflow_url}/health"}
    urls = {"prefect": stack.prefect_url, "mlflow": stack.mlflow_url}
    servers = {name: {"pid": pid, "alive": alive(pid), "healthy": healthy(checks[name]), "url": urls[name]}
               for name, pid in stack.pids.items()}
    return {"running": all(s["alive"] and s["healthy"] for s in servers.values()), "servers": servers}


def activate(project_dir: str | Path) -> Stack | None:
    """Point this process at the project's running stack (values already in the environment win)."""
    stack = read_stack(project_dir)
    if stack is None or not all(alive(pid) for pid in stack.pids.values()):
        return None
    os.environ.setdefault("PREFECT_API_URL", stack.prefect_api)
    os.environ.setdefault("MLFLOW_TRACKING_URI", stack.mlflow_url)
    return stack
