"""Where the benches find what lives outside the repository, relative to it by default.

* the offline benchmark copies: ``$POLYREASON_SHARED_DATA``, else ``../shared/data`` beside the
  repository (the tests read the same variable);
* upstream reference checkouts (AdaMame, the Language Confusion Benchmark, Math-Verify):
  ``$POLYREASON_UPSTREAM_DIR``, else ``../upstream`` beside the repository, one folder per
  project named as its repository (``adamame``, ``language-confusion``, ``Math-Verify``).

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
    return Path(os.environ.get("POLYREASON_UPSTREAM_DIR") or REPO.parent / "upstream")


def upstream_checkout(name: str, root: Path | None = None) -> Path:
    """The checkout of ``name`` (a key of :data:`UPSTREAM_FOLDERS`) under ``root`` (default :func:`upstream_dir`)."""
    return Path(root or upstream_dir()) / UPSTREAM_FOLDERS[name]
