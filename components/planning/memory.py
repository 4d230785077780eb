"""Per-GPU memory of a training stage before it runs: weights, gradients, AdamW states, trl's reference, vLLM.

Written here because neither trl nor accelerate sizes a run before it starts. What
each process holds, in bytes per parameter, follows how the libraries lay it out:

* one process per GPU, no sharding (``single-gpu``, a plain ``MULTI_GPU`` launch):
  the weights in the dtype the trainer loads them in (``b`` bytes; float32 for a
  full-parameter bf16 run, which keeps fp32 master weights under bf16 autocast:
  ``components.training.precision``), gradients in the same dtype, and torch's
  ``AdamW`` keeps its two moments (``exp_avg``, ``exp_avg_sq``) in the parameter's
  dtype: ``b + b + 2b``;
* DeepSpeed with bf16 mixed precision: bf16 weights and gradients plus the fp32
  master copy and two fp32 moments, ``2 + 2 + 12`` (ZeRO, Rajbhandari et al. 2020,
  §3: K = 12); ZeRO-2 shards gradients and optimizer states over the processes,
  ZeRO-3 the weights too;
* FSDP with mixed precision: accelerate upcasts the parameters to fp32 before
  sharding them (``fsdp2_prepare_model``), so ``4 + 4 + 8``, every part sharded.

Mixed precision is the trainer's ``bf16`` flag (the launch's ``mixed_precision``, or bf16 weights under a
launch without it), as ``components.training.precision`` decides it for the trainer. trl's reference model
(``beta > 0`` and no adapter: with LoRA the reference is the model with its adapter disabled) is one more copy
of the weights in the dtype the policy is loaded in (trl builds it in the policy's dtype), sharded under ZeRO-3
and FSDP (trl's ``prepare_deepspeed``/``prepare_fsdp``) and whole on every GPU otherwise. vLLM colocated with
the trainer (``vllm_mode: colocate``) reserves ``gpu_memory_utilization`` of every GPU. A LoRA run trains only the
adapter: its weights are counted, its adapter's gradients and optimizer states
(a small fraction of the weights) are not. Activations, the CUDA context and
fragmentation are not counted either, so the total is a lower bound: a run above
the GPU's memory cannot fit, one below it may still not.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from components.training.precision import Precision

BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}
GIB = 2**30


@dataclass(frozen=True)
class Sharding:
    """How the stage's accelerate config lays a model over its processes."""

    kind: str  # "none", "ZeRO-2", "ZeRO-3" or "FSDP"
    processes: int
    mixed_precision: str

    @property
    def shards_weights(self) -> bool:
        return self.kind in ("ZeRO-3", "FSDP")

    @property
    def shards_states(self) -> bool:
        return self.kind in ("ZeRO-2", "ZeRO-3", "FSDP")


def accelerate_yaml(accelerate_config: str | None) -> dict[str, Any]:
    """The stage's accelerate config as a mapping (``{}`` without one: plain ``python -m``)."""
    from components.training.accelerate import ACCELERATE_CONFIGS

    if accelerate_config is None:
        return {}
    path = ACCELERATE_CONFIGS.get(accelerate_config) or Path(accelerate_config).expanduser()
    return yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}


def sharding_of(config: dict[str, Any], processes: int | None = None) -> Sharding:
    """The sharding an accelerate config asks for, over ``processes`` (default: the processes the config launches,
    ``nodes.accelerate_world``; a multi-node pool's launch gives its own).

    >>> sharding_of({"distributed_type": "DEEPSPEED", "deepspeed_config": {"zero_stage": 3}, "num_processes": 8,
    ...              "mixed_precision": "bf16"})
    Sharding(kind='ZeRO-3', processes=8, mixed_precision='bf16')
    >>> sharding_of({}).kind
    'none'
    """
    from components.training.multinode import accelerate_world

    if processes is None:
        machines, per_machine = accelerate_world(config)
        processes = machines * per_machine
    kind = "none"
    distributed = str(config.get("distributed_type") or "NO")
    if distributed == "DEEPSPEED":
        stage = int((config.get("deepspeed_config") or {}).get("zero_stage", 0))
        kind = {2: "ZeRO-2", 3: "ZeRO-3"}.get(stage, "none")
    elif distributed == "FSDP":
        strategy = str((config.get("fsdp_config") or {}).get("fsdp_sharding_strategy", "FULL_SHARD"))
        kind = "FSDP" if strategy in ("FULL_SHARD", "1") else "none"
    return Sharding(kind, processes, str(config.get("mixed_precision") or "no"))


@dataclass(frozen=True)
class TrainingMemory:
    """GiB per GPU of each part of a training run, and the GPU's memory."""

    weights: float
    gradients: float
    optimizer: float
    reference: float
    vllm: float
    gpu_gib: float

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer + self.reference + self.vllm

    @property
    def fits(self) -> bool:
        return self.total <= self.gpu_gib


def state_bytes(sharding: Sharding, precision: Precision) -> tuple[float, float, float]:
    """Bytes per trained parameter of the weights, gradients and AdamW states, before sharding.

    >>> state_bytes(Sharding("none", 1, "no"), Precision("float32", bf16=True))   # fp32 master weights
    (4, 4, 8)
    >>> state_bytes(Sharding("ZeRO-3", 8, "bf16"), Precision("bfloat16", bf16=True))
    (2, 2, 12)
    >>> state_bytes(Sharding("FSDP", 8, "bf16"), Precision("bfloat16", bf16=True))
    (4, 4, 8)
    """
    b = BYTES[precision.weights]
    if not precision.bf16 or sharding.kind == "none":
        return b, b, 2 * b
    if sharding.kind == "FSDP":
        return 4, 4, 8
    return 2, 2, 12


def training_memory(parameters: float, precision: Precision, sharding: Sharding, *, full: bool, reference: bool,
                    vllm_share: float | None, gpu_gib: float) -> TrainingMemory:
    """Per-GPU GiB of a run on ``sharding`` at the trainer's ``precision``: ``full`` trains every weight,
    ``reference`` holds trl's reference (full runs with ``beta > 0``), ``vllm_share`` is a colocated vLLM's
    ``gpu_memory_utilization``."""
    n = sharding.processes
    loaded = BYTES[precision.weights]
    weight_b, grad_b, optimizer_b = state_bytes(sharding, precision) if full else (loaded, 0, 0)
    weights = parameters * weight_b / (n if sharding.shards_weights else 1)
    gradients = parameters * grad_b / (n if sharding.shards_states else 1)
    optimizer = parameters * optimizer_b / (n if sharding.shards_states else 1)
    ref = parameters * loaded / (n if sharding.shards_weights else 1) if full and reference else 0.0
    vllm = (vllm_share or 0.0) * gpu_gib * GIB
    return TrainingMemory(weights / GIB, gradients / GIB, optimizer / GIB, ref / GIB, vllm / GIB, gpu_gib)


def training_mode(lora: Any) -> str:
    """``LoRA r=8 (alpha 16)`` or ``full (all weights)``."""
    return "full (all weights)" if lora is None else f"LoRA r={lora.r} (alpha {lora.alpha})"
