"""How the local stack's servers are launched and ended: ports, commands, environment, health, process groups.

Each server runs in a session of its own (``start_new_session``), so its process
group is what ``stop_pids`` ends: an MLflow server's CLI and the uvicorn it
starts together. Liveness never counts a zombie (an ended process its parent has
not reaped yet; a server re-parented to an init that reaps late stays one for a
while). Prefect's server is ``cli.prefect_app``'s (Prefect's application behind a
Host check, its own origin only, CSRF on); MLflow's is ``mlflow server`` with
``--workers 1`` and job execution off (2 processes, ~0.5 GB instead of 15 and 3.2 GB),
SQLite under ``mlruns/`` with artifacts beside it.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path


BIN = Path(sys.executable).parent
DEFAULT_PORTS = {"prefect": 4200, "mlflow": 5000}


class StackError(RuntimeError):
    """The stack could not be started (the message is one line; nothing is left running)."""


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


def group_alive(group: int) -> bool:
    """Whether a process of group ``group`` still runs (a server ``up`` started leads a session of its own; an MLflow
    server's uvicorn can outlive its leader). Zombies do not count: they have ended, only not been reaped yet."""
    import psutil

    if alive(group):
        return True
    for process in psutil.process_iter(["status"]):
        try:
            if process.info["status"] != psutil.STATUS_ZOMBIE and os.getpgid(process.pid) == group:
                return True
        except (psutil.Error, OSError):  # ended meanwhile
            continue
    return False


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a child of this process that ended is reaped; a zombie is not counted)."""
    import psutil

    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    except ChildProcessError:  # not this process's child: ask the kernel
        pass
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def mlflow_command(project: Path, port: int) -> list[str]:
    store = project / "mlruns"
    return [str(BIN / "mlflow"), "server", "--backend-store-uri", f"sqlite:///{store / 'mlflow.db'}",
            "--artifacts-destination", str(store / "artifacts"), "--host", "127.0.0.1", "--port", str(port),
            "--workers", "1"]


def prefect_command(port: int) -> list[str]:
    """Prefect's server as ``prefect server start`` serves it (API, UI, services), behind ``cli.prefect_app``."""
    from cli.prefect_app import uvicorn_command

    return uvicorn_command(sys.executable, port, "warning")


def memo_store_path(prefect_home: str | Path) -> str:
    """Where a Prefect server keeps its memo of registered blocks: in ``prefect_home``.

    Prefect 3.7 computes the default from the server settings, which have no
    home, so it is ``~/.prefect/memo_store.toml`` whatever ``PREFECT_HOME`` says;
    on a machine without ``~/.prefect`` every server start then warns that it
    cannot write there (and registers every block again next time).
    """
    return str(Path(prefect_home) / "memo_store.toml")


def server_env(project: Path, prefect_port: int) -> dict[str, str]:
    from cli.prefect_app import server_environment
    from runtime.processes.children import REPO

    return dict(os.environ, PREFECT_HOME=str(project / ".prefect"), PREFECT_SERVER_ANALYTICS_ENABLED="false",
                PREFECT_SERVER_MEMO_STORE_PATH=memo_store_path(project / ".prefect"),
                PREFECT_UI_API_URL=f"http://127.0.0.1:{prefect_port}/api", MLFLOW_SERVER_ENABLE_JOB_EXECUTION="false",
                MLFLOW_DISABLE_TELEMETRY="true", DO_NOT_TRACK="1", PREFECT__SERVER_FINAL="1",
                PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
                **server_environment(prefect_port))


def start(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a", encoding="utf-8") as handle:
        env = {key: value for key, value in env.items() if key != "PREFECT_API_URL"}
        return subprocess.Popen(command, env=env, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)


def stop_pids(pids: list[int], timeout: float = 20) -> None:
    """End process groups together: SIGTERM to every group, then SIGKILL to those left after ``timeout``."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        left = [pid for pid in pids if group_alive(pid)]
        for pid in left:
            try:
                os.killpg(pid, sig)
            except OSError:
                pass
        deadline = time.time() + timeout
        while time.time() < deadline and any(group_alive(pid) for pid in left):
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
