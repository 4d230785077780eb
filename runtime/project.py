"""The project a flow works in, and the one way a task writes a product there.

``prepared(profile)`` is what every flow does first: it makes every
``ProjectPath`` of the profile absolute against the project directory (so tasks
and components only see absolute paths), remembers the flow run (an interrupt
that leaves it running can close it, ``runtime.processes.abandoned``) and returns the
profile with its ``Project``.

A ``Project`` owns the layout (``artifacts/<stage>/<fp[:12]>/``, ``.cache/``)
and the artifact protocol of ``runtime.artifacts``, so a task body is the work
alone::

    return project.produce("scores", [generations.fingerprint, scoring], "scores.json",
                           lambda out: write_scores(generations.path, scoring, out / "scores.json"))

``produce`` holds the directory's write lock (waiting for another writer),
hands back the finished product when it was written under the same task cache
key, else runs the work into the directory and publishes the product last,
with the size, sha256 and row count of each of its files in the manifest. A
product is a file or a directory (``"."``, or a sub-directory such as
``adapter``); its files are the product file, or every file under the product
directory. The work returns the product's summary, or a ``Made`` when it names
the files or the fingerprint itself. A project is passed to tasks whole: its
root is part of their keys, as the project directory was.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from components.config import fingerprint as fingerprint_of
from runtime.artifacts import BOOKKEEPING, ArtifactRef, artifact_dir, file_fingerprint, writing


@dataclass(frozen=True)
class Made:
    """What a product's work returns when the defaults do not fit: its summary, files and fingerprint."""

    summary: dict
    files: list[Path] | None = None
    fingerprint: str | None = None


@dataclass(frozen=True)
class Project:
    """A project directory (absolute): where artifacts, caches and results live."""

    root: str

    def __fspath__(self) -> str:
        return self.root

    @property
    def cache_dir(self) -> Path:
        """``.cache/``: the converted embedded model, downloaded registry versions, API responses."""
        return Path(self.root) / ".cache"

    @property
    def stack_file(self) -> Path:
        """``.polyreason/stack.json``: the PIDs, URLs and logs of the servers ``polyreason up`` started here."""
        return Path(self.root) / ".polyreason" / "stack.json"

    def directory(self, stage: str, identity: Any) -> Path:
        """The content-addressed directory ``artifacts/<stage>/<fp[:12]>/`` of what ``identity`` describes."""
        return artifact_dir(self.root, stage, fingerprint_of(identity))

    def produce(self, stage: str, identity: Any, product: str, work: Callable[[Path], dict | Made], *,
                progress: Callable[[Path], str] | None = None) -> ArtifactRef:
        """The ``ArtifactRef`` of ``product`` in ``directory(stage, identity)``: reused when finished under this
        task's cache key, else made by ``work(directory)`` and published (see the module docstring)."""
        return produce_in(self.directory(stage, identity), product, work, progress=progress)


def produce_in(out: Path, product: str, work: Callable[[Path], dict | Made], *,
               progress: Callable[[Path], str] | None = None) -> ArtifactRef:
    """``Project.produce`` in a directory given as such (one shared by two tasks, such as a training run's)."""
    target = out / product
    with writing(out, progress=(lambda: progress(out)) if progress else None) as slot:
        if (done := slot.reuse(target)) is not None:
            return done
        made = work(out)
        made = made if isinstance(made, Made) else Made(summary=made)
        files = made.files if made.files is not None else product_files(target)
        fingerprint = made.fingerprint or (files_fingerprint(target, files) if target.is_dir() else None)
        return slot.publish(target, made.summary, files=files, fingerprint=fingerprint)


def product_files(target: Path) -> list[Path]:
    """The files of a product: the file itself, or every file under the directory (bookkeeping and hidden
    files left out)."""
    if not target.is_dir():
        return [target]
    return [path for path in sorted(target.rglob("*"))
            if path.is_file() and path.name not in BOOKKEEPING and not path.name.startswith(".")]


def files_fingerprint(target: Path, files: list[Path]) -> str:
    """The sha256 of a directory product: its files' paths (relative to it) and contents, in order."""
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path.relative_to(target)).encode())
        digest.update(file_fingerprint(path).encode())
    return digest.hexdigest()


def prepared(profile) -> tuple[Any, Project]:
    """The profile with every relative path made absolute against its project directory, and its ``Project``."""
    from runtime.flow_runs import progress as prefect_progress
    from runtime.processes.abandoned import register_flow_run

    register_flow_run()
    prefect_progress.install()  # progress lines in the flow run's logs, library chatter filtered as on the CLI
    profile = profile.with_absolute_paths()
    return profile, Project(str(Path(profile.project_dir).resolve()))


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


def prepared_project(project_dir: str | Path) -> Project:
    """A project directory given on its own (not in a profile)."""
    return Project(str(Path(project_dir).resolve()))
