"""A command's Prefect client rides out a busy local server.

Prefect's server on SQLite answers a request that met a locked database with 503 "retry later"; a CPU-starved
machine can give several such answers in a row. The client a command runs with (its environment after
``cli.watchdog.bound_local_clients``) is a real Prefect client in a fresh process, against a server on 127.0.0.1
that answers 503 (``Retry-After: 0``, so the test does not wait out the back-off) a given number of times, then
200. What the oracle counts is the requests the server really received.
"""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading

import pytest

from cli import watchdog
from tests.helpers.cockpit import REPO

BUSY_ANSWERS = 3

ASK_HEALTH = """
from prefect.client.orchestration import get_client
with get_client(sync_client=True) as client:
    problem = client.api_healthcheck()
print("healthy" if problem is None else f"failed: {type(problem).__name__}")
"""


class BusyThenHealthy(http.server.BaseHTTPRequestHandler):
    busy_left = 0
    seen: list[str] = []

    def do_GET(self):  # noqa: N802 - http.server's name
        type(self).seen.append(self.path)
        if type(self).busy_left > 0:
            type(self).busy_left -= 1
            self.send_response(503)
            self.send_header("Retry-After", "0")
            self.end_headers()
            self.wfile.write(b'{"exception_message": "Service Unavailable"}')
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b"true")

    def log_message(self, *args):
        pass


@pytest.fixture
def busy_server():
    BusyThenHealthy.busy_left, BusyThenHealthy.seen = BUSY_ANSWERS, []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), BusyThenHealthy)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/api"
    server.shutdown()
    server.server_close()


def ask_health(api_url: str, tmp_path, **user_settings: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(PREFECT_API_URL=api_url, PREFECT_HOME=str(tmp_path / "prefect"), **user_settings)
    watchdog.bound_local_clients(env)  # what ``cli.environment.configure`` does before Prefect is imported
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, "-c", ASK_HEALTH], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


def test_a_commands_prefect_client_rides_out_three_busy_answers(busy_server, tmp_path):
    assert ask_health(busy_server, tmp_path) == "healthy"
    assert BusyThenHealthy.seen == ["/api/health"] * (BUSY_ANSWERS + 1)


def test_two_retries_give_up_on_the_third_busy_answer(busy_server, tmp_path):
    """The count is what carries it: a user's own ``PREFECT_CLIENT_MAX_RETRIES=2`` wins, and then fails here."""
    assert ask_health(busy_server, tmp_path, PREFECT_CLIENT_MAX_RETRIES="2") == "failed: PrefectHTTPStatusError"
    assert BusyThenHealthy.seen == ["/api/health"] * 3
