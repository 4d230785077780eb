"""Process set-up before Prefect or MLflow is imported: project-local state, no telemetry.

Prefect reads its settings when it is first imported and keeps state and
results in ``~/.prefect`` unless ``PREFECT_HOME`` / ``PREFECT_RESULTS_LOCAL_STORAGE_PATH``
say otherwise; ``import mlflow`` writes telemetry unless
``MLFLOW_DISABLE_TELEMETRY=true``. ``configure`` sets project-local defaults
(values already in the environment win) and must run before those imports; when
the project's stack runs (``polyreason up``), it points Prefect and MLflow at it.
MLflow's client of a local server gets short timeouts and few retries
(``cli.watchdog.bound_local_clients``). It also filters the libraries' warnings and log lines (``components.quiet``,
unless ``--verbose``) and shows progress lines on stderr (``cli.terminal``).
"""

from __future__ import annotations

import os
from pathlib import Path

from cli.terminal import install_progress
from components.quiet import quiet_environment, quiet_libraries


def project_paths(project_dir: str | Path) -> dict[str, Path]:
    """Where the project's local state lives."""
    root = Path(project_dir).resolve()
    return {
        "prefect_home": root / ".prefect",
        "results": root / ".prefect" / "results",
        "mlruns": root / "mlruns",
        "artifacts": root / "artifacts",
        "cache": root / ".cache",
    }


def checked_project_dir(project_dir: str | Path) -> Path:
    """``--project-dir`` resolved; ``Refused`` (exit 2, one line) when it cannot be a directory: a file, inside a
    file, or a symbolic-link loop."""
    from cli.preflight import Refused, unreadable

    given = Path(project_dir).expanduser()
    try:
        root = given.resolve()
    except (RuntimeError, OSError):  # Python 3.11 raises RuntimeError for a symbolic-link loop
        raise Refused([f"--project-dir {project_dir}: {unreadable(given) or 'cannot be resolved'}"]) from None
    for path in (root, *root.parents):
        if path.exists() and not path.is_dir():
            where = "is a file" if path == root else f"{path} is a file"
            raise Refused([f"--project-dir {project_dir}: {where}, not a directory"])
    return root


def configure(project_dir: str | Path) -> dict[str, Path]:
    """Set environment defaults for a project directory; returns its paths."""
    paths = project_paths(checked_project_dir(project_dir))
    defaults = {
        "PREFECT_HOME": str(paths["prefect_home"]),
        "PREFECT_RESULTS_LOCAL_STORAGE_PATH": str(paths["results"]),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
        "MLFLOW_DISABLE_TELEMETRY": "true",
        "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true",  # stdout is the command's result (the URL is in it)
        "DO_NOT_TRACK": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    for key, value in {**defaults, **quiet_environment()}.items():
        os.environ.setdefault(key, value)
    from cli.stack import activate
    from cli.stack_launch import memo_store_path

    os.environ.setdefault("PREFECT_SERVER_MEMO_STORE_PATH", memo_store_path(os.environ["PREFECT_HOME"]))
    quiet_libraries()
    install_progress()
    Path(os.environ["PREFECT_HOME"]).mkdir(parents=True, exist_ok=True)  # Prefect's SQLite cannot create parents
    activate(project_dir)  # a running `polyreason up` stack receives this project's runs
    from cli.watchdog import bound_local_clients

    bound_local_clients()
    return paths
