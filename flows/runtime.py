"""Process set-up before Prefect or MLflow is imported: project-local state, no telemetry.

Prefect reads its settings when it is first imported and keeps state and
results in ``~/.prefect`` unless ``PREFECT_HOME`` / ``PREFECT_RESULTS_LOCAL_STORAGE_PATH``
say otherwise; ``import mlflow`` writes telemetry unless
``MLFLOW_DISABLE_TELEMETRY=true``. ``configure`` sets project-local defaults
(values already in the environment win) and must run before those imports; when
the project's stack runs (``polyreason up``), it points Prefect and MLflow at it.
"""

from __future__ import annotations

import os
from pathlib import Path


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


def configure(project_dir: str | Path) -> dict[str, Path]:
    """Set environment defaults for a project directory; returns its paths."""
    paths = project_paths(project_dir)
    defaults = {
        "PREFECT_HOME": str(paths["prefect_home"]),
        "PREFECT_RESULTS_LOCAL_STORAGE_PATH": str(paths["results"]),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
        "MLFLOW_DISABLE_TELEMETRY": "true",
        "DO_NOT_TRACK": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    for key, value in defaults.items():
        os.environ.setdefault(key, value)
    Path(os.environ["PREFECT_HOME"]).mkdir(parents=True, exist_ok=True)  # Prefect's SQLite cannot create parents
    from flows.stack import activate

    activate(project_dir)  # a running `polyreason up` stack receives this project's runs
    return paths


def prepared(profile):
    """The profile with every relative path made absolute against its project directory, and that directory.

    Every flow starts here, so tasks and components only ever see absolute paths; the flow run
    is remembered, to be closed if an interrupt leaves it running (``flows.interrupts``).
    """
    from flows.interrupts import register_flow_run

    register_flow_run()
    profile = profile.with_absolute_paths()
    return profile, Path(profile.project_dir)


def require(profile, section: str):
    """The profile's section at dotted ``section``; ``ProfileError`` naming it when the profile has none."""
    from components.settings import ProfileError

    value = profile
    for part in section.split("."):
        value = getattr(value, part, None) if value is not None else None
    if value is None or (section == "evaluation" and not value.benchmarks):
        what = "evaluation.benchmarks" if value is not None else f"{section} section"
        raise ProfileError(f"profile {profile.name!r} has no {what}")
    return value


def was_cached(state) -> bool:
    """Whether a task's final state is a cache hit (Prefect names it ``Cached``)."""
    return state.name == "Cached"


def prepared_project(project_dir: str | Path) -> Path:
    """A project directory given on its own (not in a profile), absolute."""
    return Path(project_dir).resolve()
