"""Per-GPU memory of a training run (``components.planning.memory``), against numbers computed by hand."""

from __future__ import annotations

import pytest

from components.planning.memory import Sharding, accelerate_yaml, sharding_of, training_memory

GIB = 2**30
P = 8.0e9  # an 8B model


@pytest.mark.parametrize(("config", "kind", "processes"), [
    ("single-gpu", "none", 1), ("multi-gpu-zero2", "ZeRO-2", 8), ("multi-gpu-zero3", "ZeRO-3", 8),
    ("multi-gpu-fsdp", "FSDP", 8), (None, "none", 1),
])
def test_the_shipped_accelerate_configs_say_how_they_shard(config, kind, processes):
    sharding = sharding_of(accelerate_yaml(config))
    assert (sharding.kind, sharding.processes) == (kind, processes)


def test_full_run_on_one_gpu_holds_everything_in_bf16():
    # 8e9 × (2 weights + 2 gradients + 4 AdamW moments) bytes + an 8e9 × 2-byte reference + 0.35 × 80 GiB of vLLM
    memory = training_memory(P, "bfloat16", Sharding("none", 1, "no"), full=True, reference=True,
                             vllm_share=0.35, gpu_gib=80)
    assert memory.weights == pytest.approx(16e9 / GIB)  # 14.90
    assert memory.gradients == pytest.approx(16e9 / GIB)
    assert memory.optimizer == pytest.approx(32e9 / GIB)  # 29.80
    assert memory.reference == pytest.approx(16e9 / GIB)
    assert memory.vllm == pytest.approx(28.0)
    assert memory.total == pytest.approx(80e9 / GIB + 28.0)  # 102.5 GiB: does not fit 80
    assert not memory.fits


def test_zero3_shards_weights_gradients_optimizer_and_reference():
    # DeepSpeed bf16: (2 + 2 + 12) bytes per parameter over 8 GPUs = 16e9 bytes; reference 2 bytes / 8 = 2e9
    memory = training_memory(P, "bfloat16", Sharding("ZeRO-3", 8, "bf16"), full=True, reference=True,
                             vllm_share=0.35, gpu_gib=80)
    assert (memory.weights, memory.gradients, memory.optimizer, memory.reference) == pytest.approx(
        (2e9 / GIB, 2e9 / GIB, 12e9 / GIB, 2e9 / GIB))
    assert memory.total == pytest.approx(18e9 / GIB + 28.0)  # 44.76 GiB
    assert memory.fits


def test_zero2_keeps_whole_weights_and_reference_on_every_gpu():
    # weights 2 bytes whole, gradients 2/8, optimizer 12/8, reference 2 whole
    memory = training_memory(P, "bfloat16", Sharding("ZeRO-2", 8, "bf16"), full=True, reference=True,
                             vllm_share=None, gpu_gib=80)
    assert memory.total == pytest.approx((16e9 + 2e9 + 12e9 + 16e9) / GIB)  # 42.84 GiB


def test_fsdp_upcasts_to_fp32_before_sharding():
    # (4 + 4 + 8) bytes per parameter over 8 GPUs, a bf16 reference sharded: 16e9 + 2e9 bytes
    memory = training_memory(P, "bfloat16", Sharding("FSDP", 8, "bf16"), full=True, reference=True,
                             vllm_share=None, gpu_gib=80)
    assert (memory.weights, memory.gradients, memory.optimizer) == pytest.approx((4e9 / GIB, 4e9 / GIB, 8e9 / GIB))
    assert memory.total == pytest.approx(18e9 / GIB)


def test_lora_counts_the_frozen_weights_only_and_no_reference():
    memory = training_memory(P, "bfloat16", Sharding("none", 1, "no"), full=False, reference=True,
                             vllm_share=0.35, gpu_gib=80)
    assert (memory.gradients, memory.optimizer, memory.reference) == (0, 0, 0)
    assert memory.total == pytest.approx(16e9 / GIB + 28.0)
