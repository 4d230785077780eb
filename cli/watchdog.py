"""A watchdog on the local stack: a command learns within seconds that a server it uses died or its disk filled.

The reachability checks before a run (``cli.preflight``, ``cli.prefect_server``)
say nothing about a server that dies during it. The clients then retry for
minutes: MLflow's HTTP client seven times with exponential backoff (about four
minutes of silence, then a retry line per request), Prefect's five times per
request, and a task whose concurrency slot cannot be acquired fails while the
engine keeps retrying to report it. Two things bound that here:

* ``bound_local_clients``: for the project's own MLflow server (a URL on the
  loopback interface) the client gets short timeouts and two retries, through its
  own variables (``MLFLOW_HTTP_REQUEST_MAX_RETRIES``/``_BACKOFF_FACTOR``/``_TIMEOUT``),
  read at each request; a remote server keeps MLflow's defaults. Prefect's client
  keeps its own (five retries, 60 s): a Prefect server on SQLite answers a request
  that met a locked database with 503 "retry later" after waiting up to 60 s for
  the lock, and its client's retries are what carry a busy moment (with two, the
  third busy answer in a row fails the flow run); a dead Prefect server is the
  watchdog's to name, not the retry count's;
* ``watching``: while a command runs its flows, a thread asks each local server's
  health endpoint every ``POLL_S`` (and whether its process still runs, when its
  PID is known) and looks at the free space where the project's state lives.
  A server that refuses connections on ``REFUSED_POLLS`` polls in a row (or whose
  process ended), one that has not answered for ``SILENT_S``, or a filesystem
  below ``disk_space.RUN_FLOOR`` stops the command through ``cli.interrupts``,
  as Ctrl-C would (generation journals and checkpoints kept, the runs of the
  server still alive marked), with one line naming what failed and the command
  that restarts it. ``explain`` gives the same line when a call fails first.
"""

from __future__ import annotations

import os
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from cli import disk_space
from cli.interrupts import Problem  # what the watchdog reports; interrupts closes the command for it

POLL_S = 1.0
REFUSED_POLLS = 2  # refused this many polls in a row: nothing listens any more
SILENT_S = 30.0  # no answer at all for this long: a hung server
HEALTH_TIMEOUT_S = 3.0
LOOPBACK = ("127.0.0.1", "localhost", "::1")
MLFLOW_CLIENT = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2", "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
                 "MLFLOW_HTTP_REQUEST_TIMEOUT": "30"}
DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback only: never through a proxy


def is_local(url: str | None) -> bool:
    """Whether ``url`` is an HTTP server on this machine's loopback interface.

    >>> is_local("http://127.0.0.1:5000"), is_local("https://mlflow.example.org"), is_local("sqlite:///m.db")
    (True, False, False)
    """
    if not url or not url.startswith(("http://", "https://")):
        return False
    host = urlsplit(url).hostname or ""
    return host in LOOPBACK or host.startswith("127.")


def bound_local_clients(environ: dict | None = None) -> None:
    """Short timeouts and two retries for MLflow's client of a local server (values already set win).

    Prefect's client settings are left as Prefect sets them (see the module's docstring).
    """
    environ = os.environ if environ is None else environ
    bound_mlflow_client(environ.get("MLFLOW_TRACKING_URI"), environ)


def bound_mlflow_client(uri: str | None, environ: dict | None = None) -> None:
    """Short timeouts and two retries for MLflow's client when ``uri`` is a local server."""
    environ = os.environ if environ is None else environ
    if is_local(uri):
        for key, value in MLFLOW_CLIENT.items():
            environ.setdefault(key, value)


@dataclass
class Watched:
    """A server a command uses: what it is (``name``: MLflow or Prefect), where, and how it is restarted."""

    name: str
    url: str  # as shown in the line (credentials redacted)
    health_url: str
    origin: str  # whose it is: "`polyreason up`'s", "this command's temporary one" …
    restart: str  # how to bring it back, e.g. "restart it with: polyreason up --project-dir /p"
    pid: int | None = None
    running: Callable[[], bool] | None = None  # whether its process still runs, where this command knows it
    refused: int = 0
    answered_at: float = field(default_factory=time.monotonic)

    def describe(self) -> str:
        """``polyreason up``'s, http://127.0.0.1:5000, pid 12"""
        return ", ".join([self.origin, self.url] + ([f"pid {self.pid}"] if self.pid else []))


def poll(server: Watched, now: float) -> str | None:
    """Why ``server`` is dead after this poll (a reason for the line), or ``None`` while it is not."""
    if server.running is not None and not server.running():
        return "its process has ended"
    try:
        with DIRECT.open(server.health_url, timeout=HEALTH_TIMEOUT_S):
            server.refused, server.answered_at = 0, now
            return None
    except urllib.error.HTTPError:  # it answers, if not healthily: not dead (a full disk is watched apart)
        server.refused, server.answered_at = 0, now
        return None
    except OSError as error:
        refused = isinstance(getattr(error, "reason", error), ConnectionRefusedError)
    server.refused = server.refused + 1 if refused else 0
    if server.refused >= REFUSED_POLLS:
        return "it refuses connections: nothing listens on its port any more"
    if now - server.answered_at >= SILENT_S:
        return f"it has not answered for {now - server.answered_at:.0f} s"
    return None


def check(servers: list[Watched], paths: list[Path]) -> Problem | None:
    """One round of the watchdog's checks."""
    now = time.monotonic()
    for server in servers:
        reason = poll(server, now)
        if reason:
            return Problem(f"the {server.name} server died ({server.describe()}: {reason})", server.name,
                           server.restart)
    full = disk_space.full_filesystem(paths) if paths else None
    if full:
        return Problem(full, None, "free some space there")
    return None


class Watchdog(threading.Thread):
    """Runs ``check`` every ``POLL_S`` until stopped or until a problem, which it hands to ``on_problem``."""

    def __init__(self, servers: list[Watched], paths: list[Path], on_problem: Callable[[Problem], None]):
        super().__init__(name="polyreason-watchdog", daemon=True)
        self.servers, self.paths, self.on_problem = servers, paths, on_problem
        self.done = threading.Event()
        self.problem: Problem | None = None

    def run(self) -> None:
        while not self.done.wait(POLL_S):
            problem = check(self.servers, self.paths)
            if problem is not None:
                self.problem = problem
                self.on_problem(problem)
                return


ACTIVE: list[Watchdog] = []  # the watchdog of the command running now, or of the block an error is leaving


@contextmanager
def watching(servers: list[Watched], paths: list[Path]) -> Iterator[Watchdog]:
    """Watch ``servers`` and the filesystems of ``paths`` while the block runs; a problem stops the command.

    When the block raises, the watchdog stops polling but stays in ``ACTIVE``: the command line asks ``explain``
    next, which polls its servers once more.
    """
    from cli import interrupts

    dog = Watchdog(servers, paths, interrupts.stop_for)
    ACTIVE[:] = [dog]
    dog.start()
    try:
        yield dog
    except BaseException:
        dog.done.set()
        raise
    dog.done.set()
    ACTIVE.clear()


def explain(error: BaseException) -> Problem | None:
    """Why a command failed, when the cause is a dead server or a full disk rather than ``error`` itself.

    Asked when a call fails before the watchdog's next poll: each server is polled until it is found dead or
    answering (at most ``REFUSED_POLLS`` polls), then the disk is looked at; an ``ENOSPC`` in the error's
    chain is named as such.
    """
    dog = ACTIVE.pop() if ACTIVE else None
    if dog is not None and dog.problem is not None:
        return dog.problem
    for _ in range(REFUSED_POLLS if dog is not None else 0):
        problem = check(dog.servers, dog.paths)
        if problem is not None:
            return problem
        if not any(server.refused for server in dog.servers):
            break
        time.sleep(POLL_S / 2)
    full = disk_space.no_space_error(error)
    if full:
        return Problem(full, None, "free some space there")
    return None
