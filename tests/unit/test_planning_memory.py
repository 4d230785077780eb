"""Per-GPU memory of a training run (``components.planning.memory``), against numbers computed by hand."""

from __future__ import annotations

import pytest

from components.planning.memory import Sharding, accelerate_yaml, sharding_of, training_memory
from components.training.precision import Precision, training_precision

BF16 = Precision("bfloat16", bf16=True)  # bf16 weights under a bf16 launch (DeepSpeed, FSDP)

GIB = 2**30
P = 8.0e9  # an 8B model


@pytest.mark.parametrize(("config", "kind", "processes"), [
    ("single-gpu", "none", 1), ("multi-gpu-zero2", "ZeRO-2", 8), ("multi-gpu-zero3", "ZeRO-3", 8),
    ("multi-gpu-fsdp", "FSDP", 8), (None, "none", 1),
])
def test_the_shipped_accelerate_configs_say_how_they_shard(config, kind, processes):
    sharding = sharding_of(accelerate_yaml(config))
    assert (sharding.kind, sharding.processes) == (kind, processes)


def test_full_run_on_one_gpu_keeps_fp32_master_weights():
    # bf16 weights on one GPU train under bf16 autocast from fp32 master weights: 8e9 × (4 weights + 4 gradients +
    # 8 AdamW moments) bytes + trl's reference in the policy's dtype (8e9 × 4) + 0.35 × 80 GiB of vLLM
    precision = training_precision("bfloat16", accelerate_yaml("single-gpu"), full=True)
    assert precision == Precision("float32", bf16=True)
    memory = training_memory(P, precision, Sharding("none", 1, "no"), full=True, reference=True,
                             vllm_share=0.35, gpu_gib=80)
    assert memory.weights == pytest.approx(32e9 / GIB)  # 29.80
    assert memory.gradients == pytest.approx(32e9 / GIB)
    assert memory.optimizer == pytest.approx(64e9 / GIB)  # 59.60
    assert memory.reference == pytest.approx(32e9 / GIB)
    assert memory.vllm == pytest.approx(28.0)
    assert memory.total == pytest.approx(160e9 / GIB + 28.0)  # 177.0 GiB: does not fit 80
    assert not memory.fits


def test_a_launch_without_mixed_precision_on_the_cpu_trains_in_fp32():
    precision = training_precision("float32", accelerate_yaml("cpu"), full=True)
    memory = training_memory(P, precision, Sharding("none", 1, "no"), full=True, reference=False,
                             vllm_share=None, gpu_gib=80)
    assert precision == Precision("float32", bf16=False) and memory.total == pytest.approx(128e9 / GIB)


def test_zero3_shards_weights_gradients_optimizer_and_reference():
    # DeepSpeed bf16: (2 + 2 + 12) bytes per parameter over 8 GPUs = 16e9 bytes; reference 2 bytes / 8 = 2e9
    memory = training_memory(P, BF16, Sharding("ZeRO-3", 8, "bf16"), full=True, reference=True,
                             vllm_share=0.35, gpu_gib=80)
    assert (memory.weights, memory.gradients, memory.optimizer, memory.reference) == pytest.approx(
        (2e9 / GIB, 2e9 / GIB, 12e9 / GIB, 2e9 / GIB))
    assert memory.total == pytest.approx(18e9 / GIB + 28.0)  # 44.76 GiB
    assert memory.fits


def test_zero2_keeps_whole_weights_and_reference_on_every_gpu():
    # weights 2 bytes whole, gradients 2/8, optimizer 12/8, reference 2 whole
    memory = training_memory(P, BF16, Sharding("ZeRO-2", 8, "bf16"), full=True, reference=True,
                             vllm_share=None, gpu_gib=80)
    assert memory.total == pytest.approx((16e9 + 2e9 + 12e9 + 16e9) / GIB)  # 42.84 GiB


def test_fsdp_upcasts_to_fp32_before_sharding():
    # (4 + 4 + 8) bytes per parameter over 8 GPUs, a bf16 reference sharded: 16e9 + 2e9 bytes
    memory = training_memory(P, BF16, Sharding("FSDP", 8, "bf16"), full=True, reference=True,
                             vllm_share=None, gpu_gib=80)
    assert (memory.weights, memory.gradients, memory.optimizer) == pytest.approx((4e9 / GIB, 4e9 / GIB, 8e9 / GIB))
    assert memory.total == pytest.approx(18e9 / GIB)


def test_lora_counts_the_frozen_weights_only_and_no_reference():
    memory = training_memory(P, BF16, Sharding("none", 1, "no"), full=False, reference=True,
                             vllm_share=0.35, gpu_gib=80)
    assert (memory.gradients, memory.optimizer, memory.reference) == (0, 0, 0)
    assert memory.total == pytest.approx(16e9 / GIB + 28.0)
