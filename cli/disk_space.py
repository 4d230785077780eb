"""A full disk named as such: "no space left on MOUNT (PATH)", before a run and when it happens.

A project on a full filesystem used to fail as something else: the temporary
Prefect server could not create its database and the command waited for it for
three minutes ("Timed out while attempting to connect to ephemeral Prefect API
server"), or a server's write failed and the client saw an HTTP 500. Here:

* ``space_problems``: before a command starts work (preflight, ``polyreason up``),
  each filesystem holding the project's state (its directory, Prefect's home, the
  SQLite tracking store) must have ``START_FLOOR`` bytes free; else the command
  refuses in one line naming the mount point and the path;
* ``full_filesystem``: while a command runs, its watchdog stops it cleanly when
  one of them falls below ``RUN_FLOOR`` (before the servers on it start failing);
* ``no_space_error``: an exception whose chain holds ``ENOSPC`` (an ``OSError``
  with errno 28, or the message SQLite and the servers relay: "database or disk
  is full", "No space left on device") is named with the file it was writing.

Free space is read with ``shutil.disk_usage`` (statvfs: what an unprivileged
process may still write), the mount point by walking up to ``os.path.ismount``;
no library does this naming, hence these few functions.
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

START_FLOOR = 64 * 2**20  # below this a run is refused: a fresh project's Prefect database alone takes ~6 MB
RUN_FLOOR = 4 * 2**20  # below this a running command stops, naming the disk, before its servers fail
FULL_MESSAGES = ("database or disk is full", "no space left on device")


def size_text(count: float) -> str:
    """Bytes in a short unit.

    >>> size_text(0), size_text(1536), size_text(5 * 2**20), size_text(3.5 * 2**30)
    ('0 B', '1.5 KB', '5.0 MB', '3.5 GB')
    """
    for unit, scale in (("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{int(count)} B"


def existing(path: Path) -> Path:
    """``path``, or its nearest ancestor that exists (a store or directory not created yet)."""
    path = Path(path).absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def mount_point(path: Path) -> Path:
    """The mount point of the filesystem ``path`` is on.

    >>> str(mount_point(Path("/")))
    '/'
    """
    path = existing(path).resolve()
    while not os.path.ismount(path) and path != path.parent:
        path = path.parent
    return path


def filesystems(paths: list[Path]) -> dict[int, Path]:
    """One path per filesystem among ``paths`` (by device), in the order given."""
    found: dict[int, Path] = {}
    for path in paths:
        found.setdefault(existing(path).stat().st_dev, Path(path))
    return found


def low_space(paths: list[Path], floor: int) -> list[str]:
    """"no space left on MOUNT (PATH): N free of M" for each filesystem among ``paths`` with less than ``floor``
    free."""
    problems = []
    for path in filesystems(paths).values():
        usage = shutil.disk_usage(existing(path))
        if usage.free < floor:
            problems.append(f"no space left on {mount_point(path)} ({path}): {size_text(usage.free)} free of "
                            f"{size_text(usage.total)}")
    return problems


def state_paths(project: Path, tracking_uri: str) -> list[Path]:
    """Where a command in ``project`` writes: the project (artifacts, caches), Prefect's home, a SQLite store."""
    from cli.store_check import local_path

    paths = [Path(project), Path(os.environ.get("PREFECT_HOME") or Path(project) / ".prefect")]
    store = local_path(tracking_uri) if tracking_uri.startswith("sqlite:") else None
    return paths + ([store.parent] if store is not None else [])


def space_problems(paths: list[Path]) -> list[str]:
    """What a command must not start with: a filesystem of its state below ``START_FLOOR``."""
    return [f"{problem}; a run needs at least {size_text(START_FLOOR)} free" for problem in low_space(paths, START_FLOOR)]


def full_filesystem(paths: list[Path]) -> str | None:
    """The first filesystem of a running command's state below ``RUN_FLOOR``, as a line; ``None`` when none is."""
    problems = low_space(paths, RUN_FLOOR)
    return problems[0] if problems else None


def chain(error: BaseException | None):
    """``error`` and the exceptions it was raised from or during."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = error.__cause__ or error.__context__


def no_space_error(error: BaseException) -> str | None:
    """"no space left on device (FILE)" when ``error``'s chain says the disk was full; ``None`` otherwise.

    >>> no_space_error(RuntimeError("x")) is None
    True
    >>> no_space_error(OSError(errno.ENOSPC, "No space left on device", "/p/generations.jsonl"))
    'no space left on device (/p/generations.jsonl)'
    >>> no_space_error(RuntimeError("sqlite3.OperationalError: database or disk is full"))
    'no space left on device (database or disk is full)'
    """
    for link in chain(error):
        if isinstance(link, OSError) and link.errno == errno.ENOSPC:
            return f"no space left on device ({link.filename or link.strerror})"
        text = str(link).lower()
        for message in FULL_MESSAGES:
            if message in text:
                return f"no space left on device ({message})"
    return None
