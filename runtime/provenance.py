"""Where a run's numbers come from: the commit of the code, whether it had uncommitted changes, the libraries.

A top-level MLflow run (a recipe's parent run, or a stage run alone) carries
these as tags (``runtime.tracking.stage_run``), so two runs that differ can be
told apart by their code: ``mlflow.source.git.commit``, ``polyreason.git.dirty``
(``true`` when ``git status`` lists any change, untracked files included: a new
module is code too) with ``polyreason.git.diff_digest`` (sha256 of ``git diff
HEAD``), and ``polyreason.library.<name>`` for every library a stage declares
(``runtime.task_code.STAGE_LIBRARIES``).
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from runtime.task_code import STAGE_LIBRARIES, library_version

REPO = Path(__file__).resolve().parents[1]


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, check=False)


def git_commit() -> str:
    """The commit of the code that runs (``unknown`` outside a git checkout)."""
    done = _git("rev-parse", "HEAD")
    return done.stdout.decode().strip() if done.returncode == 0 else "unknown"


def git_changes() -> tuple[str, str | None]:
    """``true``/``false``/``unknown``: whether the checkout has uncommitted changes; the digest of its diff."""
    status = _git("status", "--porcelain")
    if status.returncode != 0:
        return "unknown", None
    if not status.stdout.strip():
        return "false", None
    return "true", hashlib.sha256(_git("diff", "HEAD", "--binary").stdout).hexdigest()[:16]


def provenance_tags() -> dict[str, str]:
    """The tags of a top-level run: commit, uncommitted changes, library versions."""
    dirty, digest = git_changes()
    libraries = sorted({name for names in STAGE_LIBRARIES.values() for name in names})
    return {"mlflow.source.git.commit": git_commit(), "polyreason.git.dirty": dirty,
            **({"polyreason.git.diff_digest": digest} if digest else {}),
            **{f"polyreason.library.{name}": library_version(name) for name in libraries}}
