"""Generate into a JSONL file chunk by chunk, resuming after an interruption.

Rows are appended to ``<out>.partial`` after every chunk of prompts, each with
its ``prompt_index``; a restarted run reads the partial file, skips the prompts
already done and appends the rest, then renames it to ``<out>``. So a killed
evaluation never pays twice for finished generations. Time spent inside the
backend is measured separately from everything else (``backend_seconds``), for
the evaluation overhead benchmark.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from components.data.prompts import truncate_at_stops
from components.generation.base import Generator
from components.records import BenchmarkItem, generation_rows

if TYPE_CHECKING:
    from components.settings import SamplingSettings


@dataclass(frozen=True)
class GenerationSummary:
    """What one ``generate_to_jsonl`` call did."""

    path: str
    rows: int
    prompts: int
    prompts_generated: int
    prompts_resumed: int
    tokens: int
    backend_seconds: float

    def to_dict(self) -> dict:
        return asdict(self)


def read_done(partial: Path) -> tuple[list[dict], set[int]]:
    """Rows already written and the prompt indices they cover (a torn last line is dropped)."""
    if not partial.exists():
        return [], set()
    rows: list[dict] = []
    for line in partial.read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            break  # the process died mid-write: that chunk is generated again
    return rows, {int(row["prompt_index"]) for row in rows}


def _append(partial: Path, rows: list[dict]) -> None:
    with partial.open("a", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


def generate_to_jsonl(
    generator: Generator,
    items: Sequence[BenchmarkItem],
    prompts: Sequence[str],
    sampling: SamplingSettings,
    out_path: str | Path,
    stop: Sequence[str] = (),
) -> GenerationSummary:

    """Generate ``sampling.n`` samples per prompt into ``out_path`` (JSONL, one row per sample).

    ``stop``: the backend stops early at these strings where it can, and completions
    are cut at the earliest one (the base-model few-shot "next question" label);
    ``num_tokens`` still counts what was generated.
    """
    if len(items) != len(prompts):
        raise ValueError(f"{len(items)} items but {len(prompts)} prompts")
    out_path = Path(out_path)
    partial = out_path.with_name(out_path.name + ".partial")
    done_rows, done = read_done(partial)
    if partial.exists():  # drop a torn last line before appending after it
        partial.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in done_rows), encoding="utf-8")
    if done_rows and len({r["prompt_index"] for r in done_rows}) != len(done):
        raise ValueError(f"{partial}: inconsistent prompt indices")
    todo = [index for index in range(len(prompts)) if index not in done]
    tokens = sum(int(row.get("num_tokens", 0)) for row in done_rows)
    backend_seconds = 0.0
    chunk = max(1, sampling.batch_size)
    for begin in range(0, len(todo), chunk):
        indices = todo[begin : begin + chunk]
        start = time.perf_counter()
        samples = generator.generate([prompts[i] for i in indices], sampling, stop=stop)
        backend_seconds += time.perf_counter() - start
        rows = _rows_for_chunk(items, prompts, indices, samples)
        for row in rows:
            row["completion"] = truncate_at_stops(row["completion"], stop)
        tokens += sum(row["num_tokens"] for row in rows)
        _append(partial, rows)
    all_rows, _ = read_done(partial)
    all_rows.sort(key=lambda row: (row["prompt_index"], row["sample_index"]))
    out_path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in all_rows), encoding="utf-8")
    partial.unlink()
    return GenerationSummary(
        path=str(out_path),
        rows=len(all_rows),
        prompts=len(prompts),
        prompts_generated=len(todo),
        prompts_resumed=len(done),
        tokens=tokens,
        backend_seconds=round(backend_seconds, 4),
    )


def _rows_for_chunk(items, prompts, indices: list[int], samples) -> list[dict]:
    """One row per sample, each tagged with the index of its prompt."""
    rows: list[dict] = []
    for index, prompt_samples in zip(indices, samples):
        for row in generation_rows([items[index]], [prompts[index]], [prompt_samples]):
            row["prompt_index"] = index
            rows.append(row)
    return rows
