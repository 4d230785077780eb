"""Two-process training on CPU (accelerate launching torchrun workers that talk over gloo).

* GRPO with the PCS reward: the τ curriculum sums its Pass@SLC counts over both
  ranks and takes the decisions a one-process run takes on the same data. The
  policy is a scripted tiny model (``tests/helpers/scripted_model.py``): every
  prompt ends in its language's prefix-control opener, and the model answers
  ``Donc \\boxed{13}`` after either — correct everywhere, French, so the two
  French questions pass SLC ≥ τ and the two Japanese ones do not: Pass@SLC is
  exactly 0.5 per generation batch, and a check that saw one rank alone would
  count 4 eligible responses, not 8.
* LoRA SFT: a two-process run killed after a complete checkpoint resumes from
  it and finishes with both processes.
* LoRA SFT on two "nodes" (two launchers on this machine, one trainer process
  each, ranks from the rendezvous variables a multi-node work pool sets): killed
  after a complete checkpoint, restarted, it resumes from it.
* LoRA SFT on two "nodes" of two processes each against the ``cpu-2`` config, whose
  ``num_processes`` says 2: the world is 4 processes (the launch's, not the YAML's),
  and the steps are the plan's at 4 processes, not at 2.

Both go through the trainer entry point as the tasks launch it (``run_trainer``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from components.training.accelerate import ACCELERATE_CONFIGS
from tests.e2e.conftest import free_port

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
QUESTIONS = [("fr", "Janet a 16 œufs et en vend 3. Combien en reste-t-il ?"),
             ("fr", "Paul a 20 billes et en donne 7. Combien lui en reste-t-il ?"),
             ("ja", "ジャネットは卵を16個持っていて、3個売ります。残りは？"),
             ("ja", "ポールはビー玉を20個持っていて、7個あげます。残りは？")]
CHECKS = [  # by hand: 8 eligible (correct, boxed, no repetition) per step, the 4 French ones pass SLC >= tau
    {"step": 1, "pass_at_slc": 0.5, "eligible": 8.0, "tau_before": 0.1, "tau_after": 0.2},
    {"step": 2, "pass_at_slc": 0.5, "eligible": 8.0, "tau_before": 0.2, "tau_after": 0.3},
]


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (torchrun starts its workers in sessions of their own)."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            children = (task / "children").read_text().split() if (task / "children").is_file() else []
            found += [int(c) for c in children]
            todo += [int(c) for c in children]
    return found


def kill_tree(process: subprocess.Popen) -> None:
    """SIGKILL the launcher and every worker, as a crash of the machine's job would."""
    for pid in [process.pid, *descendants(process.pid)]:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    process.wait()


def two_process_config(path: Path) -> Path:
    text = ACCELERATE_CONFIGS["cpu-2"].read_text(encoding="utf-8")
    path.write_text(text.replace("main_process_port: 29517", f"main_process_port: {free_port()}"), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def scripted(tmp_path_factory) -> dict:
    from components.data.prompts import build_prompts
    from components.records import BenchmarkItem
    from components.settings import PromptSettings
    from tests.helpers.scripted_model import build_scripted_model
    from tests.helpers.tiny_model import build_tokenizer

    root = tmp_path_factory.mktemp("multiprocess")
    rows = [{"id": str(i), "lang": lang, "question": q, "gold": "13"} for i, (lang, q) in enumerate(QUESTIONS)]
    items = [BenchmarkItem(r["id"], "rl", r["lang"], r["question"], "13") for r in rows]
    tokenizer = build_tokenizer()
    last = {tokenizer(p)["input_ids"][-1] for p in build_prompts(items, PromptSettings(style="prefix",
                                                                                        instruction="none"))}
    model = build_scripted_model(root / "model", {token: "Donc \\boxed{13}" for token in last})
    data = root / "rl.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return {"root": root, "model": model, "data": data}


def grpo_result(scripted: dict, processes: int, accelerate_config: str, out: Path) -> dict:
    from components.settings import GRPOStageSettings
    from components.training.runner import TrainingJob
    from runtime.processes.trainer import run_trainer

    reward = {"name": "pcs", "params": {"require_think": False, "extraction": "lenient", "tau_interval": 1,
                                        "tau_pass_threshold": 0.5, "tau_window": "batch"}}
    section = GRPOStageSettings(
        model={"model": str(scripted["model"]), "device": "cpu", "dtype": "float32"}, dataset=str(scripted["data"]),
        prompt={"style": "prefix", "instruction": "none"}, rewards=[reward], max_steps=2, beta=0.0,
        per_device_train_batch_size=8 // processes, sampling={"n": 2, "temperature": 1.0, "max_new_tokens": 12},
        save_steps=100, accelerate_config=accelerate_config, cpu_threads=1)
    job = TrainingJob(stage="grpo", grpo=section, model=str(scripted["model"]), dataset=str(scripted["data"]))
    run_trainer(job, out)
    return json.loads((out / "result.json").read_text(encoding="utf-8"))


def test_tau_curriculum_sums_both_ranks_like_one_process(scripted, tmp_path):
    one = grpo_result(scripted, 1, "cpu", tmp_path / "one")
    two = grpo_result(scripted, 2, str(two_process_config(tmp_path / "cpu-2.yaml")), tmp_path / "two")
    assert (one["num_processes"], two["num_processes"]) == (1, 2)
    assert one["curricula"]["pcs"]["checks"] == CHECKS
    assert two["curricula"]["pcs"]["checks"] == CHECKS  # both ranks' counts: 8 eligible, the same decisions
    assert one["curricula"]["pcs"]["tau"] == two["curricula"]["pcs"]["tau"] == 0.3


# the killed SFT runs: a checkpoint every 2 steps, killed at the first, so 12 leave 10 steps to kill it in
STEPS = 12


def test_two_process_sft_resumes_after_a_kill(tiny_model_dir, tmp_path):
    from components.data.datasets import write_table
    from components.settings import SFTSettings
    from components.training.runner import TrainingJob, job_launch_command, last_complete_checkpoint, write_job
    from runtime.processes.trainer import run_trainer

    rows = [{"id": str(i), "lang": lang, "question": q, "gold": "13", "prompt": q, "completion": "Donc \\boxed{13}"}
            for i, (lang, q) in enumerate(QUESTIONS)]
    data = write_table(rows, tmp_path / "sft.parquet", "sft")

    def job(config: Path) -> TrainingJob:
        sft = SFTSettings(model={"model": str(tiny_model_dir), "device": "cpu", "dtype": "float32"}, template="plain",
                          max_length=64, per_device_train_batch_size=1, max_steps=STEPS, save_steps=2,
                          save_total_limit=None, gradient_checkpointing=False, accelerate_config=str(config),
                          cpu_threads=1)
        return TrainingJob(stage="sft", sft=sft, model=str(tiny_model_dir), dataset=str(data))

    out = tmp_path / "sft"
    first = job(two_process_config(tmp_path / "first.yaml"))
    command = job_launch_command(sys.executable, first, write_job(first, out), out)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    with (out / "killed.log").open("w") as log:
        process = subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        deadline = time.time() + 300
        while last_complete_checkpoint(out / "trainer") is None:
            assert process.poll() is None, (out / "killed.log").read_text()[-4000:]
            assert time.time() < deadline, "no complete checkpoint within 5 minutes"
            time.sleep(0.05)
        kill_tree(process)
    checkpoint = last_complete_checkpoint(out / "trainer")
    assert not (out / "result.json").exists() and int(checkpoint.name.split("-")[1]) < STEPS

    run_trainer(job(two_process_config(tmp_path / "second.yaml")), out)
    result = json.loads((out / "result.json").read_text(encoding="utf-8"))
    assert result["resumed_from"] == str(checkpoint)
    assert (result["global_step"], result["num_processes"]) == (STEPS, 2)
    assert (out / "adapter" / "adapter_model.safetensors").is_file()


LEAD = ("import sys; from pathlib import Path; from components.training.runner import read_job; "
        "from runtime.processes.trainer import run_trainer; run_trainer(read_job(sys.argv[1]), Path(sys.argv[2]))")


def test_two_node_sft_is_killed_and_resumes(tiny_model_dir, tmp_path):
    """Two "nodes" on one machine: node 0 runs the training task (as its flow run would) under ``node lead``,
    node 1 runs ``node follow``; each starts one trainer process of a two-process job that meets in a static
    rendezvous (gloo). Both are killed after a complete checkpoint, restarted, and the run resumes from it."""
    from components.data.datasets import write_table
    from components.settings import SFTSettings
    from components.training.runner import TrainingJob, last_complete_checkpoint, write_job

    rows = [{"id": str(i), "lang": lang, "question": q, "gold": "13", "prompt": q, "completion": "Donc \\boxed{13}"}
            for i, (lang, q) in enumerate(QUESTIONS)]
    sft = SFTSettings(model={"model": str(tiny_model_dir), "device": "cpu", "dtype": "float32"}, template="plain",
                      max_length=64, per_device_train_batch_size=1, max_steps=STEPS, save_steps=2, save_total_limit=None,
                      gradient_checkpointing=False, accelerate_config="cpu-2", cpu_threads=1)
    out = tmp_path / "sft"
    job = TrainingJob(stage="sft", sft=sft, model=str(tiny_model_dir),
                      dataset=str(write_table(rows, tmp_path / "sft.parquet", "sft")))
    job_path = write_job(job, out)

    def start_nodes() -> tuple[subprocess.Popen, subprocess.Popen]:
        return start_two_nodes(job_path, out, tmp_path, (tmp_path / "nodes.log").open("a"), per_node=1)

    lead, follower = start_nodes()
    deadline = time.time() + 300
    while last_complete_checkpoint(out / "trainer") is None:
        assert lead.poll() is None and follower.poll() is None, (tmp_path / "nodes.log").read_text()[-4000:]
        assert time.time() < deadline, "no complete checkpoint within 5 minutes"
        time.sleep(0.05)
    kill_tree(lead)
    kill_tree(follower)
    checkpoint = last_complete_checkpoint(out / "trainer")
    assert not (out / "result.json").exists() and int(checkpoint.name.split("-")[1]) < STEPS

    lead, follower = start_nodes()
    assert lead.wait(timeout=600) == 0, (tmp_path / "nodes.log").read_text()[-4000:]
    assert follower.wait(timeout=60) == 0  # node 0's run is done: the follower ends by itself
    result = json.loads((out / "result.json").read_text(encoding="utf-8"))
    assert result["resumed_from"] == str(checkpoint)
    assert (result["global_step"], result["num_processes"]) == (STEPS, 2)
    assert (out / "adapter" / "adapter_model.safetensors").is_file()


def test_two_nodes_of_two_processes_train_a_world_of_four(tiny_model_dir, tmp_path):
    """2 nodes x 2 processes with an accelerate config that says ``num_processes: 2``: the trainer sees a world of
    4 (a launch that kept the YAML's 2 would train 4 steps per epoch, not 2), as the plan at 4 processes says."""
    from components.data.datasets import write_table
    from components.planning.optimizer_steps import sft_steps
    from components.settings import SFTSettings
    from components.training.runner import TrainingJob, write_job

    rows = [{"id": str(i), "lang": lang, "question": q, "gold": "13", "prompt": q, "completion": "Donc \\boxed{13}"}
            for i, (lang, q) in enumerate(QUESTIONS * 2)]  # 8 rows: 2 steps of 4 at world size 4, 4 steps at 2
    sft = SFTSettings(model={"model": str(tiny_model_dir), "device": "cpu", "dtype": "float32"}, template="plain",
                      max_length=64, per_device_train_batch_size=1, num_train_epochs=1, save_steps=100,
                      gradient_checkpointing=False, accelerate_config="cpu-2", cpu_threads=1)
    out = tmp_path / "sft"
    job = TrainingJob(stage="sft", sft=sft, model=str(tiny_model_dir),
                      dataset=str(write_table(rows, tmp_path / "sft.parquet", "sft")))
    job_path = write_job(job, out)
    with (tmp_path / "nodes.log").open("w") as log:
        lead, follower = start_two_nodes(job_path, out, tmp_path, log, per_node=2, OMP_NUM_THREADS="1")
        try:
            assert lead.wait(timeout=600) == 0, (tmp_path / "nodes.log").read_text()[-4000:]
            assert follower.wait(timeout=60) == 0
        finally:
            for process in (lead, follower):
                if process.poll() is None:
                    kill_tree(process)
    result = json.loads((out / "result.json").read_text(encoding="utf-8"))
    planned, as_the_yaml_says = sft_steps(sft, len(rows), 4), sft_steps(sft, len(rows), 2)
    assert (planned.total_steps, as_the_yaml_says.total_steps) == (2, 4)  # by hand: 8 rows / (1 x 4), / (1 x 2)
    assert (result["num_processes"], result["global_step"]) == (4, planned.total_steps)
    print(f"2 nodes x 2 processes: world size {result['num_processes']}, {result['global_step']} steps "
          f"(the plan at 4 processes: {planned.total_steps}; the YAML's 2 would give {as_the_yaml_says.total_steps})")


def start_two_nodes(job_path: Path, out: Path, tmp_path: Path, log, per_node: int,
                    **env: str) -> tuple[subprocess.Popen, subprocess.Popen]:
    """Node 0 (leading the job's training) and node 1 (following it) on this machine, ``per_node`` processes each."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
               POLYREASON_NNODES="2", POLYREASON_NPROC_PER_NODE=str(per_node), POLYREASON_MASTER_ADDR="127.0.0.1",
               POLYREASON_MASTER_PORT=str(free_port()), POLYREASON_NODES_DIR=str(tmp_path / "nodes"),
               POLYREASON_NODE_POLL_S="0.2", **env)
    lead = subprocess.Popen([sys.executable, "-m", "components.training.node_role", "lead", "--", sys.executable, "-c",
                             LEAD, str(job_path), str(out)], cwd=REPO, env=dict(env, POLYREASON_NODE_RANK="0"),
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    follower = subprocess.Popen([sys.executable, "-m", "components.training.node_role", "follow"], cwd=REPO,
                                env=dict(env, POLYREASON_NODE_RANK="1"), stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    return lead, follower
