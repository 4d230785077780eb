"""How a training run holds its numbers: trl's ``bf16`` flag and the dtype the trained weights are loaded in.

Decided from the weights' dtype (``model.dtype``, ``auto`` resolved for the device), the launch's accelerate config
(``distributed_type``, ``mixed_precision``) and whether every weight is trained; the trainer and the plan's memory
use the same answer.

* One flag for the launch and the trainer. DeepSpeed refuses a launch whose bf16 differs from the trainer's
  (``ds bf16.enabled=True vs hf bf16=False``), and under FSDP the trainer's flag silently wins over the launch's.
  So trl's ``bf16``/``fp16`` are the launch's ``mixed_precision``, and ``bf16`` when the weights are bfloat16
  under a launch that leaves mixed precision to trl (``no``: the single-GPU and CPU configs). bf16 autocast runs on
  CPU too (torch's CPU autocast), so a CPU launch that says bf16 trains as its GPU config does.
* fp32 master weights for every full-parameter bf16 run. A weight stored in bf16 and updated by AdamW in bf16 loses
  most updates: near |w| = 0.01 bf16's spacing is about 6e-5, above a 1e-5 learning rate's steps. DeepSpeed keeps
  fp32 master weights in its optimizer (its module in bf16); FSDP2 under mixed precision trains fp32 parameters
  (accelerate upcasts them before sharding) and computes in bf16. Any other launch — one process, or DDP's full
  replicas — loads the weights in float32 and trains under trl's bf16 autocast, as transformers' Trainer does with
  ``bf16=True`` and an fp32 model; trl then builds its reference model in the policy's dtype (float32) too, and
  the trained model is saved in float32. A LoRA run keeps its frozen base in bf16 (peft keeps the adapter in fp32).

>>> training_precision("bfloat16", {"distributed_type": "NO"}, full=True)
Precision(weights='float32', bf16=True, fp16=False)
>>> training_precision("bfloat16", {"distributed_type": "DEEPSPEED", "mixed_precision": "bf16"}, full=True)
Precision(weights='bfloat16', bf16=True, fp16=False)
>>> training_precision("float32", {"distributed_type": "FSDP", "mixed_precision": "bf16"}, full=True)
Precision(weights='float32', bf16=True, fp16=False)
>>> training_precision("bfloat16", {}, full=False).weights, training_precision("float32", {}, full=True)
('bfloat16', Precision(weights='float32', bf16=False, fp16=False))
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

SHARDED_MASTER_WEIGHTS = ("DEEPSPEED", "FSDP")  # launches whose sharding keeps fp32 master weights itself


@dataclass(frozen=True)
class Precision:
    """``weights``: the dtype the trained model is loaded in; ``bf16``/``fp16``: trl's flags (autocast, DeepSpeed's
    bf16 or fp16, FSDP's mixed precision)."""

    weights: str
    bf16: bool
    fp16: bool = False


def launch_mixed_precision(launch: Mapping[str, Any]) -> str:
    """The accelerate config's ``mixed_precision`` (``no`` when it names none).

    >>> launch_mixed_precision({"mixed_precision": "bf16"}), launch_mixed_precision({})
    ('bf16', 'no')
    """
    return str(launch.get("mixed_precision") or "no").lower()


def training_precision(dtype: str, launch: Mapping[str, Any], *, full: bool) -> Precision:
    """The run's precision for weights of ``dtype`` under the accelerate config ``launch`` (its YAML as a mapping;
    ``{}`` without one); ``full``: every weight is trained (no LoRA)."""
    mixed = launch_mixed_precision(launch)
    bf16 = mixed == "bf16" or (dtype == "bfloat16" and mixed == "no")
    distributed = str(launch.get("distributed_type") or "NO")
    master_in_fp32 = full and bf16 and dtype == "bfloat16" and distributed not in SHARDED_MASTER_WEIGHTS
    return Precision("float32" if master_in_fp32 else dtype, bf16, fp16=mixed == "fp16")


def trainer_precision(trainer: Any) -> dict[str, Any]:
    """What the trainer trains in, read from it once training has prepared it: trl's ``bf16`` and the dtype of the
    policy's parameters (FSDP's upcast fp32, DeepSpeed's bf16 module, a single process's fp32 master weights)."""
    parameter = next(trainer.model.parameters())
    return {"bf16": bool(trainer.args.bf16), "weights_dtype": str(parameter.dtype).removeprefix("torch.")}
