"""The plan's world size is the launch's: accelerate's own reading of a config and a multi-node pool's job.

The oracle is accelerate itself: its launch command's parser and validation read the
config file as ``accelerate launch --config_file`` does, and ``prepare_multi_gpu_env``
sets the ``nnodes`` × ``nproc_per_node`` torchrun receives. A GRPO stage placed on a
pool whose job sets two nodes of eight processes is planned on sixteen: by hand, 16 per
device × 16 processes × 4 accumulation = 1,024 completions per step, 128 prompts of 8.
"""

from __future__ import annotations

import argparse

import pytest
import yaml

from components.config import load_profile_dict
from components.planning import plan_profile
from components.planning.launch import stage_launch
from components.training.multinode import Rendezvous, accelerate_world

CONFIGS = [  # num_machines, num_processes
    (1, 8), (2, 16), (2, 15), (4, 8),
]


def accelerates_world(tmp_path, config: dict, flags: list[str]) -> int:
    """nnodes × nproc_per_node as ``accelerate launch --config_file`` prepares them for torchrun."""
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from accelerate.utils.launch import prepare_multi_gpu_env

    path = tmp_path / "accelerate.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    args = launch_command_parser().parse_args(["--config_file", str(path), *flags, "train.py"])
    args, _, _ = _validate_launch_command(args)
    prepare_multi_gpu_env(args)
    return int(getattr(args, "nnodes", 1) or 1) * int(args.nproc_per_node)


def multi_gpu(machines: int, processes: int) -> dict:
    return {"compute_environment": "LOCAL_MACHINE", "distributed_type": "MULTI_GPU", "num_machines": machines,
            "num_processes": processes, "machine_rank": 1 if machines > 1 else 0, "main_process_ip": "n0",
            "main_process_port": 29500, "mixed_precision": "no", "use_cpu": False}


@pytest.mark.parametrize(("machines", "processes"), CONFIGS)
def test_the_world_of_a_config_is_the_one_accelerate_launches(tmp_path, machines, processes):
    config = multi_gpu(machines, processes)
    planned_machines, per_machine = accelerate_world(config)
    assert planned_machines * per_machine == accelerates_world(tmp_path, config, [])


def test_a_pools_launch_flags_give_accelerate_the_pools_world(tmp_path):
    rendezvous = Rendezvous(nnodes=2, node_rank=1, nproc_per_node=8, master_addr="n0", master_port=29500)
    assert accelerates_world(tmp_path, multi_gpu(1, 8), rendezvous.launch_flags()) == 16


def grpo_profile(placement: dict) -> dict:
    return {"name": "placed", "placement": placement,
            "sft": {"model": {"model": "m"}, "accelerate_config": "multi-gpu-zero3"},
            "grpo": {"dataset": "d.jsonl", "accelerate_config": "multi-gpu-zero3", "per_device_train_batch_size": 16,
                     "gradient_accumulation_steps": 4, "max_steps": 10, "sampling": {"n": 8, "temperature": 1.0}}}


def test_a_stage_placed_on_a_multinode_pool_is_planned_on_its_nodes(monkeypatch):
    monkeypatch.setenv("POLYREASON_NNODES", "2")
    monkeypatch.setenv("POLYREASON_NPROC_PER_NODE", "8")
    profile = load_profile_dict(grpo_profile({"grpo": "gpu-train-2x8"}))
    grpo = plan_profile(profile, sections=["grpo"]).as_dict()["stages"]["grpo"]
    lines = dict(map(tuple, grpo["lines"]))
    assert (grpo["processes"], grpo["machines"]) == (16, 2)
    assert "16 processes (2 machines × 8: work pool 'gpu-train-2x8'" in grpo["where"]
    assert "= 1,024 completions = 128 prompts × 8 per step" in lines["batch"]
    assert lines["GPUs"].startswith("16 (accelerate multi-gpu-zero3, ZeRO-3 sharding)")


def test_an_unplaced_stage_keeps_its_config_and_a_placed_one_says_where_its_nodes_come_from(monkeypatch):
    monkeypatch.delenv("POLYREASON_NNODES", raising=False)
    profile = load_profile_dict(grpo_profile({"grpo": "gpu-train-2x8"}))
    launch = stage_launch(profile, "grpo", profile.grpo)
    assert launch.processes == 8 and "POLYREASON_NNODES" in launch.text()
    two_nodes = {"POLYREASON_NNODES": "2", "POLYREASON_NPROC_PER_NODE": "8"}
    assert stage_launch(profile, "sft", profile.sft, two_nodes).processes == 8  # sft is not placed
    assert stage_launch(profile, "grpo", profile.grpo, two_nodes).processes == 16


def test_several_nodes_without_an_accelerate_config_are_refused_naming_the_keys(monkeypatch):
    monkeypatch.setenv("POLYREASON_NNODES", "2")
    profile = grpo_profile({"grpo": "gpu-train-2x8"})
    profile["grpo"]["accelerate_config"] = None
    problems = plan_profile(load_profile_dict(profile), sections=["grpo"]).problems
    assert [p.keys for p in problems] == [("grpo.accelerate_config", "placement.grpo")]
