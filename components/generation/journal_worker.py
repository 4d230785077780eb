"""One generation task of a fanned-out evaluation, in its own process: a model, its benchmarks, their journals.

``python -m components.generation.journal_worker --work WORK.json --result RESULT.json``

The process loads the model once (on the GPUs ``CUDA_VISIBLE_DEVICES`` leaves it,
set by whoever started it: a thread of the command on one node, Ray on a
cluster), and generates each group of files (benchmarks with the same sampling
and stop strings) through ``generate_into_journals``: the backend calls a
sequential evaluation makes for the same files, chunk by chunk into the
journals. It publishes nothing: the evaluation that follows finds every prompt
in the journals and finishes the files (one publisher per product). Its own
process means its memory is freed when it ends, and its GPUs are its own.

A language shard is a file of its own (``out_path`` names it) whose prompts are
the benchmark's prompts ``indices``; the caller moves its rows into the
benchmark's journal under those indices (``shard_rows``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from components.progress import install_child_handler
from components.quiet import quiet_libraries
from components.generation.resumable import GenerationJob, generate_into_journals, read_done, unique_rows
from components.records import BenchmarkItem
from components.settings import CHECKED_UPSTREAM, REGISTRIES, ModelSettings, SamplingSettings


class JournalFile(BaseModel):
    """One file to generate: its rows' items and prompts, where its journals go."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    items: list[dict]
    prompts: list[str]
    out_path: str


class JournalGroup(BaseModel):
    """Files generated with one sampling and one set of stop strings (their prompts share backend calls)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sampling: SamplingSettings
    stop: list[str] = []
    files: list[JournalFile]


class JournalWork(BaseModel):
    """What one generation process does: one model, groups of files."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: ModelSettings
    cache_dir: str
    groups: list[JournalGroup]
    label: str | None = None  # names the progress line (the unit: model, benchmark, language)


def run_work(work: JournalWork) -> dict:
    """Generate every group's missing prompts into its journals; counts and the backend's time."""
    from components.generation import build_generator

    generator = build_generator(work.model, Path(work.cache_dir))
    generated, seconds, first, last = 0, 0.0, None, None
    try:
        for group in work.groups:
            jobs = [GenerationJob([BenchmarkItem.from_dict(i) for i in f.items], f.prompts, Path(f.out_path))
                    for f in group.files]
            results, backend = generate_into_journals(generator, jobs, group.sampling, group.stop, work.label)
            generated += sum(result.prompts_generated for result in results)
            seconds += backend.seconds
            first, last = first or backend.first_call_at, backend.last_return_at or last
    finally:
        close = getattr(generator, "close", None)
        if close is not None:
            close()
    return {"prompts_generated": generated, "backend_seconds": round(seconds, 4), "first_call_at": first,
            "last_return_at": last}


def shard_rows(shard_out: Path, indices: list[int], samples: int) -> list[dict]:
    """The complete prompts of a shard's journals, renumbered to the benchmark's prompt indices.

    >>> import tempfile
    >>> out = Path(tempfile.mkdtemp()) / "g.jsonl"
    >>> _ = (out.parent / "g.jsonl.partial.1").write_text('{"prompt_index": 1, "sample_index": 0}\\n')
    >>> shard_rows(out, [4, 9], 1)
    [{'prompt_index': 9, 'sample_index': 0}]
    """
    found = sorted(shard_out.parent.glob(shard_out.name + ".partial*"))
    rows = unique_rows(row for path in found for row in read_done(path)[0])
    counts: dict[int, int] = {}
    for row in rows:
        counts[row["prompt_index"]] = counts.get(row["prompt_index"], 0) + 1
    return [{**row, "prompt_index": indices[row["prompt_index"]]} for row in rows if counts[row["prompt_index"]] == samples]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", required=True)
    parser.add_argument("--result", required=True)
    args = parser.parse_args(argv)
    install_child_handler()  # progress lines go to the log as marked lines; the task that waits shows them
    quiet_libraries()
    work = JournalWork.model_validate_json(Path(args.work).read_text(encoding="utf-8"),  # written from a checked profile
                                           context={REGISTRIES: CHECKED_UPSTREAM})
    started = time.time()
    result = run_work(work)
    result["seconds"] = round(time.time() - started, 3)
    Path(args.result).write_text(json.dumps(result), encoding="utf-8")


if __name__ == "__main__":  # a generation worker: its settings come from a work file written from a checked profile
    from components.settings import use_registries

    use_registries(CHECKED_UPSTREAM)
    main()
