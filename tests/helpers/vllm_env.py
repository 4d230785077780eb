"""The vLLM test environment's interpreter, once its build is finished.

``.ci/vllm-env.sh`` builds ``.venv-vllm`` holding an exclusive ``flock`` on ``.venv-vllm.lock``
and writes its stamp file last; CI starts that build in the background before the main suite.
A test of the main suite that runs ``.venv-vllm/bin/python`` therefore waits for the lock (a
build in progress) and then asks for the stamp: an interpreter that exists while pip is still
installing beside it is not a built environment. ``flock(2)`` locks are shared between the shell's
``flock`` and Python's ``fcntl.flock``, so the wait is the build's own lock, not a poll.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_VENV = REPO / ".venv-vllm"
STAMP_NAME = ".polyreason-vllm-env"  # written by .ci/vllm-env.sh after its checks pass


def wait_for_build(venv: Path) -> None:
    """Block until no build of ``venv`` holds its lock (returns at once where no build ever ran)."""
    lock = venv.parent / f"{venv.name}.lock"
    if not lock.exists():
        return
    with lock.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        fcntl.flock(handle, fcntl.LOCK_UN)


def built_vllm_python(venv: Path = DEFAULT_VENV) -> Path | None:
    """The environment's interpreter once its build has finished and stamped it, else None.

    ``POLYREASON_VLLM_PYTHON`` names another interpreter (one the user built elsewhere): it is taken
    as it is, with no stamp asked for.
    """
    named = os.environ.get("POLYREASON_VLLM_PYTHON")
    if named:
        return Path(named) if Path(named).exists() else None
    wait_for_build(venv)
    python = venv / "bin" / "python"
    return python if python.exists() and (venv / STAMP_NAME).is_file() else None
