"""Is the tracking store there and writable? Answered in seconds, before a run, naming the URI or path.

MLflow's HTTP client retries a dead server for minutes (several retries with
exponential backoff, each with its own timeout), and a read-only SQLite store or
artifact directory surfaces only when the flow first writes — for artifacts,
after generation and scoring. Here:

* ``sqlite:///…`` stores: the database's directory must be writable (a
  temporary file is created and removed) and an existing database must take a
  write lock (``BEGIN IMMEDIATE``, with a short busy timeout); the artifact
  directory of new experiments and, when the experiment exists, its recorded
  artifact location must be writable too;
* ``http(s)://`` servers: ``GET <uri>/health`` must answer within
  ``TIMEOUT_S``. A server decides itself where artifacts go; that it can write
  there is not checked;
* other URIs (a database server, Databricks) are left to MLflow.

``prepare_store`` creates the tables of a new SQLite store under a file lock:
two commands starting at once in a fresh project would otherwise both migrate
it, and the second fails.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import tempfile
import urllib.request
from pathlib import Path
from urllib.parse import unquote, urlsplit

from components.settings import TrackingSettings

TIMEOUT_S = 5.0


def tracking_uri_of(settings: TrackingSettings, project: Path) -> str:
    """The URI a run will use: the profile's, the running stack's (``MLFLOW_TRACKING_URI``), or the project's
    SQLite store (``runtime.tracking.tracking_uri`` without creating anything)."""
    return (settings.tracking_uri or os.environ.get("MLFLOW_TRACKING_URI")
            or f"sqlite:///{project.resolve() / 'mlruns' / 'mlflow.db'}")


def artifact_root_of(settings: TrackingSettings, project: Path) -> str | None:
    """Where new experiments put artifacts (``runtime.tracking.artifact_root`` without creating anything)."""
    if settings.artifact_root:
        return settings.artifact_root
    if not tracking_uri_of(settings, project).startswith("sqlite:"):
        return None  # a tracking server chooses its own artifact store
    return (project.resolve() / "mlruns" / "artifacts").as_uri()


def local_path(uri: str) -> Path | None:
    """The file a ``sqlite:///`` URI or the directory a ``file:`` URI / plain path names; ``None`` otherwise.

    >>> str(local_path("sqlite:////p/mlruns/mlflow.db")), str(local_path("file:///p/a%20b")), local_path("s3://b/x")
    ('/p/mlruns/mlflow.db', '/p/a b', None)
    """
    if uri.startswith("sqlite:///"):  # sqlite:////abs/path.db, or sqlite:///relative.db
        return Path(unquote(uri[len("sqlite:///"):].split("?")[0]))
    if uri.startswith("file:"):
        return Path(unquote(urlsplit(uri).path))
    return Path(uri) if "://" not in uri else None


def not_writable(directory: Path) -> str | None:
    """Why nothing can be written in ``directory`` (or its nearest existing parent), or ``None``."""
    existing = directory
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is not a directory"
    try:
        with tempfile.NamedTemporaryFile(dir=existing, prefix=".polyreason-write-check-"):
            return None
    except OSError as error:
        return f"{existing}: {error.strerror or error}"


def sqlite_problems(uri: str, db: Path) -> list[str]:
    reason = not_writable(db.parent)
    if reason:
        return [f"tracking store {uri} is not writable ({reason})"]
    if not db.exists():
        return []
    try:
        connection = sqlite3.connect(str(db), timeout=TIMEOUT_S)
        try:
            connection.execute("BEGIN IMMEDIATE")
            connection.execute("ROLLBACK")
        finally:
            connection.close()
    except sqlite3.Error as error:
        return [f"tracking store {uri} is not writable ({db}: {error})"]
    return []


def experiment_location(db: Path, experiment: str) -> str | None:
    """The artifact location recorded for ``experiment`` in a SQLite store, if the experiment exists."""
    if not db.is_file():
        return None
    try:
        connection = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=TIMEOUT_S)
        try:
            row = connection.execute("SELECT artifact_location FROM experiments WHERE name = ?", (experiment,)).fetchone()
        finally:
            connection.close()
    except sqlite3.Error:  # no experiments table yet: a new store
        return None
    return row[0] if row else None


def artifact_problems(settings: TrackingSettings, project: Path, db: Path | None) -> list[str]:
    locations = [artifact_root_of(settings, project)]
    if db is not None:
        locations.append(experiment_location(db, settings.experiment))
    problems = []
    for location in dict.fromkeys(filter(None, locations)):
        path = local_path(location)
        reason = not_writable(path) if path is not None else None
        if reason:
            problems.append(f"artifact store {location} (experiment {settings.experiment!r}) is not writable ({reason})")
    return problems


def http_problems(uri: str) -> list[str]:
    try:
        with urllib.request.urlopen(f"{uri.rstrip('/')}/health", timeout=TIMEOUT_S) as response:
            if response.status == 200:
                return []
            reason = f"HTTP {response.status}"
    except OSError as error:
        reason = str(getattr(error, "reason", None) or error)
    return [f"tracking store {uri} is not reachable within {TIMEOUT_S:g} s ({reason}); run `polyreason up` to "
            "start the MLflow server, or fix tracking.tracking_uri"]


def tracking_problems(settings: TrackingSettings, project: Path) -> list[str]:
    """What keeps runs from being logged to the profile's tracking store, one line each."""
    uri = tracking_uri_of(settings, project)
    if uri.startswith(("http://", "https://")):
        return http_problems(uri)
    db = local_path(uri) if uri.startswith("sqlite:") else None
    problems = sqlite_problems(uri, db) if db is not None else []
    return problems + artifact_problems(settings, project, db)


def prepare_store(uri: str) -> None:
    """Create the tables of a new SQLite store, one process at a time."""
    db = local_path(uri) if uri.startswith("sqlite:") else None
    if db is None or has_tables(db):
        return
    db.parent.mkdir(parents=True, exist_ok=True)
    with open(db.with_name(db.name + ".init.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not has_tables(db):
            from runtime.tracking import client

            client(uri).search_experiments(max_results=1)  # MLflow creates and migrates the schema


def has_tables(db: Path) -> bool:
    if not db.is_file():
        return False
    try:
        connection = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=TIMEOUT_S)
        try:
            return connection.execute("SELECT 1 FROM sqlite_master WHERE name = 'alembic_version'").fetchone() is not None
        finally:
            connection.close()
    except sqlite3.Error:
        return False
