"""The CPU twins of the sharded GPU launch configs differ from them only where a CPU must.

``components.training.accelerate.CPU_TWINS`` pairs each CPU twin with the GPU config it stands for in CI and on
laptops: the same distributed type, sharding, state dict, mixed precision and wrapping; only the device
(``use_cpu``), the process count and the rendezvous of processes on one machine may differ. accelerate's own
launch parsing (the oracle) reads each twin as the launch its GPU config is: DeepSpeed ZeRO-3 or FSDP2, on as
many processes as the twin says.
"""

from __future__ import annotations

import pytest
import yaml

from components.training.accelerate import ACCELERATE_CONFIGS, CPU_TWINS

WHERE_A_CPU_MUST = {"use_cpu", "num_processes", "main_process_ip", "main_process_port"}


def config(name: str) -> dict:
    return yaml.safe_load(ACCELERATE_CONFIGS[name].read_text(encoding="utf-8"))


@pytest.mark.parametrize(("twin", "gpu"), sorted(CPU_TWINS.items()))
def test_each_cpu_twin_differs_from_its_gpu_config_only_where_a_cpu_must(twin, gpu):
    cpu, original = config(twin), config(gpu)
    differing = {key for key in cpu.keys() | original.keys() if cpu.get(key) != original.get(key)}
    assert differing <= WHERE_A_CPU_MUST, differing - WHERE_A_CPU_MUST
    assert (cpu["use_cpu"], cpu["num_processes"], cpu["main_process_ip"]) == (True, 2, "127.0.0.1")


@pytest.mark.parametrize(("twin", "flag", "processes"), [("cpu-zero3-2", "use_deepspeed", 2),
                                                         ("cpu-fsdp-2", "use_fsdp", 2)])
def test_accelerate_reads_each_twin_as_its_sharded_launch(twin, flag, processes):
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser

    args = launch_command_parser().parse_args(["--config_file", str(ACCELERATE_CONFIGS[twin]), "train.py"])
    args, _, _ = _validate_launch_command(args)
    assert getattr(args, flag) and args.num_processes == processes and not args.cpu  # torchrun, not one process
    if flag == "use_fsdp":
        assert (str(args.fsdp_version), args.fsdp_state_dict_type) == ("2", "FULL_STATE_DICT")
    else:
        assert int(args.zero_stage) == 3 and args.mixed_precision == "bf16"
