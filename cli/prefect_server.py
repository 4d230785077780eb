"""The Prefect API a command talks to: a configured server, or a temporary one this process owns.

Without ``PREFECT_API_URL`` Prefect starts a temporary server on first use
(``SubprocessASGIServer``: uvicorn in a child process). Started that way it
shares the terminal's process group, so Ctrl-C stops it together with the CLI,
whose crash reporting then retries the dead server for minutes; and a CLI killed
with ``kill -9`` leaves it running. ``start_temporary_server`` starts the same
server before any flow, as an instance of a subclass that Prefect's own lookups
then find (the class keeps one instance per port): launched through
``runtime.process.spawn`` in its own process group under a lifeline, Ctrl-C
reaches only the CLI, which reports the interrupt and stops the server last,
and a killed CLI takes the server down with it. Two commands starting at once
in a fresh project create the server's database one after the other (a file
lock on ``.prefect/server-start.lock``).

``require_server``: ``serve``, ``deploy`` and ``worker`` hand runs to a server
that must outlive them; without a reachable one they refuse to start and say
how to start one.
"""

from __future__ import annotations

import fcntl
import os
import sys
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
    from cli.stack import health_problem

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
    """``SubprocessASGIServer`` whose uvicorn runs in its own process group under a lifeline."""
    from prefect.server.api.server import SubprocessASGIServer

    class OwnedServer(SubprocessASGIServer):
        def _run_uvicorn_command(self):
            import prefect
            from prefect.settings import get_current_settings

            from runtime.process import spawn

            command = [sys.executable, "-m", "uvicorn", "--app-dir", str(prefect.__module_path__.parent), "--factory",
                       "prefect.server.api.server:create_app", "--host", "127.0.0.1", "--port", str(self.port),
                       "--log-level", "error", "--lifespan", "on"]
            env = {**os.environ, "PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1",
                   "PREFECT__SERVER_FINAL": "1", **get_current_settings().to_environment_variables(exclude_unset=True)}
            return spawn(command, "temporary Prefect server", own_group=True, env=env)

        def stop(self) -> None:
            from runtime.process import end_process_tree

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
