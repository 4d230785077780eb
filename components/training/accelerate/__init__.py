"""The accelerate launch configs polyreason ships, by name (``sft.accelerate_config: cpu``).

They live inside the package (``components`` ships its YAML files as package
data), so an installed polyreason finds them wherever it runs; a profile may
also give the path of a config of its own. Each file's comment says what it
launches. The sharded GPU launches have CPU twins (``CPU_TWINS``) that run the
same sharding on two CPU processes (CI, laptops).

>>> sorted(ACCELERATE_CONFIGS)[:4]
['cpu', 'cpu-2', 'cpu-fsdp-2', 'cpu-zero3-2']
"""

from __future__ import annotations

from pathlib import Path

DIRECTORY = Path(__file__).resolve().parent

ACCELERATE_CONFIGS: dict[str, Path] = {
    "cpu": DIRECTORY / "cpu.yaml",  # one CPU process (tests, laptops, CI)
    "cpu-2": DIRECTORY / "cpu-2.yaml",  # two CPU processes over gloo (multi-process tests)
    "single-gpu": DIRECTORY / "single-gpu.yaml",  # one GPU
    "multi-gpu-zero2": DIRECTORY / "multi-gpu-zero2.yaml",  # every GPU of a machine, DeepSpeed ZeRO-2
    "multi-gpu-zero3": DIRECTORY / "multi-gpu-zero3.yaml",  # every GPU of one or more machines, DeepSpeed ZeRO-3
    "multi-gpu-fsdp": DIRECTORY / "multi-gpu-fsdp.yaml",  # every GPU of one or more machines, FSDP2
    "multi-gpu-zero3-2": DIRECTORY / "multi-gpu-zero3-2.yaml",  # two GPUs, DeepSpeed ZeRO-3 (AdaMame's Qwen3-4B)
    "multi-gpu-fsdp-4": DIRECTORY / "multi-gpu-fsdp-4.yaml",  # four GPUs, FSDP2, full state dict (LcRL)
    "cpu-zero3-2": DIRECTORY / "cpu-zero3-2.yaml",  # the CPU twin of multi-gpu-zero3-2 (two processes, gloo)
    "cpu-fsdp-2": DIRECTORY / "cpu-fsdp-2.yaml",  # the CPU twin of multi-gpu-fsdp-4 (two processes, gloo)
}

# each CPU twin and the GPU config it stands for on a CPU (tests/unit: they differ only where a CPU must)
CPU_TWINS: dict[str, str] = {"cpu-zero3-2": "multi-gpu-zero3-2", "cpu-fsdp-2": "multi-gpu-fsdp-4"}
