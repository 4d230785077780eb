"""The benchmark registry: name -> ``BenchmarkSpec``, one line per benchmark, and loading by name.

A benchmark is one spec (``components.data.benchmark_spec``): its loader and offline layout,
its hub copy, its kind (maths or open-domain QA) and its macro grouping. The maths benchmarks
are defined in ``components.data.benchmarks_math``, the QA ones in
``components.data.benchmarks_qa``; everything else (the profile loader through
``components.catalog``, preflight, the plan, the metric table through ``SCHEMES``, the hub
revisions a run pins) reads the specs registered here.

>>> sorted(BENCHMARKS)[:3], benchmark_kind("offline_qa"), SCHEMES["mmath"].macro_field
(['mgsm', 'mgsm_rev2', 'mkqa'], 'qa', 'source')
>>> available_languages("mgsm", "/nonexistent")
[]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from components.data.benchmark_spec import BenchmarkSpec, LoadResult, Selection, select
from components.data.benchmarks_math import MGSM, MGSM_REV2, MMATH, MMLU_PROX_MATH, MSVAMP, parse_number_gold
from components.data.benchmarks_qa import MKQA, OFFLINE_QA, XOR_TYDI

if TYPE_CHECKING:
    from components.settings import BenchmarkSettings

__all__ = ["BENCHMARKS", "SCHEMES", "BenchmarkSpec", "LoadResult", "available_languages", "benchmark_kind",
           "benchmark_spec", "load_benchmark", "load_configured_benchmark", "parse_number_gold", "select"]

BENCHMARKS: dict[str, BenchmarkSpec] = {spec.name: spec for spec in (
    MGSM,
    MGSM_REV2,
    MSVAMP,
    MMATH,
    MMLU_PROX_MATH,
    MKQA,
    XOR_TYDI,
    OFFLINE_QA,
)}
SCHEMES = BENCHMARKS  # each spec is its scheme for the metric table: its kind and macro field


def benchmark_spec(name: str) -> BenchmarkSpec:
    """The spec of benchmark ``name``; ``ValueError`` names the known ones."""
    if name not in BENCHMARKS:
        raise ValueError(f"unknown benchmark {name!r} (known: {', '.join(sorted(BENCHMARKS))})")
    return BENCHMARKS[name]


def benchmark_kind(name: str | None) -> str:
    """``math`` or ``qa``: the metric table a benchmark's rows are scored with (``math`` for rows of no registered
    benchmark, as ``polyreason score`` reads a file of any origin)."""
    return BENCHMARKS[name].kind if name in BENCHMARKS else "math"


def available_languages(name: str, data_dir: str | None) -> list[str]:
    """Languages benchmark ``name`` has in ``data_dir`` (its file layout), or its default copy when ``None``."""
    return benchmark_spec(name).languages(data_dir)


def load_configured_benchmark(settings: BenchmarkSettings) -> LoadResult:
    """``load_benchmark`` as a profile's benchmark section says (name, data, languages, limit, selection, offset)."""
    return load_benchmark(settings.name, data_dir=settings.data_dir, languages=settings.languages, limit=settings.limit,
                          selection=settings.selection, sample_seed=settings.sample_seed,
                          hub_languages=settings.hub_languages, offset=settings.offset)


def load_benchmark(name: str, *, data_dir: str | None, languages: list[str], limit: int | None,
                   selection: Selection = "first", sample_seed: int = 0,
                   hub_languages: list[str] | None = None, offset: int = 0) -> LoadResult:
    """Load benchmark ``name`` (a ``BENCHMARKS`` key); ValueError names the known ones.

    ``hub_languages``: languages read from the hub copy although ``data_dir`` is given
    (the offline copy lacks them); ``offset``: items skipped per language before the selection.
    """
    return benchmark_spec(name).load(data_dir=data_dir, languages=languages, limit=limit, selection=selection,
                                     sample_seed=sample_seed, hub_languages=hub_languages, offset=offset)
