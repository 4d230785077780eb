"""What serves a project's databases, found from outside: `up` never starts a second server on a held database,
`down` stops every lasting one whoever started it and leaves a command's temporary server, a command names a
recorded server that is down.

The "servers" are real processes that do what a server does to be found: hold the database file open and listen
on a TCP port, in a session of their own (as ``polyreason up`` starts them).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from cli import stack
from cli.project_servers import project_servers

HOLDER = """
import socket, sys, time
database = open(sys.argv[1], "a")
listening = socket.socket()
listening.bind(("127.0.0.1", 0))
if sys.argv[2] == "listen":
    listening.listen()
print(listening.getsockname()[1], flush=True)
time.sleep(600)
"""


@pytest.fixture
def holders():
    started = []

    def hold(database: Path, listen: bool = True, **env: str) -> tuple[int, int]:
        database.parent.mkdir(parents=True, exist_ok=True)
        process = subprocess.Popen([sys.executable, "-c", HOLDER, str(database), "listen" if listen else "no"],
                                   stdout=subprocess.PIPE, text=True, start_new_session=True, env={**os.environ, **env})
        started.append(process)
        return process.pid, int(process.stdout.readline())

    yield hold
    for process in started:
        process.kill()
        process.wait()


def test_a_process_holding_a_database_and_listening_is_its_server(tmp_path, holders):
    pid, port = holders(tmp_path / ".prefect" / "prefect.db")
    holders(tmp_path / "mlruns" / "mlflow.db", listen=False)  # a command logging to SQLite: no server
    (found,) = project_servers(tmp_path)
    assert (found.service, found.pid, found.group, found.port, found.temporary) == ("prefect", pid, pid, port, False)
    assert project_servers(tmp_path / "elsewhere") == []


def test_up_refuses_to_start_a_second_server_on_a_held_database_naming_it(tmp_path, holders):
    pid, port = holders(tmp_path / ".prefect" / "prefect.db")
    with pytest.raises(stack.StackError) as refused:
        stack.up(tmp_path)
    assert str(refused.value) == (f"a Prefect server (pid {pid}, http://127.0.0.1:{port}) serves "
                                  f"{tmp_path / '.prefect' / 'prefect.db'}; `polyreason down --project-dir {tmp_path}` "
                                  "stops it (a second server on one database is never started)")
    assert not stack.state_file(tmp_path).exists() and psutil.pid_exists(pid)


def test_up_waits_for_a_running_commands_temporary_server(tmp_path, holders):
    holders(tmp_path / ".prefect" / "prefect.db", PREFECT__SERVER_EPHEMERAL="1")
    with pytest.raises(stack.StackError, match="a running command's temporary Prefect server .* start `polyreason "
                                               "up` once that command has ended"):
        stack.up(tmp_path)


def ended(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_down_stops_unrecorded_servers_and_leaves_a_commands_temporary_one(tmp_path, holders):
    lasting, _ = holders(tmp_path / "mlruns" / "mlflow.db")
    temporary, port = holders(tmp_path / ".prefect" / "prefect.db", PREFECT__SERVER_EPHEMERAL="1")
    stopped, left = stack.down(tmp_path)
    assert stopped == [lasting] and ended(lasting) and not ended(temporary)
    assert left == [f"a running command's temporary Prefect server (pid {temporary}, http://127.0.0.1:{port}) serves "
                    f"{tmp_path / '.prefect' / 'prefect.db'}"]


def test_a_recorded_server_that_is_down_is_named_with_the_command_that_restarts_it(tmp_path, holders, monkeypatch):
    prefect, port = holders(tmp_path / ".prefect" / "prefect.db")
    gone = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    gone.wait()
    record = {"prefect_url": f"http://127.0.0.1:{port}", "mlflow_url": "http://127.0.0.1:1",
              "pids": {"prefect": prefect, "mlflow": gone.pid}, "logs": {}}
    stack.state_file(tmp_path).parent.mkdir(parents=True)
    stack.state_file(tmp_path).write_text(json.dumps(record), encoding="utf-8")
    for name in ("PREFECT_API_URL", "MLFLOW_TRACKING_URI"):
        monkeypatch.delenv(name, raising=False)
    assert stack.stack_problems(tmp_path, None) == [
        f"the MLflow server `polyreason up` started for {tmp_path} (pid {gone.pid}, http://127.0.0.1:1) is not "
        f"running; restart it with: polyreason up --project-dir {tmp_path} (or stop the stack with polyreason down)"]
    assert stack.stack_problems(tmp_path, "sqlite:///elsewhere.db") == []  # the profile's store is used instead
    stack.activate(tmp_path)
    assert os.environ["PREFECT_API_URL"] == f"http://127.0.0.1:{port}/api" and "MLFLOW_TRACKING_URI" not in os.environ
    monkeypatch.delenv("PREFECT_API_URL")
