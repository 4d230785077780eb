"""``polyreason.git.dirty``: uncommitted changes to tracked files, never files git does not track."""

from __future__ import annotations

import subprocess
from pathlib import Path

from runtime.tracking.provenance import REPO, git_changes


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=repo, check=True,
                   capture_output=True)


def test_untracked_files_leave_the_checkout_clean_and_a_tracked_change_does_not(tmp_path):
    git(tmp_path, "init", "-q")
    (tmp_path / "code.py").write_text("x = 1\n")
    git(tmp_path, "add", "code.py")
    git(tmp_path, "commit", "-qm", "code")
    (tmp_path / ".polyreason").mkdir()
    (tmp_path / ".polyreason" / "stack.json").write_text("{}")
    assert git_changes(tmp_path) == ("false", None)
    (tmp_path / "code.py").write_text("x = 2\n")
    dirty, digest = git_changes(tmp_path)
    assert dirty == "true" and len(digest) == 16


def test_outside_a_checkout_it_is_unknown(tmp_path):
    assert git_changes(Path("/"))[0] == "unknown"


def test_the_stack_directory_is_ignored_by_the_project():
    done = subprocess.run(["git", "check-ignore", "-q", ".polyreason/stack.json"], cwd=REPO, check=False)
    assert done.returncode == 0
