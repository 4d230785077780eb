"""The Prefect API a command talks to: a configured server, or a temporary one this process owns.

Without ``PREFECT_API_URL`` Prefect starts a temporary server on first use
(``SubprocessASGIServer``: uvicorn in a child process). Started that way it
shares the terminal's process group, so Ctrl-C stops it together with the CLI,
whose crash reporting then retries the dead server for minutes; and a CLI killed
with ``kill -9`` leaves it running. ``start_temporary_server`` starts the same
server before any flow, as an instance of a subclass that Prefect's own lookups
then find (the class keeps one instance per port): launched through
``runtime.processes.children.spawn`` in its own process group under a lifeline, Ctrl-C
reaches only the CLI, which reports the interrupt and stops the server last,
and a killed CLI takes the server down with it. Two commands starting at once
in a fresh project create the server's database one after the other (a file
lock on ``.prefect/server-start.lock``).

The server is Prefect's application behind a Host check, answering only its own
origin, with CSRF protection on (``cli.prefect_app``); its start fails as soon
as its process ends, naming the exit code.

``require_server``: ``serve``, ``deploy`` and ``worker`` hand runs to a server
that must outlive them; without a reachable one they refuse to start and say
how to start one.
"""

from __future__ import annotations

import atexit
import fcntl
import os
import sys
import time
from pathlib import Path

from cli.preflight import Refused

HEALTH_TIMEOUT_S = 3.0
START_SERVER = ("run `polyreason up` to start one (or `prefect server start`, then "
                "export PREFECT_API_URL=http://127.0.0.1:4200/api)")


def configured_api_url() -> str | None:
    """``PREFECT_API_URL`` (set by the user, or by ``cli.environment.configure`` for the project's running stack)."""
    if os.environ.get("PREFECT_API_URL"):
        return os.environ["PREFECT_API_URL"]
    from prefect.settings import PREFECT_API_URL

    return PREFECT_API_URL.value() or None


def healthy(api_url: str, timeout_s: float = HEALTH_TIMEOUT_S) -> str | None:
    """Why ``<api_url>/health`` does not answer 200 within ``timeout_s``, or ``None`` when it does."""
    from cli.stack_launch import health_problem

    return health_problem(f"{api_url.rstrip('/')}/health", timeout_s)


def require_server(command: str) -> str:
    """The configured server's API URL; ``Refused`` (naming it, saying how to start one) when there is none."""
    url = configured_api_url()
    if url is None:
        raise Refused([f"`polyreason {command}` needs a running Prefect server that outlives it; {START_SERVER}"])
    reason = healthy(url)
    if reason:
        raise Refused([f"`polyreason {command}`: the Prefect server at {url} is not reachable ({reason}); "
                       f"{START_SERVER}"])
    return url


def check_configured_server() -> None:
    """A configured server must answer (else a run would retry it for minutes); a temporary one is ours to start."""
    url = configured_api_url()
    reason = healthy(url) if url else None
    if reason:
        raise Refused([f"PREFECT_API_URL: the Prefect server at {url} is not reachable ({reason}); run "
                       "`polyreason up` to start it, or unset PREFECT_API_URL to use a temporary server"])


def owned_server_class():
    """``SubprocessASGIServer`` whose uvicorn runs in its own process group under a lifeline, closed to other
    origins (``cli.prefect_app``), and whose start fails as soon as its process ends."""
    from prefect.server.api.server import SubprocessASGIServer

    class OwnedServer(SubprocessASGIServer):
        def _run_uvicorn_command(self):
            from prefect.settings import get_current_settings

            from cli.prefect_app import server_environment, uvicorn_command
            from runtime.processes.children import spawn

            env = {**os.environ, "PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1",
                   "PREFECT__SERVER_FINAL": "1", **get_current_settings().to_environment_variables(exclude_unset=True),
                   **server_environment(self.port)}
            return spawn(uvicorn_command(sys.executable, self.port, "error"), "temporary Prefect server",
                         own_group=True, env=env)

        def start(self, timeout: int | None = None) -> None:
            """Start and wait for ``/health``; Prefect's own wait would go on for its whole timeout (180 s here)
            after the process ended (a full disk, a database it cannot open)."""
            from prefect.settings import PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS

            if self.running:
                return
            self.port = self.port or self.find_available_port()
            self.running = True
            self.server_process = self._run_uvicorn_command()
            atexit.register(self.stop)
            deadline = time.monotonic() + (timeout or PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value())
            while healthy(self.api_url, timeout_s=2.0) is not None:
                code = self.server_process.poll()
                if code is not None or time.monotonic() > deadline:
                    self.running = False
                    what = f"exited during start-up (exit {code})" if code is not None else "did not answer in time"
                    raise RuntimeError(f"the temporary Prefect server {what}; its errors are above")
                time.sleep(0.1)

        def stop(self) -> None:
            from runtime.processes.children import end_process_tree

            process = self.server_process
            super().stop()
            if process is not None:
                end_process_tree(process, grace_s=2.0)

    return OwnedServer


def start_temporary_server(prefect_home: Path):
    """Start this process's temporary server now (from the main thread) unless a server is configured."""
    if configured_api_url() is not None:
        return None
    server = owned_server_class()()
    prefect_home.mkdir(parents=True, exist_ok=True)
    with open(prefect_home / "server-start.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a fresh database is migrated by one server at a time
        server.start()
    return server


def stop_temporary_server() -> None:
    """Stop the temporary server if this process started one (idempotent)."""
    from prefect.server.api.server import SubprocessASGIServer

    server = SubprocessASGIServer._instances.get(None)
    if server is not None and server.running:
        server.stop()
