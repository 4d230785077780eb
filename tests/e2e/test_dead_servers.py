"""The local stack under a running command: closed to other web pages, a server killed with SIGKILL mid-evaluation
named within seconds with the generated rows kept, `up` restarting only what died, the next evaluation going on
from the kept rows, and `down` stopping what serves the project whoever recorded it.

The real ``polyreason`` command with a fake backend that takes its time (``tests.helpers.slow_cli``), real
``polyreason up`` servers; what serves the project's databases is read from outside (psutil: processes that hold a
database open and listen), requests are raw HTTP. The tests run in order on one stack.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import pytest

from tests.e2e.test_robustness import environment, evaluate, rows_of, write_project
from tests.helpers.cockpit import polyreason

pytestmark = pytest.mark.slow

EXIT_WITHIN_S = 30


def listening_holders(database: Path) -> list[int]:
    """PIDs of the processes that hold ``database`` open and listen on a TCP port (the servers of it)."""
    pids = []
    for process in psutil.process_iter(["pid"]):
        try:
            if any(f.path == str(database) for f in process.open_files()) and any(
                    c.status == psutil.CONN_LISTEN for c in process.net_connections("tcp")):
                pids.append(process.pid)
        except psutil.Error:
            continue
    return pids


def state(root: Path) -> dict:
    return json.loads((root / ".polyreason" / "stack.json").read_text(encoding="utf-8"))


def request(url: str, method: str = "GET", headers: dict | None = None, body: bytes | None = None):
    """(status, headers) of a raw request; an HTTP error status is an answer too."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, body, headers or {}, method=method), timeout=10) as got:
            return got.status, dict(got.headers)
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("dead-servers")
    write_project(root, questions=40, batch_size=2)  # 80 prompts x 2 samples, 40 slow generate calls
    started = polyreason("up", "--project-dir", str(root), "--prefect-port", "0", "--mlflow-port", "0", timeout=300)
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        yield root
    finally:
        polyreason("down", "--project-dir", str(root), timeout=120)


def journal_rows(root: Path, pid: int | str = "*") -> set[tuple[int, int]]:
    """The (prompt, sample) rows of the generation journals (of process ``pid``)."""
    found = set()
    for path in (root / "artifacts" / "generation").glob(f"*/generations.jsonl.partial.{pid}"):
        found |= set(rows_of(str(path)))
    return found


def communicate(process, timeout: float) -> tuple[str, str]:
    """The command's output once it ends; after ``timeout`` it is killed (with what it started) and the test fails."""
    try:
        return process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        raise AssertionError(f"still running {timeout} s later; stderr ends:\n{process.communicate()[1][-3000:]}") \
            from None


def evaluate_then_kill(root: Path, service: str) -> tuple[str, float, set]:
    """Start an evaluation, SIGKILL the ``service`` server of the stack once it has generated rows of its own; its
    stderr, how long it took to exit after the kill, and the journal rows there were at the kill."""
    before = len(journal_rows(root))
    process = evaluate(root, environment(delay_s=0.5))
    deadline = time.monotonic() + 240
    while len(journal_rows(root, process.pid)) <= before:
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()[1][-4000:]
        time.sleep(0.2)
    os.killpg(state(root)["pids"][service], signal.SIGKILL)
    killed = time.monotonic()
    _, err = communicate(process, timeout=90)
    took = time.monotonic() - killed
    assert process.returncode == 1, err[-4000:]
    return err, took, journal_rows(root, process.pid)


def test_up_prefect_answers_only_its_own_origin_and_host_and_wants_a_csrf_token(project):
    prefect, mlflow = state(project)["prefect_url"], state(project)["mlflow_url"]
    preflight = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"}
    status, headers = request(f"{prefect}/api/flow_runs/filter", "OPTIONS", {"Origin": "http://evil.example", **preflight})
    assert status == 400 and "access-control-allow-origin" not in {k.lower() for k in headers}
    status, headers = request(f"{prefect}/api/flow_runs/filter", "OPTIONS", {"Origin": prefect, **preflight})
    assert status == 200 and headers.get("access-control-allow-origin") == prefect  # its own UI still works
    assert request(f"{prefect}/api/health", headers={"Host": "evil.example"})[0] == 400  # a rebound DNS name
    variable = json.dumps({"name": "planted", "value": "1"}).encode()
    json_type = {"Content-Type": "application/json"}
    assert request(f"{prefect}/api/variables/", "POST", json_type, variable)[0] == 403  # no CSRF token
    with urllib.request.urlopen(f"{prefect}/api/csrf-token?client=test-client", timeout=10) as got:
        token = json.loads(got.read())["token"]
    signed = {**json_type, "Prefect-Csrf-Token": token, "Prefect-Csrf-Client": "test-client"}
    assert request(f"{prefect}/api/variables/", "POST", signed, variable)[0] == 201  # Prefect's clients do this
    status, _ = request(f"{mlflow}/api/2.0/mlflow/experiments/search", "OPTIONS", {"Origin": "http://evil.example",
                                                                                    **preflight})
    assert status == 400  # MLflow's server refuses the same requests, as it did
    assert request(f"{mlflow}/api/2.0/mlflow/experiments/search?max_results=1", headers={"Host": "evil.example"})[0] == 403


def test_a_killed_mlflow_server_ends_the_evaluation_in_seconds_and_up_restarts_only_it(project):
    prefect_pid = state(project)["pids"]["prefect"]
    err, took, kept = evaluate_then_kill(project, "mlflow")
    last = err.strip().splitlines()[-1]
    assert took < EXIT_WITHIN_S, err[-4000:]
    assert last.startswith("polyreason: the MLflow server died (`polyreason up`'s"), err[-4000:]
    assert "generated rows kept" in last and f"restart it with: polyreason up --project-dir {project}" in last
    assert kept and journal_rows(project) == kept  # the finished rows stay for the re-run

    restarted = polyreason("up", "--project-dir", str(project), timeout=300)
    assert restarted.returncode == 0, restarted.stderr
    assert state(project)["pids"]["prefect"] == prefect_pid  # the live Prefect server is kept, not doubled
    assert listening_holders(project / ".prefect" / "prefect.db") == [prefect_pid]
    assert len(listening_holders(project / "mlruns" / "mlflow.db")) == 1


def test_a_killed_prefect_server_ends_the_evaluation_in_seconds_which_had_resumed(project):
    earlier = journal_rows(project)
    err, took, kept = evaluate_then_kill(project, "prefect")
    last = err.strip().splitlines()[-1]
    assert took < EXIT_WITHIN_S, err[-4000:]
    assert last.startswith("polyreason: the Prefect server died (`polyreason up`'s"), err[-4000:]
    assert "generated rows kept" in last and "marked KILLED" in last  # MLflow is alive: its run is closed
    assert earlier and earlier < kept == journal_rows(project)  # it went on from the killed run's rows

    from mlflow import MlflowClient

    client = MlflowClient(state(project)["mlflow_url"])
    experiment = client.get_experiment_by_name("polyreason")
    statuses = [r.info.status for r in client.search_runs([experiment.experiment_id],
                                                          order_by=["attributes.start_time ASC"])]
    assert statuses == ["KILLED", "KILLED"]  # the first closed by the second's start, the second by its own end
    with sqlite3.connect(project / ".prefect" / "prefect.db") as db:
        states = [row[0] for row in db.execute("SELECT state_type FROM flow_run ORDER BY start_time")]
    assert states[0] == "CRASHED"  # marked by the first command itself (Prefect was alive)


def test_down_stops_the_projects_servers_without_their_record(project):
    (project / ".polyreason" / "stack.json").unlink()  # lost, or overwritten by another start
    stopped = polyreason("down", "--project-dir", str(project), timeout=120)
    assert stopped.returncode == 0, stopped.stderr
    deadline = time.monotonic() + 20
    while listening_holders(project / ".prefect" / "prefect.db") + listening_holders(project / "mlruns" / "mlflow.db"):
        assert time.monotonic() < deadline, "a server of the project outlived polyreason down"
        time.sleep(0.5)
