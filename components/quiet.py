"""Library chatter kept off the terminal by default; all of it with ``--verbose``.

What a run prints besides its own lines comes from the libraries it drives, and
none of it is something a person running a recipe can act on: MLflow's
``UserWarning``s when it infers a dataset's schema or cannot tell which kind of
source a dataset path is, its INFO lines about creating tables; transformers' and
trl's advice about generation settings and deprecations, progress bars of their own; Prefect's line per task
and flow run state. Each is silenced by what the library itself offers, by name —
``warnings.filterwarnings`` by category and the module the warning is raised
from, ``logging`` levels of the libraries' loggers, and the environment variables
the libraries read when they start (``MLFLOW_LOGGING_LEVEL``, ``TRANSFORMERS_VERBOSITY``, tqdm's
``TQDM_DISABLE``, which sets the default of bars created without an explicit choice, Prefect's
``PREFECT_LOGGING_*`` overrides of its logging configuration) — never by
switching off warnings or logging altogether: our own warnings (a changed cached
file, a rejected row) and every library's errors still show.

``POLYREASON_VERBOSE=1`` (set by ``polyreason --verbose``) keeps everything. The
variable is inherited by child processes (the trainer, a generation worker), whose
entry points call ``quiet_libraries`` too, so they filter the same way.

>>> quiet_environment({"POLYREASON_VERBOSE": "1"})
{}
>>> quiet_environment({})["TRANSFORMERS_VERBOSITY"]
'error'
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Mapping

VERBOSE = "POLYREASON_VERBOSE"

# (category, module pattern): warnings raised from these modules say nothing a run can act on
WARNING_FILTERS: tuple[tuple[type[Warning], str], ...] = (
    (UserWarning, r"mlflow(\..*)?$"),  # dataset source ambiguity, schema inference hints
    (FutureWarning, r"mlflow(\..*)?$"),
    (UserWarning, r"transformers(\..*)?$"),  # generation flags that the sampling settings leave unused
    (FutureWarning, r"transformers(\..*)?$"),
    (UserWarning, r"trl(\..*)?$"),
    (UserWarning, r"peft(\..*)?$"),
    (DeprecationWarning, r"(prefect|pydantic|mlflow|transformers|trl|peft|accelerate)(\..*)?$"),
)
# loggers whose INFO and WARNING lines are progress the command reports in its own words
QUIET_LOGGERS = {"alembic": logging.WARNING, "httpx": logging.WARNING,
                 "transformers": logging.ERROR, "accelerate": logging.ERROR, "peft": logging.ERROR}
# read by the libraries when they are imported (and by child processes, which inherit them)
QUIET_ENVIRONMENT = {
    "MLFLOW_LOGGING_LEVEL": "WARNING",  # MLflow sets its loggers' level from it when imported
    "TRANSFORMERS_VERBOSITY": "error",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TQDM_DISABLE": "1",  # tqdm's default for bars nobody asked for (transformers' GGUF conversion); explicit wins
    "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "WARNING",  # the terminal's handler; the API's still gets INFO
}


def verbose(environ: Mapping[str, str] | None = None) -> bool:
    """Whether this process (and its children) show every library's warnings."""
    return (os.environ if environ is None else environ).get(VERBOSE, "") not in ("", "0")


def quiet_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables to set before the libraries are imported (none when verbose)."""
    return {} if verbose(environ) else dict(QUIET_ENVIRONMENT)


def quiet_libraries() -> None:
    """Install the warning filters and logger levels in this process, unless verbose. Values already in the
    environment win (a user's ``TRANSFORMERS_VERBOSITY=info`` stays)."""
    if verbose():
        return
    for key, value in quiet_environment().items():
        os.environ.setdefault(key, value)
    for category, module in WARNING_FILTERS:
        warnings.filterwarnings("ignore", category=category, module=module)
    for name, level in QUIET_LOGGERS.items():
        logging.getLogger(name).setLevel(level)
