"""On-disk cache of generation API calls, keyed by (model, prompt, parameters, seed).

An API answer is decided by the model, the prompt, the sampling parameters and
the seed, and each call is paid for: so those four parts are the key, and a
re-run (or a resumed run) asks the API only for what it has not answered yet.
One JSON file per call under ``root/<key[:2]>/<key>.json``,
written atomically (temporary file + ``os.replace``), so concurrent writers
(the OpenAI backend's worker threads, or two processes) never leave a torn
entry. The API key is never part of a key or an entry.

>>> key = cache_key("m", "2+2?", {"temperature": 0.0}, seed=1)
>>> key == cache_key("m", "2+2?", {"temperature": 0.0}, seed=1)
True
>>> key == cache_key("m", "2+2?", {"temperature": 0.0}, seed=2)
False
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any


def cache_key(model: str, prompt: str, parameters: dict[str, Any], seed: int | None) -> str:
    """sha256 of the canonical JSON of the four parts that decide an API answer."""
    payload = {"model": model, "prompt": prompt, "parameters": parameters, "seed": seed}
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ApiCache:
    """A directory of cached answers; ``get`` returns ``None`` on a miss."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.hits = 0
        self.misses = 0

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        path = self._path(key)
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            self.misses += 1
            return None
        except json.JSONDecodeError:  # a foreign or damaged file: treat as a miss, it will be overwritten
            self.misses += 1
            return None
        self.hits += 1
        return entry

    def put(self, key: str, value: dict[str, Any]) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(value, handle, ensure_ascii=False)
        os.replace(tmp, path)

    def __len__(self) -> int:
        return sum(1 for _ in self.root.glob("*/*.json")) if self.root.exists() else 0
