"""How many rows each stage reads, before anything has run.

A stage's rows are known exactly when they are a local file (a source or
dataset file, traces written beforehand, a benchmark's offline copy: read here
with the stage's own readers), bounded when an earlier stage's output is capped
by the settings (``traces.per_language``, ``rejection.per_language``: at most the
cap times the languages; fewer when the filter keeps fewer), and unknown when
they come from the hub without a limit (read only when the stage runs).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Rows:
    """A row count: ``count`` (``None``: unknown), ``bound`` (an upper bound, not exact), and how it was found."""

    count: int | None
    bound: bool
    basis: str

    def text(self) -> str:
        """``≤ 5,000 (basis)``, ``32 (basis)`` or ``unknown (basis)``."""
        if self.count is None:
            return f"unknown ({self.basis})"
        return f"{'≤ ' if self.bound else ''}{self.count:,} ({self.basis})"


def capped(cap: int | None, languages: list[str], inner: Rows, what: str) -> Rows:
    """At most ``cap`` per language of ``inner`` rows (``cap`` ``None``: ``inner`` as an upper bound)."""
    if cap is None:
        return Rows(inner.count, True, f"{what}: uncapped, at most {inner.basis}")
    limit = cap * len(languages)
    if inner.count is not None and inner.count < limit:
        return Rows(inner.count, True, f"{what}: at most {inner.basis}")
    return Rows(limit, True, f"{what}.per_language {cap:,} × {len(languages)} languages")


def source_rows(data: Any) -> Rows:
    """English source problems: the limit, a local file's rows, or unknown (hub)."""
    from components.data.sources import read_local

    source = data.source
    if source.path is not None and Path(source.path).is_file():
        try:
            count = sum(1 for _, record in read_local(Path(source.path), source.format) if isinstance(record, dict))
        except (OSError, ValueError) as error:
            return Rows(None, True, f"data.source.path: {error}")
        count = min(count, source.limit) if source.limit else count
        return Rows(count, False, f"data.source.path {Path(source.path).name}")
    if source.limit is not None:
        return Rows(source.limit, True, f"data.source.limit {source.limit:,}")
    return Rows(None, True, f"data.source.hub {source.hub}, read when the data stage runs")


def trace_rows(data: Any) -> Rows:
    """Traces the data stage keeps for SFT: from a file (before the filter), or per translated query."""
    from components.data.teacher_file import read_teacher_file

    traces = data.traces
    if traces.from_file is not None and Path(traces.from_file).is_file():
        try:
            rows, _ = read_teacher_file(traces.from_file, data.languages)
        except (OSError, ValueError) as error:
            return Rows(None, True, f"data.traces.from_file: {error}")
        per_language = {lang: sum(1 for row in rows if row["lang"] == lang) for lang in data.languages}
        cap = traces.per_language
        count = sum(min(n, cap) if cap else n for n in per_language.values())
        return Rows(count, True, f"data.traces.from_file {Path(traces.from_file).name}, before the trace filter")
    if traces.from_file is not None:
        return Rows(None, True, f"data.traces.from_file {traces.from_file} is missing")
    translated = translated_rows(data)
    return capped(traces.per_language, data.languages, translated, "data.traces")


def translated_rows(data: Any) -> Rows:
    """Queries after translation: each source problem in every target language."""
    source = source_rows(data)
    targets = len(data.languages)
    if source.count is None:
        return Rows(None, True, source.basis)
    return Rows(source.count * targets, True, f"{source.count:,} source problems × {targets} languages")


def rl_rows(data: Any) -> Rows:
    """The RL set rejection sampling writes: at most ``per_language`` per language, after the held-out rows."""
    return capped(data.rejection.per_language, data.languages, trace_rows(data), "data.rejection")


def grpo_rows(profile: Any) -> Rows:
    """GRPO's training prompts: its dataset file, LcRL's QA benchmark, or the recipe's RL set."""
    from components.training.grpo_data import load_rows

    grpo = profile.grpo
    if grpo.dataset is not None and Path(grpo.dataset).is_file():
        try:
            count = len(load_rows(grpo.dataset)[: grpo.dataset_limit])
        except (OSError, ValueError) as error:
            return Rows(None, True, f"grpo.dataset: {error}")
        return Rows(count, False, f"grpo.dataset {Path(grpo.dataset).name}")
    if grpo.lcrl is not None and grpo.lcrl.dataset is not None:
        rows = benchmark_rows(grpo.lcrl.dataset)
        return Rows(rows.count, rows.bound, f"grpo.lcrl.dataset: {rows.basis}")
    if profile.data is not None and profile.data.rejection is not None:
        rows = rl_rows(profile.data)
        limit = grpo.dataset_limit
        if limit is not None and (rows.count is None or limit < rows.count):
            return Rows(limit, True, f"grpo.dataset_limit {limit:,}")
        return rows
    return Rows(None, True, f"grpo.dataset {grpo.dataset} is not there yet")


def benchmark_rows(bench: Any) -> Rows:
    """Problems of one benchmark over its languages: its offline copy read, or its limit (hub)."""
    from components.data.benchmarks import load_benchmark

    hub = set(bench.hub_languages) if bench.data_dir else set(bench.languages)
    local = [lang for lang in bench.languages if lang not in hub]
    count, basis = 0, []
    if local and (bench.data_dir is None or not Path(bench.data_dir).is_dir()):
        return Rows(None, True, f"{bench.name}: no offline copy at {bench.data_dir}")
    if local:
        try:
            result = load_benchmark(bench.name, data_dir=bench.data_dir, languages=local, limit=bench.limit,
                                    selection=bench.selection, sample_seed=bench.sample_seed)
        except (OSError, ValueError) as error:  # reported by the preflight's own checks; the count is unknown
            return Rows(None, True, f"{bench.name}: {error}")
        count += len(result.items)
        basis.append(f"{len(result.items):,} read from {Path(bench.data_dir).name}")
    if hub and bench.limit is None:
        return Rows(None, True, f"{bench.name} from the hub in {', '.join(sorted(hub))}, counted when it is read")
    if hub:
        count += bench.limit * len(hub)
        basis.append(f"limit {bench.limit:,} × {len(hub)} hub languages")
    return Rows(count, bool(hub), "; ".join(basis))
