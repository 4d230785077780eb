"""Running one generation task of a fanned-out evaluation: its locks, its GPUs, its process, its hand-over.

A task (``tasks.fanout.generate_unit_task``) generates one model's files — whole
benchmarks, or one language of a sharded benchmark — in a process of its own
(``components.generation.journal_worker``), so that:

* its GPUs are its own: on one node the task takes a slot of the node's GPUs
  (``gpu_slot``: a queue of slots per process, so two tasks never share one and a
  task waits for a free one) and the process starts with ``CUDA_VISIBLE_DEVICES``
  set to it; on Ray the worker the task runs in was given ``num_gpus`` GPUs and
  Ray's own ``CUDA_VISIBLE_DEVICES`` passes to the process;
* its memory (a model per task) is freed when it ends, and it ends with the run
  (``runtime.processes.children``: the lifeline, ended by PID on an interrupt).

While the process writes, the task holds the write lock of each benchmark
directory it generates (in path order, as the pooled generation does), or of
the shard's own scratch directory beside it (``<dir>.shard-<lang>``), so that
shards of one benchmark run at once. A finished shard hands its rows over as a
journal of the benchmark (``<out>.partial.shard-<lang>``, renumbered to the
benchmark's prompt indices) under the benchmark's lock, unless the benchmark
was finished meanwhile. The evaluation that follows adopts the journals and
publishes each benchmark's file as one sequential run would.
"""

from __future__ import annotations

import json
import os
import queue
import socket
import sys
import tempfile
import threading
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Iterator

from components.generation.journal_worker import JournalFile, JournalGroup, JournalWork, shard_rows
from components.generation.resumable import journals, write_journal
from components.config import REVEALED
from components.settings import ExecutionSettings
from runtime.artifacts import writing
from runtime.outputs import GenerationUnit, UnitFile, UnitResult
from runtime.processes.children import run_stage_process
from runtime.project import Project

_SLOTS: dict[tuple[tuple[int, ...], ...], queue.Queue] = {}
_SLOTS_GUARD = threading.Lock()


@contextmanager
def gpu_slot(slots: list[list[int]]) -> Iterator[list[int] | None]:
    """Hold one of ``slots`` (GPU ids) for the block, waiting for a free one; ``None`` without slots."""
    if not slots:
        yield None
        return
    key = tuple(tuple(slot) for slot in slots)
    with _SLOTS_GUARD:
        if key not in _SLOTS:
            _SLOTS[key] = queue.Queue()
            for slot in slots:
                _SLOTS[key].put(list(slot))
    slot = _SLOTS[key].get()
    try:
        yield slot
    finally:
        _SLOTS[key].put(slot)


def shard_directory(file: UnitFile) -> Path:
    """Where a language shard's journals are written: a scratch directory beside its benchmark's."""
    directory = Path(file.out).parent
    return directory.with_name(f"{directory.name}.shard-{file.language}")


def worker_out(file: UnitFile) -> Path:
    """The output path the generation process journals ``file`` under."""
    return shard_directory(file) / Path(file.out).name if file.language else Path(file.out)


def process_env(gpus: list[int] | None, execution: ExecutionSettings) -> dict[str, str]:
    """The generation process's environment: the task's GPUs, its torch threads."""
    env = dict(os.environ)
    if gpus is not None:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(str(gpu) for gpu in gpus)
    if execution.cpu_threads:
        env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = str(execution.cpu_threads)
    return env


def run_unit(unit: GenerationUnit, execution: ExecutionSettings, project: Project) -> UnitResult:
    """Generate ``unit``'s files into their journals in a process of its own; what it did, where and when."""
    started = time.time()
    locks = sorted({shard_directory(f) if f.language else Path(f.out).parent for g in unit.groups for f in g.files})
    with ExitStack() as stack:
        for directory in locks:
            stack.enter_context(writing(directory))
        groups = [JournalGroup(sampling=g.sampling, stop=g.stop, files=[
            JournalFile(items=f.items, prompts=f.prompts, out_path=str(worker_out(f)))
            for f in g.files if not Path(f.out).exists()]) for g in unit.groups]  # another run may have finished one
        groups = [group for group in groups if group.files]
        if not groups:
            return UnitResult(name=unit.name, model=unit.model.tag, started_at=started, ended_at=time.time(),
                              host=socket.gethostname(), skipped=True)
        with gpu_slot(execution.gpu_slots() if execution.runner == "threads" else []) as gpus:
            env = process_env(gpus, execution)
            done = generate_in_process(JournalWork(model=unit.model.model, cache_dir=str(project.cache_dir),
                                                   groups=groups, label=unit.name), unit.name, env,
                                       execution.timeout_s, project)
        for file in (f for g in unit.groups for f in g.files if f.language):
            hand_over(file, unit)
    return UnitResult(name=unit.name, model=unit.model.tag, prompts_generated=done["prompts_generated"],
                      backend_seconds=done["backend_seconds"], started_at=started, ended_at=time.time(),
                      host=socket.gethostname(), gpus=env.get("CUDA_VISIBLE_DEVICES"))


def generate_in_process(work: JournalWork, name: str, env: dict[str, str], timeout_s: int, project: Project) -> dict:
    """Run the generation process on ``work`` and wait; its result. Its log is kept in ``.polyreason/generation``."""
    logs = Path(project.root) / ".polyreason" / "generation"
    logs.mkdir(parents=True, exist_ok=True)
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
    with tempfile.TemporaryDirectory(prefix="unit-", dir=logs) as scratch:
        work_path, result_path = Path(scratch) / "work.json", Path(scratch) / "result.json"
        work_path.write_text(work.model_dump_json(context=REVEALED), encoding="utf-8")  # the worker calls the API
        command = [sys.executable, "-m", "components.generation.journal_worker", "--work", str(work_path),
                   "--result", str(result_path)]
        run_stage_process(command, logs / f"{safe}.log", timeout_s, f"generation {name}", env=env)
        return json.loads(result_path.read_text(encoding="utf-8"))


def hand_over(file: UnitFile, unit: GenerationUnit) -> None:
    """Move a finished shard's rows into its benchmark's journals (see the module docstring)."""
    out, scratch = Path(file.out), worker_out(file)
    samples = next(g.sampling.n for g in unit.groups if file in g.files)
    with writing(out.parent):
        if not out.exists():
            write_journal(out, f"shard-{file.language}", shard_rows(scratch, file.indices, samples))
    for journal in journals(scratch):
        journal.unlink(missing_ok=True)
