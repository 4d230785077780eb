"""Where a run's numbers come from: the commit of the code, whether it had uncommitted changes, the libraries.

A top-level MLflow run (a recipe's parent run, or a stage run alone) carries
these as tags (``runtime.tracking.stage_run``), so two runs that differ can be
told apart by their code: ``mlflow.source.git.commit``, ``polyreason.git.dirty``
(``true`` when a tracked file has uncommitted changes, staged or not: files git
does not track, such as what ``polyreason up`` writes under ``.polyreason/``, change no code that ran) with ``polyreason.git.diff_digest`` (sha256 of ``git diff
HEAD``), and ``polyreason.library.<name>`` for every library a stage declares
(``runtime.cache.task_code.STAGE_LIBRARIES``).
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from runtime.cache.task_code import STAGE_LIBRARIES, library_version

REPO = Path(__file__).resolve().parents[2]


def _git(*args: str, repo: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, check=False)


def git_commit() -> str:
    """The commit of the code that runs (``unknown`` outside a git checkout)."""
    done = _git("rev-parse", "HEAD")
    return done.stdout.decode().strip() if done.returncode == 0 else "unknown"


def git_changes(repo: Path = REPO) -> tuple[str, str | None]:
    """``true``/``false``/``unknown``: whether tracked files have uncommitted changes; the digest of their diff."""
    status = _git("status", "--porcelain", "--untracked-files=no", repo=repo)
    if status.returncode != 0:
        return "unknown", None
    if not status.stdout.strip():
        return "false", None
    return "true", hashlib.sha256(_git("diff", "HEAD", "--binary", repo=repo).stdout).hexdigest()[:16]


def provenance_tags() -> dict[str, str]:
    """The tags of a top-level run: commit, uncommitted changes, library versions."""
    dirty, digest = git_changes()
    libraries = sorted({name for names in STAGE_LIBRARIES.values() for name in names})
    return {"mlflow.source.git.commit": git_commit(), "polyreason.git.dirty": dirty,
            **({"polyreason.git.diff_digest": digest} if digest else {}),
            **{f"polyreason.library.{name}": library_version(name) for name in libraries}}
