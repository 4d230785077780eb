"""Where a recipe's evaluations run: one after another in the command's process, or fanned out to workers.

``runner``: ``sequential`` (each model's evaluation generates in the command's
process, one model after the other); ``threads`` (one node: a pool of
``workers`` threads, each starting one generation process per task, pinned to
its GPUs with ``CUDA_VISIBLE_DEVICES`` from ``gpus``, one GPU per task: a generation
process runs its model on one GPU); ``ray`` (Prefect's
``RayTaskRunner`` from ``prefect-ray``: each task asks Ray for ``gpus_per_task``
GPUs, and Ray pins the worker to them); ``dask`` (``DaskTaskRunner`` from
``prefect-dask``: each task asks for ``gpus_per_task`` of the workers'
``GPU`` resource). ``address`` is the cluster to join (``auto`` or
``ray://host:10001`` for Ray, ``tcp://host:8786`` for Dask; unset: a local
cluster started for the run).

A task generates one model's benchmarks (``split: model``: the backend calls of
one sequential run, benchmarks pooled as it pools them) or one model x benchmark
(``split: benchmark``); a benchmark named in ``shard_languages`` is generated in
one task per language. Scoring, reports and MLflow runs then follow in the
command's process exactly as without fan-out, from the journals the tasks wrote.

Every field is operational: the same generations, computed elsewhere. Greedy
decoding and backends that seed each prompt (vLLM, API backends) give the same
rows however prompts are split; a sampled transformers run seeds each batch, so
splitting benchmarks or languages draws other (equally valid) samples, as
pooling them does.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from components.settings.base import MAX_SECONDS, MAX_WORKERS, StrictSettings, changed_fields

RUNNERS = ("sequential", "threads", "ray", "dask")
CLUSTER_ONLY = ("address",)
FANNED_OUT_ONLY = ("workers", "split", "shard_languages", "cpu_threads", "timeout_s", "gpus", "gpus_per_task")


class ExecutionSettings(StrictSettings):
    """How a recipe's evaluations are spread over workers and GPUs (see the module docstring)."""

    OPERATIONAL = {
        "runner": "where the generations are computed, not what they are",
        "workers": "how many tasks run at once, not what they compute",
        "gpus": "which GPUs compute the generations, not what they are",
        "gpus_per_task": "how many GPUs a task holds, not what it computes",
        "split": "how the work is cut into tasks, not what it computes",
        "shard_languages": "how the work is cut into tasks, not what it computes",
        "address": "which cluster computes the generations, not what they are",
        "cpu_threads": "torch threads per generation process: the same tokens, faster or slower",
        "timeout_s": "how long a task's generation process may run, not what it computes",
    }

    runner: Literal["sequential", "threads", "ray", "dask"] = "sequential"
    workers: int | None = Field(default=None, ge=1, le=MAX_WORKERS)
    gpus: list[Annotated[int, Field(ge=0, le=MAX_WORKERS)]] = Field(default_factory=list)
    gpus_per_task: int = Field(default=1, ge=0, le=MAX_WORKERS)
    split: Literal["model", "benchmark"] = "model"
    shard_languages: list[str] = Field(default_factory=list)
    address: str | None = None
    cpu_threads: int | None = Field(default=None, ge=1, le=MAX_WORKERS)
    timeout_s: int = Field(default=86400, ge=1, le=MAX_SECONDS)

    @model_validator(mode="after")
    def _fields_of_this_runner(self) -> "ExecutionSettings":
        unused = changed_fields(self, FANNED_OUT_ONLY) if self.runner == "sequential" else []
        if self.runner in ("ray", "dask"):
            unused += changed_fields(self, ("gpus",)) + (["workers"] if self.address and self.workers else [])
        else:
            unused += changed_fields(self, CLUSTER_ONLY)
        if unused:
            raise ValueError(f"{', '.join(unused)}: not read by the {self.runner!r} runner (threads reads workers and "
                             "gpus; ray and dask read address, and workers for the local cluster they start without "
                             "one; every runner but sequential reads split, shard_languages, gpus_per_task, "
                             "cpu_threads and timeout_s); remove them or choose the runner that reads them")
        if self.runner == "threads" and self.workers is None and not self.gpus:
            raise ValueError("workers: the threads runner needs workers (tasks at once) or the node's gpus (one task "
                             "per GPU slot)")
        if len(set(self.gpus)) < len(self.gpus):
            raise ValueError(f"gpus {self.gpus}: a GPU is listed twice")
        if self.gpus_per_task > 1:
            raise ValueError(f"gpus_per_task {self.gpus_per_task}: a generation process runs its model on one GPU "
                             "(the backends set up no tensor parallelism), so more would sit idle; use 1 (or 0 on a "
                             "CPU cluster)")
        if self.gpus and self.gpus_per_task == 0:
            raise ValueError("gpus_per_task 0: the threads runner hands each task one of the listed gpus; use 1, or "
                             "list no gpus")
        return self

    @property
    def fans_out(self) -> bool:
        return self.runner != "sequential"

    def gpu_slots(self) -> list[list[int]]:
        """The node's GPUs in slots of ``gpus_per_task`` (threads runner), one slot per task at a time.

        >>> ExecutionSettings(runner="threads", gpus=[0, 1, 2]).gpu_slots()
        [[0], [1], [2]]
        """
        size = self.gpus_per_task
        return [self.gpus[i : i + size] for i in range(0, len(self.gpus), size)] if self.gpus else []

    def concurrent_tasks(self) -> int | None:
        """Tasks at once: ``workers``, else one per GPU slot of the threads runner (``None``: the cluster decides).

        >>> ExecutionSettings(runner="threads", gpus=list(range(8))).concurrent_tasks()
        8
        """
        return self.workers or (len(self.gpu_slots()) if self.runner == "threads" else None)
