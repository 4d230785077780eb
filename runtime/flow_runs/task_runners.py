"""The Prefect task runner a profile's ``execution`` section names, and the resources each task asks for.

* ``threads``: Prefect's ``ThreadPoolTaskRunner`` with ``concurrent_tasks()``
  threads; each task starts its own generation process, so threads are enough
  (they only wait) and the GPU slot a task holds is its process's
  ``CUDA_VISIBLE_DEVICES``.
* ``ray``: ``prefect_ray.RayTaskRunner`` on the cluster at ``address`` (a local
  Ray with ``workers`` CPUs without one); every task is submitted inside
  ``prefect_ray.context.remote_options(num_gpus=gpus_per_task)``, so Ray places
  it on a node with free GPUs and sets the worker's ``CUDA_VISIBLE_DEVICES``.
* ``dask``: ``prefect_dask.DaskTaskRunner`` on the scheduler at ``address`` (a
  local cluster of ``workers`` single-threaded workers without one); tasks ask
  for ``gpus_per_task`` of the ``GPU`` resource (``dask.annotate``), which GPU
  workers declare (``dask worker … --resources GPU=1``, one per GPU, each with
  its own ``CUDA_VISIBLE_DEVICES``, as ``dask-cuda`` starts them).

``prefect-ray`` and ``prefect-dask`` are optional extras (``pip install
polyreason[ray]`` / ``[dask]``); a runner whose package is missing is refused
with the command that installs it.
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext
from typing import Any, Iterator

from components.settings import ExecutionSettings, ProfileError

EXTRAS = {"ray": "prefect_ray", "dask": "prefect_dask"}


def runner_problem(execution: ExecutionSettings) -> str | None:
    """Why the runner cannot start here (its package is missing), or ``None``."""
    import importlib.util

    module = EXTRAS.get(execution.runner)
    if module is None or importlib.util.find_spec(module) is not None:
        return None
    return (f"execution.runner: {execution.runner!r} needs {module.replace('_', '-')}; install it with "
            f"pip install 'polyreason[{execution.runner}]'")


def task_runner(execution: ExecutionSettings) -> Any:
    """A Prefect task runner for ``execution`` (see the module docstring)."""
    problem = runner_problem(execution)
    if problem is not None:
        raise ProfileError(problem)
    if execution.runner == "ray":
        from prefect_ray import RayTaskRunner

        local = {"num_cpus": execution.workers} if execution.workers and execution.address is None else {}
        return RayTaskRunner(address=execution.address, init_kwargs=local)
    if execution.runner == "dask":
        from prefect_dask import DaskTaskRunner

        if execution.address is not None:
            return DaskTaskRunner(address=execution.address)
        workers = execution.workers or 1
        return DaskTaskRunner(cluster_kwargs={"n_workers": workers, "threads_per_worker": 1, "processes": True,
                                              "resources": {"GPU": execution.gpus_per_task}})
    from prefect.task_runners import ThreadPoolTaskRunner

    return ThreadPoolTaskRunner(max_workers=execution.concurrent_tasks())


@contextmanager
def task_resources(execution: ExecutionSettings) -> Iterator[None]:
    """Submit the tasks in this block with the GPUs each needs on a cluster (Ray's ``num_gpus``, Dask's ``GPU``)."""
    if execution.runner == "ray":
        from prefect_ray.context import remote_options

        manager: Any = remote_options(num_gpus=execution.gpus_per_task)
    elif execution.runner == "dask" and execution.gpus_per_task:
        import dask

        manager = dask.annotate(resources={"GPU": execution.gpus_per_task})
    else:
        manager = nullcontext()
    with manager:
        yield
