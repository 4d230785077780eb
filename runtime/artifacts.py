"""One writer per artifact directory, and artifacts that prove they are whole.

Content-addressed directories (``artifacts/<stage>/<fp[:12]>/``) are shared by
every run of a project: two runs of one profile at once compute the same
directory. Two rules keep them honest:

* **One writer.** ``writing(directory)`` holds an exclusive ``fcntl.flock`` on
  ``<directory>.lock`` while a task writes. The kernel drops the lock when the
  process ends, however it ends (``kill -9`` included), so a lock is never
  stale. A second run asking for the directory waits, saying once which
  process holds it, and then reuses the product the first one finished
  (``Slot.reuse``) instead of writing it again. Reuse needs the same task
  cache key (Prefect's transaction key: inputs + task and component source):
  a product written by other code is written again.
* **Proof of completeness.** A product is published last, after every file of
  it is on disk: ``<directory>/.manifest.json`` records, per product, its
  ``ArtifactRef``, each file's size, sha256 and row count, and the names of the
  directory's other files at that moment (so a file written into a published
  directory afterwards, by another writer, shows), written through a
  temporary file and an atomic rename. ``problem`` re-reads the files and names
  the first difference (rows, checksum, a missing file); a product without a
  manifest entry was never finished. The cache policy (``runtime.cache.policy``) asks
  it before reusing a cached task result.

Products without a manifest entry (written before manifests existed, or by a
task that publishes none) are checked by existence and, when their summary
gives ``rows``, by their row count.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import socket
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

MANIFEST = ".manifest.json"
PRODUCED_BY = "produced_by.json"  # the run that produced a directory (``runtime.cache.report``)
BOOKKEEPING = {MANIFEST, PRODUCED_BY}  # files of a directory that belong to no product
POLL_S = 0.2
_HELD: dict[Path, Callable[[], str] | None] = {}  # directories this process writes now -> progress note
_DEPTH: dict[tuple[Path, int], int] = {}  # re-entrant use from one thread
_GUARD = threading.Lock()


@dataclass(frozen=True)
class ArtifactRef:
    """What a stage task returns: where its output is, its content fingerprint, a summary."""

    path: str
    fingerprint: str
    summary: dict = field(default_factory=dict)


def artifact_dir(project_dir: str | Path, stage: str, fingerprint: str) -> Path:
    """Content-addressed output directory ``<project>/artifacts/<stage>/<fp[:12]>/``."""
    path = Path(project_dir).resolve() / "artifacts" / stage / fingerprint[:12]
    path.mkdir(parents=True, exist_ok=True)
    return path


def log(message: str, warning: bool = False) -> None:
    """To the Prefect run's log when inside a run, else to the ``prefect.polyreason`` logger; a notice (not a
    warning) is also a line of the command's progress, since the terminal shows Prefect's warnings only unless
    verbose (``components.quiet``)."""
    from prefect.exceptions import MissingContextError
    from prefect.logging import get_logger, get_run_logger

    from components.progress import report
    from components.quiet import verbose
    from runtime.flow_runs.progress import installed

    try:
        logger = get_run_logger()
    except MissingContextError:
        logger = get_logger("polyreason")
    as_progress = not warning and not verbose()
    if as_progress:
        report(message, message, final=True)
    if not (as_progress and installed()):  # else the progress line is already in the run's log: never twice
        (logger.warning if warning else logger.info)(message)


def file_fingerprint(path: str | Path) -> str:
    """sha256 of a file's bytes (an upstream file in a cache key, a file in a manifest)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def count_rows(path: Path) -> int | None:
    """Rows of a table file (JSONL lines, parquet rows); ``None`` for other files."""
    if path.suffix == ".jsonl":
        with open(path, "rb") as handle:
            return sum(1 for line in handle if line.strip())
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.read_metadata(path).num_rows
    return None


def describe(path: Path) -> dict[str, Any]:
    return {"bytes": path.stat().st_size, "sha256": file_fingerprint(path), "rows": count_rows(path)}


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path`` and rename it onto ``path``."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    with temporary.open("w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def read_manifest(directory: Path) -> dict[str, Any]:
    try:
        return json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def locate(path: str | Path) -> tuple[Path, str]:
    """The artifact directory of a product and the product's name in its manifest (``.`` for the directory; a
    sub-directory such as ``adapter`` is named in its parent's manifest)."""
    path = Path(path)
    if path.is_dir() and not (path / MANIFEST).is_file() and path.name in read_manifest(path.parent):
        return path.parent, path.name
    return (path, ".") if path.is_dir() else (path.parent, path.name)


def entry_problem(directory: Path, entry: dict[str, Any]) -> str | None:
    """The first file of a manifest entry that differs from what the entry records, or ``None``."""
    for name, recorded in entry.get("files", {}).items():
        path = directory / name
        if not path.is_file():
            return f"{path} is missing"
        rows = count_rows(path)
        if rows != recorded["rows"]:
            return f"{path} has {rows} rows, its manifest says {recorded['rows']}"
        if path.stat().st_size != recorded["bytes"]:
            return f"{path} has {path.stat().st_size} bytes, its manifest says {recorded['bytes']}"
        if file_fingerprint(path) != recorded["sha256"]:
            return f"{path} does not match its manifest's sha256"
    return None


def problem(ref: Any) -> str | None:
    """Why a task result's ``ArtifactRef`` cannot be reused, or ``None`` when its files hold what it promises."""
    path = Path(ref.path)
    if not path.exists():
        return f"{path} is missing"
    directory, product = locate(path)
    entry = read_manifest(directory).get(product)
    if entry is None:  # written before manifests, or by a task that publishes none: existence and row count
        rows = ref.summary.get("rows") if isinstance(ref.summary, dict) else None
        found = count_rows(path) if path.is_file() and isinstance(rows, int) else rows
        return None if found == rows else f"{path} has {found} rows, its cache entry recorded {rows}"
    if entry["ref"]["fingerprint"] != ref.fingerprint:
        return f"{path} was rewritten since this cache entry was recorded"
    return entry_problem(directory, entry)


@dataclass
class Slot:
    """A directory this process holds the write lock of."""

    directory: Path

    def reuse(self, product: str | Path):
        """The finished product's ``ArtifactRef`` when its files are whole; ``None`` (mismatch logged) otherwise."""
        name = locate_name(self.directory, product)
        entry = read_manifest(self.directory).get(name)
        key = cache_key()
        if entry is None or key is None or entry.get("key") != key:
            return None
        found = entry_problem(self.directory, entry)
        if found is not None:
            log(f"not reusing {self.directory / name}: {found}; writing it again", warning=True)
            return None
        return ArtifactRef(**entry["ref"])

    def publish(self, product: str | Path, summary: dict, files: Iterable[str | Path] | None = None,
                fingerprint: str | None = None):
        """Record a finished product (its ``files``, default: the product file) and return its ``ArtifactRef``.

        ``fingerprint`` defaults to the sha256 of the product file.
        """
        name = locate_name(self.directory, product)
        paths = [Path(f) for f in files] if files is not None else [self.directory / name]
        recorded = {str(p.resolve().relative_to(self.directory.resolve())): describe(p) for p in paths}
        main = self.directory / name
        ref = ArtifactRef(str(main), fingerprint or recorded[name]["sha256"], summary)
        manifest = read_manifest(self.directory)
        manifest[name] = {"ref": {"path": ref.path, "fingerprint": ref.fingerprint, "summary": ref.summary},
                          "files": recorded, "others": working_files(self.directory, recorded), "key": cache_key(),
                          "writer": owner()}
        write_atomic(self.directory / MANIFEST, json.dumps(manifest, ensure_ascii=False, indent=1, default=str))
        return ref


def working_files(directory: Path, recorded: Iterable[str]) -> list[str]:
    """The other files in ``directory`` when a product is published (checkpoints, logs, the job): whatever is
    found there later and is in no product's files nor in these lists was written after the publication."""
    skip = set(recorded)
    return sorted(name for path in directory.rglob("*") if path.is_file()
                  and (name := str(path.relative_to(directory))) not in skip and path.name not in BOOKKEEPING
                  and not path.name.startswith("."))


def cache_key() -> str | None:
    """The running task's cache key (``None`` outside a cached task run)."""
    from prefect.transactions import get_transaction

    transaction = get_transaction()
    return getattr(transaction, "key", None) if transaction is not None else None


def locate_name(directory: Path, product: str | Path) -> str:
    product = Path(product)
    if not product.is_absolute():
        product = directory / product
    return "." if product.resolve() == directory.resolve() else str(product.resolve().relative_to(directory.resolve()))


def owner() -> dict[str, Any]:
    return {"pid": os.getpid(), "host": socket.gethostname(), "since": time.strftime("%Y-%m-%d %H:%M:%S")}


@contextmanager
def writing(directory: str | Path, progress: Callable[[], str] | None = None) -> Iterator[Slot]:
    """Hold ``directory``'s write lock for the block (waiting for another writer first).

    ``progress`` says what is kept so far if the run is interrupted (``in_progress``).
    """
    directory = Path(directory).resolve()
    directory.mkdir(parents=True, exist_ok=True)
    key = (directory, threading.get_ident())
    with _GUARD:
        nested = _DEPTH.get(key, 0) > 0
        _DEPTH[key] = _DEPTH.get(key, 0) + 1
    handle = None if nested else _acquire(directory)
    _HELD[directory] = progress or _HELD.get(directory)
    try:
        yield Slot(directory)
    finally:
        with _GUARD:
            _DEPTH[key] -= 1
            last = _DEPTH[key] == 0
            if last:
                del _DEPTH[key]
        if handle is not None:
            _HELD.pop(directory, None)
            fcntl.flock(handle, fcntl.LOCK_UN)
            handle.close()


def _acquire(directory: Path):
    lock_path = directory.with_name(directory.name + ".lock")
    handle = open(lock_path, "a+", encoding="utf-8")
    waited = False
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if not waited:
                handle.seek(0)
                holder = handle.read().strip() or "another process"
                log(f"{directory} is being written by {holder}; waiting for it to finish")
                waited = True
            time.sleep(POLL_S)
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()} on {socket.gethostname()} (since {time.strftime('%H:%M:%S')})")
    handle.flush()
    return handle


def in_progress() -> list[str]:
    """What this process is writing now, with what is kept so far (for an interrupted run's last line)."""
    notes = []
    for directory, progress in list(_HELD.items()):
        try:
            notes.append(f"{directory} ({progress()})" if progress else str(directory))
        except OSError:
            notes.append(str(directory))
    return notes
