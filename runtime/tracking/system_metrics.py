"""MLflow system metrics on the runs of stages that train: CPU, memory, disk, network, GPU.

MLflow's ``SystemMetricsMonitor`` samples the machine on a thread (psutil for CPU, memory,
disk and network; NVML through ``pynvml``, which the GPU install brings, for each GPU's
utilization and memory) and logs ``system/...`` metrics to one run by its id, so a slow
step can be read beside the loss. It samples the whole machine, so the trainer's own
process (``accelerate launch``) is measured from the flow's process. The interval is an
operational setting (``tracking.system_metrics_interval_s``; 0 turns it off). Only the training
stages log them: on an evaluation run, MLflow's charts and its compare view would open on the
machine's CPU curve instead of the run's own numbers.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

MONITORED_STAGES = ("sft", "grpo")  # they train


@contextmanager
def system_metrics(run_id: str, tracking_uri: str, interval_s: float) -> Iterator[None]:
    """Log the machine's system metrics to the run ``run_id`` of the MLflow server at ``tracking_uri`` every
    ``interval_s`` seconds while the block runs (the run by its id: ``runtime.tracking`` opens it and starts
    this monitor, so this module names none of its types)."""
    if not interval_s:
        yield
        return
    from mlflow.system_metrics.system_metrics_monitor import SystemMetricsMonitor

    monitor = SystemMetricsMonitor(run_id, sampling_interval=interval_s, tracking_uri=tracking_uri)
    monitor.start()
    try:
        yield
    finally:
        monitor.finish()  # the last samples are flushed before the run is closed
