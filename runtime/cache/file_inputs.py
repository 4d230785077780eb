"""The files a task reads, by content: what its key covers besides its code and its inputs' values.

A task's output is decided by the bytes it reads as much as by its code. Two
kinds of file are read:

* **files a profile names**: every ``ProjectPath`` field of a settings section a
  task is handed (a benchmark's ``data_dir``, ``prompt.exemplars_path``, the LCB
  word list ``words_path``, a data source's file, a training set, an adapter, a
  retrieval corpus or index …) and a trainer's ``accelerate_config`` (a shipped
  name is its YAML file in ``components/training/accelerate/``, else the user's
  path), and the packaged file an unset field stands for (``DEFAULT_FILES``: the
  offline retrieval corpus). ``settings_files`` finds them in a task's inputs; a path that is an
  interpreter (``server_python``) is no data and stays out.
* **package data**: the non-Python files that ship beside a project module
  (``components/data/offline_qa/*.jsonl``, the accelerate YAMLs), found by
  directory: a module's data are the files of its own directory and of the
  subdirectories that are no package of their own. ``package_data`` digests those
  of the modules a task reaches (``runtime.cache.task_code``).

A path template (a data source's ``reference_path``: ``test_{language}.json``)
names every file it matches. A file enters by the sha256 of its bytes; a directory by the sha256 over its
files' relative paths and digests, sorted (every file under it counts: a loader
may pick any of them by a glob). A path that does not exist enters as
``missing`` so its later creation changes the key. Digests are cached per file
by size and modification time, so a directory of benchmark files is hashed once
per process and again only where a file changed.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable


from runtime.cache.import_graph import file_stamp

NOT_DATA = frozenset({"server_python"})  # path fields that name a program, not what it reads
DEFAULT_FILES = {  # (section, field) -> the function naming the file read when the field is unset
    ("RetrievalSettings", "corpus"): ("components.retrieval", "default_corpus"),
}
SKIPPED_PARTS = frozenset({"__pycache__", ".git"})
MISSING = "missing"


def content_digest(path: str | Path) -> str:
    """sha256 of a file's bytes, or over a directory's files (relative path + digest, sorted); ``missing``."""
    target = Path(path).expanduser()
    if target.is_file():
        return file_digest(target)
    if not target.is_dir():
        return MISSING
    digest = hashlib.sha256()
    for relative, value in sorted(directory_files(target).items()):
        digest.update(relative.encode("utf-8"))
        digest.update(value.encode("ascii"))
    return digest.hexdigest()


def directory_files(root: Path) -> dict[str, str]:
    """Relative path -> sha256 of every file under ``root`` (caches and VCS folders left out)."""
    return {str(path.relative_to(root)): file_digest(path) for path in sorted(root.rglob("*"))
            if path.is_file() and not SKIPPED_PARTS & set(path.relative_to(root).parts)}


def file_digest(path: Path) -> str:
    """sha256 of one file (read again when its size or mtime changes)."""
    return _file_digest(str(path), *file_stamp(path))


@lru_cache(maxsize=65536)
def _file_digest(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def settings_files(value: Any) -> dict[str, str]:
    """Path -> content digest of every file a task's inputs name (see the module docstring)."""
    found: dict[str, str] = {}
    for path in named_paths(value):
        for each in expanded(path):
            found[str(each)] = content_digest(each)
    return dict(sorted(found.items()))


def expanded(path: Path) -> list[Path]:
    """A path, or for a template such as ``test_{language}.json`` every file it can name (``{…}`` as ``*``),
    and the template itself (``missing``), so a matching file added later changes the key."""
    if "{" not in str(path):
        return [path]
    pattern = re.sub(r"\{[^}]*\}", "*", path.name)
    return [path, *sorted(path.parent.glob(pattern))]


def named_paths(value: Any) -> list[Path]:
    """The paths of data a task's inputs name: ``ProjectPath`` fields and accelerate configs, nested too."""
    from runtime.cache.settings_walk import gather

    return gather(value, section_paths)


def section_paths(section: Any) -> list[Path]:
    """The paths one settings section names itself: its ``ProjectPath`` fields, the packaged file an unset field
    stands for (``DEFAULT_FILES``) and its accelerate config's file."""
    from components.settings.base import is_path_field

    stored = section.__dict__  # not getattr: reading a field for the key is not consuming it
    paths = [Path(item).expanduser() for name, item in stored.items()
             if isinstance(item, str) and name not in NOT_DATA and is_path_field(type(section), name)]
    paths += [default_file(*where) for (kind, name), where in DEFAULT_FILES.items()
              if type(section).__name__ == kind and stored.get(name) is None]
    if isinstance(stored.get("accelerate_config"), str):
        paths.append(accelerate_file(stored["accelerate_config"]))
    return paths


def default_file(module: str, function: str) -> Path:
    """The packaged file a field stands for when unset (``DEFAULT_FILES``: the retrieval corpus)."""
    import importlib

    return Path(getattr(importlib.import_module(module), function)())


def accelerate_file(name: str) -> Path:
    """The YAML file an ``accelerate_config`` value launches with: a shipped config's, else the given path."""
    from components.training.accelerate import ACCELERATE_CONFIGS

    return ACCELERATE_CONFIGS.get(name) or Path(name).expanduser()


def package_data(modules: Iterable[str], paths: dict[str, Path], root: Path) -> dict[str, str]:
    """Repo-relative path -> sha256 of the data files shipped beside ``modules`` (``paths``: module -> source)."""
    directories = {paths[name].parent for name in modules if name in paths}
    found: dict[str, str] = {}
    for directory in directories:
        for path in data_files(directory):
            found[str(path.relative_to(root))] = file_digest(path)
    return dict(sorted(found.items()))


def data_files(directory: Path) -> list[Path]:
    """The non-Python files of ``directory`` and of its subdirectories that are no package (no ``__init__.py``)."""
    found = []
    for path in sorted(directory.iterdir()):
        if path.name in SKIPPED_PARTS or path.name.startswith("."):
            continue
        if path.is_file() and path.suffix not in (".py", ".pyc"):
            found.append(path)
        elif path.is_dir() and not (path / "__init__.py").exists():
            found.extend(p for p in sorted(path.rglob("*")) if p.is_file()
                         and not SKIPPED_PARTS & set(p.relative_to(path).parts))
    return found
