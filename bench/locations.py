"""Where the benches find what lives outside the repository, relative to it by default.

* the offline benchmark copies: ``$POLYREASON_SHARED_DATA``, else ``../shared/data`` beside the
  repository (the tests read the same variable);
* upstream reference code (AdaMame, the Language Confusion Benchmark, Math-Verify):
  ``$POLYREASON_UPSTREAM_DIR``, else ``../shared/upstream`` beside the repository (which holds
  Math-Verify's test files and the benchmark's ``compute_metrics.py`` and word list, with their
  licences), one folder per project named as its repository (``adamame``, ``language-confusion``,
  ``Math-Verify``). AdaMame publishes no licence, so no copy of its code is shared: its checkout
  is ``$POLYREASON_ADAMAME_DIR`` where one is given, else the ``adamame`` folder of the upstream
  directory, and what needs it is skipped, saying so, where neither exists.

A bench takes either from its own option first; nothing here looks at fixed absolute paths.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
UPSTREAM_FOLDERS = {"adamame": "adamame", "lcb": "language-confusion", "math_verify": "Math-Verify"}
UPSTREAM_SOURCES = {"adamame": "https://github.com/dayeonki/adamame",
                    "lcb": "https://github.com/for-ai/language-confusion",
                    "math_verify": "https://github.com/huggingface/Math-Verify"}


def shared_data() -> Path:
    return Path(os.environ.get("POLYREASON_SHARED_DATA") or REPO.parent / "shared" / "data")


def upstream_dir() -> Path:
    return Path(os.environ.get("POLYREASON_UPSTREAM_DIR") or REPO.parent / "shared" / "upstream")


def upstream_checkout(name: str, root: Path | None = None) -> Path:
    """The checkout of ``name`` (a key of :data:`UPSTREAM_FOLDERS`) under ``root`` (default :func:`upstream_dir`;
    AdaMame's: ``$POLYREASON_ADAMAME_DIR`` first when no ``root`` is given)."""
    if name == "adamame" and root is None and os.environ.get("POLYREASON_ADAMAME_DIR"):
        return Path(os.environ["POLYREASON_ADAMAME_DIR"])
    return Path(root or upstream_dir()) / UPSTREAM_FOLDERS[name]
