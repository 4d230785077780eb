"""A training run's identity: its world size, its directory, the run key its checkpoints carry.

Expected values are hand-derived: the shipped ``cpu-2`` config launches two processes, two nodes of eight
processes are sixteen, and a checkpoint resumes only under the key its marker was written with.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.settings import GRPOStageSettings, SFTSettings
from components.training.multinode import Rendezvous
from components.training.runner import COMPLETE_MARKER, TrainingJob, last_complete_checkpoint, start_of, world_size
from runtime.project import Project
from runtime.processes.trainer import WorldSizeKey, run_identity, training_dir, training_settings

TWO_NODES = {"POLYREASON_NNODES": "2", "POLYREASON_NODE_RANK": "0", "POLYREASON_NPROC_PER_NODE": "8",
             "POLYREASON_MASTER_ADDR": "node0"}


def sft_job(**settings) -> TrainingJob:
    return TrainingJob(stage="sft", sft=SFTSettings(**settings), model="m", dataset="d.parquet")


@pytest.mark.parametrize("config, expected", [(None, 1), ("cpu", 1), ("cpu-2", 2), ("multi-gpu-fsdp", 8)])
def test_world_size_on_one_node_is_the_accelerate_configs_process_count(config, expected):
    assert world_size(SFTSettings(accelerate_config=config)) == expected


def test_world_size_of_a_users_config_and_of_one_naming_no_count(tmp_path):
    three, unnamed = tmp_path / "three.yaml", tmp_path / "unnamed.yaml"
    three.write_text("distributed_type: MULTI_GPU\nnum_processes: 3\n")
    unnamed.write_text("distributed_type: 'NO'\n")
    assert world_size(SFTSettings(accelerate_config=str(three))) == 3
    assert world_size(SFTSettings(accelerate_config=str(unnamed))) == 1  # accelerate's default


def test_world_size_on_several_nodes_is_nodes_times_processes():
    settings = SFTSettings(accelerate_config="multi-gpu-fsdp")
    assert world_size(settings, Rendezvous.from_env(TWO_NODES)) == 16
    assert world_size(settings, Rendezvous.from_env({**TWO_NODES, "POLYREASON_NNODES": "1"})) == 8


def test_world_size_key_tells_one_node_from_two(monkeypatch):
    inputs = {"sft": SFTSettings(accelerate_config="multi-gpu-fsdp"), "project": Project("/p")}
    key = WorldSizeKey()
    one = key.compute_key(None, inputs, {})
    for name, value in TWO_NODES.items():
        monkeypatch.setenv(name, value)
    two = key.compute_key(None, inputs, {})
    assert (one, two) == ("world_size=8", "world_size=16")
    assert key.compute_key(None, {"project": Project("/p")}, {}) is None  # no training section: no part


def test_training_settings_found_in_a_job_or_a_section():
    job = sft_job(accelerate_config="cpu-2")
    assert training_settings({"sft": job.sft}) is job.sft
    assert training_settings({"job": job}) is job.sft
    assert training_settings({"x": 1}) is None


def test_training_dir_changes_with_code_and_world_size_and_nothing_else(tmp_path):
    project, job = Project(str(tmp_path)), sft_job()
    base = training_dir(project, job, "code-a", 1, "model-fp", "data-fp")
    assert training_dir(project, job, "code-a", 1, "model-fp", "data-fp") == base  # a re-run finds its directory
    assert training_dir(project, job, "code-b", 1, "model-fp", "data-fp") != base  # an edit, a library upgrade
    assert training_dir(project, job, "code-a", 16, "model-fp", "data-fp") != base  # 2x8 is not 1x8
    assert training_dir(project, job, "code-a", 1, "model-fp", "other-data") != base
    assert training_dir(project, sft_job(learning_rate=1e-3), "code-a", 1, "model-fp", "data-fp") != base


def test_the_reward_audit_is_no_part_of_a_grpo_runs_identity():
    section = GRPOStageSettings(model={"model": "m"}, dataset="d.jsonl")
    audited = section.model_copy(update={"audit": section.audit.model_copy(update={"fail_vlb": 0.9})})
    jobs = [TrainingJob(stage="grpo", grpo=s, model="m", dataset="d.jsonl") for s in (section, audited)]
    assert run_identity(jobs[0], "c", 1) == run_identity(jobs[1], "c", 1)


def mark(trainer: Path, step: int, run_key: str | None) -> Path:
    checkpoint = trainer / f"checkpoint-{step}"
    checkpoint.mkdir(parents=True)
    (checkpoint / COMPLETE_MARKER).write_text(json.dumps({"step": step, "run_key": run_key}))
    return checkpoint


def test_a_checkpoint_resumes_only_under_its_own_run_key(tmp_path):
    one, two = mark(tmp_path, 1, "key-a"), mark(tmp_path, 2, "key-b")
    (tmp_path / "checkpoint-3").mkdir()  # killed during the save: no marker
    assert last_complete_checkpoint(tmp_path, "key-a") == one
    assert last_complete_checkpoint(tmp_path, "key-b") == two
    assert last_complete_checkpoint(tmp_path, "key-c") is None  # another key's checkpoints are never continued
    assert last_complete_checkpoint(tmp_path) == two  # a job without a key: the last complete one


def test_where_a_run_started():
    assert start_of(None) == {"start": "trained from step 0", "start_step": 0}
    assert start_of(Path("trainer/checkpoint-12")) == {"start": "resumed from step 12 of this key", "start_step": 12}
