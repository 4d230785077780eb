"""End-to-end: the cockpit's long-running commands leave nothing behind and say what they did when stopped.

* ``polyreason worker`` that gets SIGTERM ends its ``prefect worker`` (and what that started) and exits 143
  with its own line, not the recipe's "resume with";
* ``polyreason up`` interrupted while its servers start stops both (and MLflow's uvicorn) and removes the
  record; one whose server fails during start-up stops the other and says so in one line.

Processes are observed from outside (psutil, by PID), with a real Prefect server for the worker.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from tests.helpers.cockpit import POLYREASON, REPO, cli_env, wait_for

pytestmark = pytest.mark.slow


def descendants(pid: int) -> list[psutil.Process]:
    return psutil.Process(pid).children(recursive=True)


def running(processes: list[psutil.Process]) -> list[psutil.Process]:
    """Those still running (a zombie has ended; its parent has only not reaped it yet)."""
    left = []
    for process in processes:
        try:
            if process.status() != psutil.STATUS_ZOMBIE:
                left.append(process)
        except psutil.NoSuchProcess:
            pass
    return left


def spawn_cli(args: list[str], log: Path, **env: str) -> subprocess.Popen:
    return subprocess.Popen([*POLYREASON, *args], cwd=REPO, env=cli_env(**env), stdout=log.open("w"),
                            stderr=subprocess.STDOUT, start_new_session=True)


def test_sigterm_to_the_worker_ends_its_prefect_worker_and_says_so(prefect_server, tmp_path):
    log = tmp_path / "worker.log"
    worker = spawn_cli(["worker", "--pool", "sigterm-pool", "--project-dir", str(tmp_path)], log,
                       PREFECT_API_URL=prefect_server)
    try:
        wait_for(lambda: "started!" in log.read_text(), 120, "the prefect worker to start")
        below = descendants(worker.pid)
        assert any("worker" in " ".join(p.cmdline()) for p in below), [p.cmdline() for p in below]
        os.kill(worker.pid, signal.SIGTERM)  # the process alone, as a service manager does
        assert worker.wait(timeout=30) == 128 + signal.SIGTERM
        wait_for(lambda: not running(below), 10, "the worker's children to end")
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
    text = log.read_text()
    assert "polyreason worker: stopped by SIGTERM; ended prefect worker for pool sigterm-pool" in text, text[-2000:]
    assert "resume with" not in text


def start_up(project: Path, log: Path, **env: str) -> subprocess.Popen:
    return spawn_cli(["up", "--project-dir", str(project), "--prefect-port", "0", "--mlflow-port", "0"], log, **env)


def servers_started(project: Path, up: subprocess.Popen) -> list[psutil.Process]:
    """The server processes ``up`` spawned (and theirs), once both are running and recorded."""
    record = project / ".polyreason" / "stack.json"
    wait_for(lambda: record.is_file() and len(descendants(up.pid)) >= 2, 60, "up to spawn both servers")
    time.sleep(2)  # MLflow starts its uvicorn
    return descendants(up.pid)


def test_up_interrupted_while_starting_stops_both_servers_and_leaves_no_record(tmp_path):
    project, log = tmp_path / "project", tmp_path / "up.log"
    up = start_up(project, log)
    try:
        servers = servers_started(project, up)
        up.send_signal(signal.SIGINT)  # Ctrl-C: the servers run in sessions of their own
        assert up.wait(timeout=30) == 128 + signal.SIGINT
    finally:
        if up.poll() is None:
            os.killpg(up.pid, signal.SIGKILL)
    assert not running(servers), [p.cmdline() for p in running(servers)]
    assert not (project / ".polyreason" / "stack.json").exists()
    last = log.read_text().strip().splitlines()[-1]
    assert last.startswith("polyreason up: interrupted by SIGINT; stopped what it had started (mlflow (pid")
    assert last.endswith("nothing is left running") and "resume with" not in last


def test_up_whose_server_fails_to_start_stops_the_other_in_one_line(tmp_path):
    project, log = tmp_path / "project", tmp_path / "up.log"
    up = start_up(project, log, PREFECT_SERVER_DATABASE_CONNECTION_URL=f"sqlite+aiosqlite:///{tmp_path}/no/such/dir/p.db")
    try:
        assert up.wait(timeout=180) == 2
    finally:
        if up.poll() is None:
            os.killpg(up.pid, signal.SIGKILL)
    lines = log.read_text().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: prefect server exited during start-up"), lines
    assert "stopped what it had started (mlflow (pid" in lines[0]
    pids = [int(pid) for pid in __import__("re").findall(r"\(pid (\d+)\)", lines[0])]
    assert len(pids) == 2 and not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"
                                      for pid in pids)
    assert not (project / ".polyreason" / "stack.json").exists()
