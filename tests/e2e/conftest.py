"""Real servers for end-to-end tests, started on 127.0.0.1 by the tests themselves.

``prefect_server``: ``prefect server start`` in its own temporary home; flows in
the test run against it through ``PREFECT_API_URL``. ``mlflow_server``:
``mlflow server`` over a temporary SQLite store, lean (``--workers 1``, job
execution off); yields its ``http://`` tracking URI.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_healthy(url: str, process: subprocess.Popen, log: Path, timeout: float = 240) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited early ({process.returncode}); log:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    process.terminate()
    raise RuntimeError(f"server not healthy at {url} after {timeout}s; log:\n{log.read_text()[-3000:]}")


def start(command: list[str], env: dict, log: Path) -> subprocess.Popen:
    handle = log.open("w")
    return subprocess.Popen(command, env=env, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()


@pytest.fixture(scope="session")
def prefect_server(tmp_path_factory):
    """A real Prefect server; the test session's flows report to it."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    home = tmp_path_factory.mktemp("prefect-server")
    port = free_port()
    env = dict(os.environ, PREFECT_HOME=str(home), PREFECT_SERVER_ANALYTICS_ENABLED="false")
    env.pop("PREFECT_API_URL", None)
    log = home / "server.log"
    process = start([str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)], env, log)
    url = f"http://127.0.0.1:{port}/api"
    try:
        wait_healthy(f"{url}/health", process, log)
        with temporary_settings(updates={PREFECT_API_URL: url}):
            yield url
    finally:
        stop(process)


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory):
    """A real MLflow tracking server over SQLite; yields its http URI."""
    root = tmp_path_factory.mktemp("mlflow-server")
    port = free_port()
    env = dict(os.environ, MLFLOW_SERVER_ENABLE_JOB_EXECUTION="false", MLFLOW_DISABLE_TELEMETRY="true")
    log = root / "server.log"
    command = [
        str(BIN / "mlflow"), "server",
        "--backend-store-uri", f"sqlite:///{root / 'mlflow.db'}",
        "--artifacts-destination", str(root / "artifacts"),
        "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
    ]
    process = start(command, env, log)
    uri = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(f"{uri}/health", process, log)
        yield uri
    finally:
        stop(process)


@pytest.fixture
def shots(request):
    """Save screenshots of a browser test as test artifacts (``POLYREASON_TEST_ARTIFACTS``, default test-artifacts/)."""
    folder = Path(os.environ.get("POLYREASON_TEST_ARTIFACTS", Path(__file__).resolve().parents[2] / "test-artifacts"))
    folder = folder / request.node.name
    folder.mkdir(parents=True, exist_ok=True)

    def save(page, name: str) -> Path:
        path = folder / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return save
