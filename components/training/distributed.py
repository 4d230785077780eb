"""The launch's sharding as the trainer applies it: the same on CPU processes as on GPUs, and recorded.

``accelerate launch`` hands its config to each trainer process in environment variables
(``ACCELERATE_USE_DEEPSPEED`` and the ``ACCELERATE_DEEPSPEED_*`` fields, ``ACCELERATE_USE_FSDP`` and ``FSDP_*``,
``ACCELERATE_MIXED_PRECISION``). accelerate 1.16 applies two of them only to a world of accelerator processes:

* FSDP: ``AcceleratorState`` turns a data-parallel world into FSDP in its branch for accelerator worlds
  (``MULTI_GPU``, ``MULTI_XPU`` …); a world of CPU processes is ``MULTI_CPU`` and trains as plain DDP, exit 0,
  no warning. ``apply_launch`` marks the CPU world (process group already up, over gloo) as a multi-device
  one just before the trainer builds its ``Accelerator``, so accelerate's own branch takes the launch's FSDP
  plugin and mixed precision, and FSDP2 shards the model as it does on GPUs.
* DeepSpeed: ``PartialState`` starts DeepSpeed's communication layer (``deepspeed.comm``) only on
  accelerators. On CPU processes the engines still come up (the trainer's, trl's reference model's), but
  DeepSpeed then counts a world of one and refuses the batch sizes (``train_batch_size … 4 != 2 * 1 * 1``).
  ``apply_launch`` starts it on gloo, over the process group the trainer's configuration made.

On GPUs neither change applies: accelerate already does both. ``distributed_type`` is what the trainer's
accelerator ended up using (``FSDP``, ``DEEPSPEED``, ``MULTI_CPU``, ``MULTI_GPU``, ``NO``), which ``result.json``
records, so a run that was meant to shard and did not is visible.

>>> launch_backend({"ACCELERATE_USE_FSDP": "true"}), launch_backend({"ACCELERATE_USE_DEEPSPEED": "True"})
('FSDP', 'DEEPSPEED')
>>> launch_backend({})
'none'
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any


def launch_backend(env: Mapping[str, str] | None = None) -> str:
    """The sharding backend ``accelerate launch`` asked this process for: ``DEEPSPEED``, ``FSDP`` or ``none``."""
    env = os.environ if env is None else env
    if env.get("ACCELERATE_USE_DEEPSPEED", "false").lower() == "true":
        return "DEEPSPEED"
    if env.get("ACCELERATE_USE_FSDP", "false").lower() == "true":
        return "FSDP"
    return "none"


def apply_launch(args: Any, env: Mapping[str, str] | None = None) -> None:
    """Between the trainer's configuration (trl's ``args``) and the trainer: on CPU processes, make the launch's
    FSDP or DeepSpeed take effect as accelerate makes it on GPUs (the module docstring)."""
    backend = launch_backend(env)
    if backend == "none" or args.device.type != "cpu":  # args.device sets up the process group and PartialState
        return
    from accelerate.state import PartialState
    from accelerate.utils import DistributedType

    if PartialState().distributed_type != DistributedType.MULTI_CPU:
        return  # one process: nothing to shard over
    if backend == "FSDP":
        PartialState._shared_state["distributed_type"] = DistributedType.MULTI_GPU
        return
    import deepspeed

    deepspeed.init_distributed(dist_backend="gloo", auto_mpi_discovery=False)


def distributed_type(accelerator: Any) -> str:
    """The distributed type the trainer's accelerator used (``accelerate.DistributedType``'s value)."""
    kind = accelerator.distributed_type
    return str(getattr(kind, "value", kind))
