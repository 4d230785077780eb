"""A benchmark's spec: everything the project knows about one evaluation set, in one object.

After lighteval's one configuration object per task (its name, the hub repository, the prompt
function and the metrics it is scored with), a ``BenchmarkSpec`` holds:

* ``load``: the loader, keyword-only ``(data_dir, languages, limit, selection, sample_seed,
  hub_languages, offset) -> LoadResult``; it reads the local copy in the benchmark's offline
  layout, or the hub copy, and parses rows into ``BenchmarkItem``s (bad rows named in
  ``LoadResult.errors``, never fatal);
* ``local_languages``: the offline layout, read back: the languages a local copy holds;
* ``hub``: its Hugging Face hub copy (``components.data.loaders_hub.HubSource``), ``None``
  when it has none; runs pin the repositories it names to a commit; ``packaged``: the copy
  shipped in the package, read instead when ``data_dir`` is unset (the offline QA set);
* ``kind``: the metric table its rows are scored with, ``math`` (a verifier, reasoning traces)
  or ``qa`` (open-domain QA: the ``<answer>`` block, answered with the search loop);
* ``macro_field``: the row field whose subsets are averaged with equal weight (MMATH's
  ``source``); ``None``: rows are pooled.

The families build specs from their formats (``components.data.benchmarks_math``,
``components.data.benchmarks_qa``); ``components.data.benchmarks`` registers them. A spec is
also its own scheme for the metric table (``components.metrics.registry.Scheme``: its ``kind``
and ``macro_field``), handed to it by its callers: the metrics package sits below the data
package and imports none of it, and this module imports no metric (loading a benchmark
reaches no scoring code).

>>> items = [BenchmarkItem(f"m-{i}", "m", "en", "q", "1") for i in range(5)]
>>> [i.id for i in select(items, limit=2, selection="first", sample_seed=0)]
['m-0', 'm-1']
>>> len(select(items, limit=2, selection="sample", sample_seed=3))
2
>>> [i.id for i in select(items, limit=2, selection="first", sample_seed=0, offset=2)]
['m-2', 'm-3']
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from components.data.loaders_hub import HubSource
from components.records import BenchmarkItem

Selection = Literal["first", "sample"]


@dataclass
class LoadResult:
    """Loaded items (all requested languages) and one line per skipped row."""

    items: list[BenchmarkItem] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


class Loader(Protocol):
    def __call__(self, *, data_dir: str | None = None, languages: list[str] | None = None, limit: int | None = None,
                 selection: Selection = "first", sample_seed: int = 0, hub_languages: list[str] | None = None,
                 offset: int = 0) -> LoadResult: ...


@dataclass(frozen=True)
class BenchmarkSpec:
    """One benchmark (see the module docstring)."""

    name: str
    load: Loader
    local_languages: Callable[[Path], list[str]]
    hub: HubSource | None = None
    kind: Literal["math", "qa"] = "math"
    macro_field: str | None = None
    packaged: Path | None = None

    def languages(self, data_dir: str | None) -> list[str]:
        """The languages it has in ``data_dir`` (its offline layout), or when ``None`` in its packaged copy, else its
        hub copy."""
        if data_dir is None and self.packaged is not None:
            return sorted(self.local_languages(self.packaged))
        if data_dir is None:
            return sorted(self.hub.languages) if self.hub is not None else []
        return sorted(self.local_languages(Path(data_dir))) if Path(data_dir).is_dir() else []


def select(items: list[BenchmarkItem], *, limit: int | None, selection: Selection,
           sample_seed: int, offset: int = 0) -> list[BenchmarkItem]:
    """Keep at most ``limit`` items: the first ones, or a seeded sample in file order, after the first
    ``offset`` items (a held-out split: a training set took that prefix).

    The sample ranks items by ``sha256(seed:id)``, so every language with the
    same ids picks the same problems, and dropping one bad row does not
    reshuffle the rest.
    """
    items = list(items[offset:])
    if limit is None or limit >= len(items):
        return list(items)
    if selection == "first":
        return list(items[:limit])
    if selection != "sample":
        raise ValueError(f"selection must be 'first' or 'sample', got {selection!r}")

    def rank(item: BenchmarkItem) -> str:
        return hashlib.sha256(f"{sample_seed}:{item.id}".encode()).hexdigest()

    chosen = {item.id for item in sorted(items, key=rank)[:limit]}
    return [item for item in items if item.id in chosen]
