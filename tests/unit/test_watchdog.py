"""The watchdog's decisions against real sockets: a server that answers, one that is gone, one that hangs; a full
filesystem; MLflow's client of a local server bounded; the last line of a command the watchdog stopped."""

from __future__ import annotations

import errno
import http.server
import logging
import signal
import socket
import sys
import threading
import time

import pytest

from cli import disk_space, interrupts, watchdog
from cli.watchdog import Problem, Watched


class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's name
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"true")

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    httpd = http.server.HTTPServer(("127.0.0.1", 0), Health)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    yield httpd, Watched("MLflow", url, f"{url}/health", "`polyreason up`'s", "restart it with: polyreason up")
    httpd.shutdown()  # its thread first: a thread still serving a closed socket would serve the next one's fd
    httpd.server_close()


def test_a_server_that_answers_is_alive_and_one_that_stopped_is_dead_on_the_second_refused_poll(server):
    httpd, watched = server
    assert watchdog.poll(watched, time.monotonic()) is None
    httpd.shutdown()
    httpd.server_close()  # nothing listens on the port any more
    assert watchdog.poll(watched, time.monotonic()) is None  # one refusal is not yet death
    assert watchdog.poll(watched, time.monotonic()) == "it refuses connections: nothing listens on its port any more"


def test_a_server_that_accepts_and_never_answers_is_dead_after_the_silence(monkeypatch):
    monkeypatch.setattr(watchdog, "HEALTH_TIMEOUT_S", 0.2)
    with socket.socket() as hung:
        hung.bind(("127.0.0.1", 0))
        hung.listen()  # the kernel accepts connections; nobody reads or answers
        url = f"http://127.0.0.1:{hung.getsockname()[1]}"
        watched = Watched("Prefect", url, f"{url}/api/health", "this command's temporary one", "run it again")
        assert watchdog.poll(watched, watched.answered_at + 1.0) is None
        reason = watchdog.poll(watched, watched.answered_at + watchdog.SILENT_S + 1)
    assert reason is not None and reason.startswith("it has not answered for 31 s")


def test_a_server_whose_process_ended_is_dead_at_once(server):
    _, watched = server
    watched.running = lambda: False
    assert watchdog.poll(watched, time.monotonic()) == "its process has ended"


def test_a_check_names_the_dead_server_with_its_origin_url_pid_and_way_back(server):
    httpd, watched = server
    watched.pid = 4242
    httpd.shutdown()
    httpd.server_close()
    assert watchdog.check([watched], []) is None
    problem = watchdog.check([watched], [])
    assert problem.service == "MLflow" and problem.remedy == "restart it with: polyreason up"
    assert problem.what == (f"the MLflow server died (`polyreason up`'s, {watched.url}, pid 4242: it refuses "
                            "connections: nothing listens on its port any more)")


def test_a_filesystem_below_the_floor_stops_the_run_naming_its_mount_and_path(tmp_path, monkeypatch):
    monkeypatch.setattr(disk_space, "RUN_FLOOR", 2**62)  # more than any disk has free
    problem = watchdog.check([], [tmp_path])
    mount = disk_space.mount_point(tmp_path)
    assert problem.service is None and problem.what.startswith(f"no space left on {mount} ({tmp_path}): ")
    assert watchdog.check([], [tmp_path / "not" / "yet"]) is not None  # measured on the nearest existing parent
    monkeypatch.setattr(disk_space, "RUN_FLOOR", 0)
    assert watchdog.check([], [tmp_path]) is None


def test_a_command_below_the_start_floor_is_refused_naming_what_a_run_needs(tmp_path, monkeypatch):
    monkeypatch.setattr(disk_space, "START_FLOOR", 2**60)  # 2**60 B = 2**30 GB
    (problem,) = disk_space.space_problems([tmp_path, tmp_path / "sub"])  # one line per filesystem
    assert problem.startswith(f"no space left on {disk_space.mount_point(tmp_path)} ({tmp_path}): ")
    assert problem.endswith("a run needs at least 1073741824.0 GB free")


def test_an_enospc_anywhere_in_the_chain_is_named_with_its_file():
    try:
        try:
            raise OSError(errno.ENOSPC, "No space left on device", "/p/artifacts/x/generations.jsonl.partial.1")
        except OSError as full:
            raise RuntimeError("generate task failed") from full
    except RuntimeError as error:
        assert disk_space.no_space_error(error) == "no space left on device (/p/artifacts/x/generations.jsonl.partial.1)"
        assert watchdog.explain(error).what == "no space left on device (/p/artifacts/x/generations.jsonl.partial.1)"
    assert disk_space.no_space_error(OSError(errno.EACCES, "Permission denied")) is None
    assert watchdog.explain(ValueError("a bad row")) is None


@pytest.mark.parametrize("environ, bounded", [
    ({"MLFLOW_TRACKING_URI": "http://127.0.0.1:5000", "PREFECT_API_URL": "http://127.0.0.1:4200/api"},
     {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2"}),
    ({}, {}),  # a temporary Prefect server; MLflow on SQLite has no client
    ({"MLFLOW_TRACKING_URI": "https://mlflow.example.org", "PREFECT_API_URL": "https://api.prefect.cloud/api"}, {}),
    ({"MLFLOW_TRACKING_URI": "http://localhost:5000", "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "5"},
     {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "5"}),  # what the user set wins
])
def test_only_mlflows_client_of_a_local_server_gets_short_timeouts_and_two_retries(environ, bounded):
    given = dict(environ)
    watchdog.bound_local_clients(given)
    assert given.get("MLFLOW_HTTP_REQUEST_MAX_RETRIES") == bounded.get("MLFLOW_HTTP_REQUEST_MAX_RETRIES")
    assert ("MLFLOW_HTTP_REQUEST_TIMEOUT" in given) == ("MLFLOW_HTTP_REQUEST_MAX_RETRIES" in bounded)
    assert not [key for key in given if key.startswith("PREFECT_") and key not in environ]  # Prefect's own retries


_CONNECTS: list | None = None


def _record_connects(event: str, args: tuple) -> None:
    if event == "socket.connect" and _CONNECTS is not None:
        _CONNECTS.append(args[1])


sys.addaudithook(_record_connects)  # audit hooks cannot be removed; it records only while a test asks


@pytest.fixture
def connects():
    """Every address a socket of this process tries to connect to while the test runs (Python's ``socket.connect``
    audit event: what really ran, not a clock)."""
    global _CONNECTS
    _CONNECTS = []
    yield _CONNECTS
    _CONNECTS = None


@pytest.fixture
def fresh_interrupt_state(monkeypatch):
    """A clean interrupt state; the logging the watchdog's stop silences is put back afterwards."""
    monkeypatch.setattr(interrupts, "STATE", interrupts._State())
    loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    levels = [(h, h.level) for logger in loggers for h in getattr(logger, "handlers", [])]
    yield interrupts.STATE
    logging.disable(logging.NOTSET)
    if interrupts.STATE.deadline is not None:
        interrupts.STATE.deadline.cancel()
    for handler, level in levels:
        handler.setLevel(level)


def test_a_command_closed_for_a_dead_mlflow_server_leaves_its_runs_to_the_next_command(fresh_interrupt_state,
                                                                                     monkeypatch, connects):
    from runtime import tracking

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    dead = f"http://127.0.0.1:{port}"
    run = tracking.RunRef(dead, "0123456789abcdef", "1")
    monkeypatch.setattr(tracking, "_OPEN", {run.run_id: run})  # only this run: another test in this process
    monkeypatch.setattr(tracking, "KILLED", [])  # may have left runs open or closed
    monkeypatch.setattr("sys.argv", ["polyreason", "evaluate", "p.yaml"])
    line, code = interrupts.close_for(Problem("the MLflow server died (x)", "MLflow", "restart it with: polyreason up"))
    # no call to the server that is gone (a Prefect server an earlier test in this process left configured may
    # be told about the closing; that is not this server)
    assert [address for address in connects if address[1] == port] == []
    assert code == interrupts.STOPPED_CODE == 1 and tracking.open_runs() == [run]
    assert line == ("polyreason: the MLflow server died (x); kept every finished step (cached); MLflow run(s) "
                    "01234567 stay RUNNING until the next command in this project marks them KILLED; restart it "
                    "with: polyreason up, then resume with: polyreason evaluate p.yaml")
    assert interrupts.finish() == ("", 1)  # the deadline's later call exits with the same code


def test_the_watchdogs_signal_after_the_command_closed_itself_is_ignored(fresh_interrupt_state):
    fresh_interrupt_state.own_signal, fresh_interrupt_state.closing = True, True
    interrupts._handler(signal.SIGINT, None)  # returns instead of raising Interrupted
    assert fresh_interrupt_state.signum is None and not fresh_interrupt_state.own_signal


def test_a_call_that_fails_before_the_watchdogs_next_poll_is_put_down_to_the_dead_server(server):
    httpd, watched = server
    httpd.shutdown()
    httpd.server_close()
    with pytest.raises(RuntimeError) as failed:
        with watchdog.watching([watched], []):  # the block ends before the watchdog's first poll
            raise RuntimeError("Unable to acquire concurrency slots on ['tag:polyreason']")
    problem = watchdog.explain(failed.value)
    assert problem.service == "MLflow" and problem.what.endswith("it refuses connections: nothing listens on its "
                                                                 "port any more)")
    assert watchdog.ACTIVE == [] and watchdog.explain(failed.value) is None  # asked once, then forgotten
