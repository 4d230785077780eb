"""Generate into a JSONL file chunk by chunk, resuming after an interruption.

Each process appends its rows to its own journal, ``<out>.partial.<pid>``,
after every chunk of prompts, each row with its ``prompt_index``. A restarted
run adopts every journal it finds (its own, those of killed processes, and the
older shared ``<out>.partial``): a prompt counts as done once all its ``n``
samples are there, a torn last line or a half-written prompt is generated
again, and a sample written twice is kept once. The finished file is written
to a temporary name and renamed onto ``<out>`` (``os.replace`` is atomic on
one file system), so a reader sees either no file or a whole one, and it is
refused unless it holds every sample of every prompt exactly once. So a killed
evaluation never pays twice for finished generations.

Two processes must not generate into one ``<out>`` at the same time: the
caller holds the directory's lock (the Prefect tasks do), and adopting
journals deletes them. Time spent inside the backend is measured separately
from everything else (``backend_seconds``), for the evaluation overhead
benchmark.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from components.generation.base import Generator, truncate_at_stops
from components.progress import generation_progress
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
    first_call_at: float | None = None  # wall clock (time.time()) when the first backend call started
    last_return_at: float | None = None  # ... and when the last one returned; None without a call

    def to_dict(self) -> dict:
        return asdict(self)


def read_done(partial: Path) -> tuple[list[dict], set[int]]:
    """Rows of one journal and the prompt indices they touch (a torn last line is dropped)."""
    if not partial.exists():
        return [], set()
    rows: list[dict] = []
    for line in partial.read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            break  # the process died mid-write: that chunk is generated again
    return rows, {int(row["prompt_index"]) for row in rows}


def journals(out_path: Path) -> list[Path]:
    """Every journal of ``out_path``: per-process ones and the older shared ``.partial``."""
    return sorted(out_path.parent.glob(out_path.name + ".partial*"))


def adopt_journals(out_path: Path, samples: int) -> tuple[Path, list[dict]]:
    """This process's journal, holding the complete prompts of every journal found; the others are removed.

    A prompt is complete when all ``samples`` of it are there; a sample seen twice is kept once.
    """
    found = journals(out_path)
    rows = unique_rows(row for path in found for row in read_done(path)[0])
    per_prompt: dict[int, int] = {}
    for row in rows:
        per_prompt[row["prompt_index"]] = per_prompt.get(row["prompt_index"], 0) + 1
    kept = [row for row in rows if per_prompt[row["prompt_index"]] == samples]
    own = out_path.with_name(f"{out_path.name}.partial.{os.getpid()}")
    _write_rows(own, kept)
    for path in found:
        if path != own:
            path.unlink(missing_ok=True)
    return own, kept


def unique_rows(rows) -> list[dict]:
    """Rows keyed by (prompt_index, sample_index), the first of each key kept."""
    seen: dict[tuple[int, int], dict] = {}
    for row in rows:
        seen.setdefault((int(row["prompt_index"]), int(row.get("sample_index", 0))), row)
    return list(seen.values())


def write_journal(out_path: Path, name: str, rows: list[dict]) -> Path:
    """``rows`` as the journal ``<out>.partial.<name>`` (atomically): the next run generating ``out_path`` adopts
    them like the journal of a killed process (a language shard generated elsewhere hands its rows over so)."""
    path = out_path.with_name(f"{out_path.name}.partial.{name}")
    _write_rows(path, rows)
    return path


def _write_rows(path: Path, rows: list[dict]) -> None:
    """Write ``rows`` to ``path`` through a temporary file and an atomic rename."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with temporary.open("w", encoding="utf-8") as handle:
        handle.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def _append(partial: Path, rows: list[dict]) -> None:
    with partial.open("a", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


@dataclass(frozen=True)
class GenerationJob:
    """One output file's prompts: ``items[i]`` and ``prompts[i]`` become the rows of ``out_path``."""

    items: Sequence[BenchmarkItem]
    prompts: Sequence[str]
    out_path: Path

    def __post_init__(self) -> None:
        if len(self.items) != len(self.prompts):
            raise ValueError(f"{self.out_path}: {len(self.items)} items but {len(self.prompts)} prompts")


@dataclass(frozen=True)
class JournalResult:
    """What ``generate_into_journals`` did for one job: its journal and prompt counts."""

    journal: Path
    prompts_generated: int
    prompts_resumed: int
    tokens: int


@dataclass
class BackendTime:
    """Time inside the backend: the sum, and the wall-clock start of the first call and end of the last."""

    seconds: float = 0.0
    first_call_at: float | None = None
    last_return_at: float | None = None

    def call(self, generate):
        """Run ``generate()`` and account for it."""
        wall, start = time.time(), time.perf_counter()
        result = generate()
        self.seconds += time.perf_counter() - start
        self.first_call_at = self.first_call_at or wall
        self.last_return_at = time.time()
        return result


def generate_into_journals(
    generator: Generator,
    jobs: Sequence[GenerationJob],
    sampling: SamplingSettings,
    stop: Sequence[str] = (),
    label: str | None = None,
) -> tuple[list[JournalResult], BackendTime]:
    """Generate every job's missing prompts into its journal; return per-job results and the backend's time.

    The missing prompts of all jobs go to the backend together, in chunks of
    ``sampling.batch_size`` taken across job boundaries: with a batch size at
    least the number of missing prompts, several benchmarks cost one backend
    call (an engine such as vLLM schedules one large batch far better than
    several small ones). Each chunk's rows are appended to their own job's
    journal before the next chunk starts, so an interruption keeps them, and
    a progress line ``generate <label>`` (default: the backend's name) says how
    many of the missing prompts are done and the backend's tokens/s.
    """
    adopted = [adopt_journals(Path(job.out_path), sampling.n) for job in jobs]
    done = [{row["prompt_index"] for row in rows} for _, rows in adopted]
    tokens = [sum(int(row.get("num_tokens", 0)) for row in rows) for _, rows in adopted]
    pending = [(j, i) for j, job in enumerate(jobs) for i in range(len(job.prompts)) if i not in done[j]]
    backend = BackendTime()
    chunk = max(1, sampling.batch_size)
    with generation_progress(label or getattr(generator, "name", "model"), len(pending)) as progress:
        for begin in range(0, len(pending), chunk):
            part = pending[begin : begin + chunk]
            before, spent = progress.done, backend.seconds
            with progress.running(len(part)):
                samples = backend.call(lambda: generator.generate([jobs[j].prompts[i] for j, i in part], sampling,
                                                                  stop=stop))
            for j in sorted({j for j, _ in part}):
                tokens[j] += _journal_chunk(jobs[j], adopted[j][0], part, samples, j, stop)
            if progress.done == before:  # a backend that does not batch through run_batches: the chunk is the step
                progress.advance(len(part), sum(s.num_tokens for prompt_samples in samples for s in prompt_samples),
                                 backend.seconds - spent)
    results = [
        JournalResult(journal=adopted[j][0], prompts_generated=sum(1 for jj, _ in pending if jj == j),
                      prompts_resumed=len(done[j]), tokens=tokens[j])
        for j in range(len(jobs))
    ]
    return results, backend


def _journal_chunk(job: GenerationJob, journal: Path, part: list[tuple[int, int]], samples, j: int,
                   stop: Sequence[str]) -> int:
    """Append job ``j``'s rows of one chunk to its journal; the tokens they hold."""
    indices = [i for (jj, i) in part if jj == j]
    job_samples = [s for (jj, _), s in zip(part, samples) if jj == j]
    rows = _rows_for_chunk(job.items, job.prompts, indices, job_samples)
    for row in rows:
        row["completion"] = truncate_at_stops(row["completion"], stop)
    _append(journal, rows)
    return sum(row["num_tokens"] for row in rows)


def generate_to_jsonl(
    generator: Generator,
    items: Sequence[BenchmarkItem],
    prompts: Sequence[str],
    sampling: SamplingSettings,
    out_path: str | Path,
    stop: Sequence[str] = (),
    label: str | None = None,
) -> GenerationSummary:

    """Generate ``sampling.n`` samples per prompt into ``out_path`` (JSONL, one row per sample).

    ``stop``: the backend stops early at these strings where it can, and completions
    are cut at the earliest one (the base-model few-shot "next question" label);
    ``num_tokens`` still counts what was generated; ``label`` names the progress line. Prompts whose samples a journal
    already holds (an interrupted run, or ``generate_into_journals`` pooling several
    files into one backend call) are not generated again.
    """
    out_path = Path(out_path)
    job = GenerationJob(items, prompts, out_path)
    [result], backend = generate_into_journals(generator, [job], sampling, stop, label)
    all_rows = _finish(out_path, result.journal, len(prompts) * sampling.n)
    return GenerationSummary(
        path=str(out_path),
        rows=len(all_rows),
        prompts=len(prompts),
        prompts_generated=result.prompts_generated,
        prompts_resumed=result.prompts_resumed,
        tokens=result.tokens,
        backend_seconds=round(backend.seconds, 4),
        first_call_at=backend.first_call_at,
        last_return_at=backend.last_return_at,
    )


def _finish(out_path: Path, partial: Path, expected: int) -> list[dict]:
    """Every row of the journal, sorted, written to ``out_path`` (atomically); refused unless all ``expected`` are there."""
    rows = sorted(unique_rows(read_done(partial)[0]), key=lambda row: (row["prompt_index"], row["sample_index"]))
    if len(rows) != expected:
        raise RuntimeError(f"{out_path}: {len(rows)} rows in {partial.name}, expected {expected}; not written "
                           "(was the journal changed by another process?)")
    _write_rows(out_path, rows)
    partial.unlink()
    return rows


def _rows_for_chunk(items, prompts, indices: list[int], samples) -> list[dict]:
    """One row per sample, each tagged with the index of its prompt."""
    rows: list[dict] = []
    for index, prompt_samples in zip(indices, samples):
        for row in generation_rows([items[index]], [prompts[index]], [prompt_samples]):
            row["prompt_index"] = index
            rows.append(row)
    return rows
