"""End-to-end: the curriculum GRPO stage through the ``polyreason`` CLI (real Prefect server, MLflow, trl).

The shipped ``profiles/cpu-grpo.yaml`` with dotted overrides: the tiny
from-config model instead of Gemma, a 4-question multilingual dataset, 2 steps
of 2 rollouts of 16 tokens. Random weights: these tests assert mechanics — the
real ``GRPOTrainer`` trains with each registered reward, the reward-audit guard
runs first, and the curriculum values (φ, τ, resets, reward components) reach
the flow's MLflow run (SQLite store in the project) under ``grpo/...`` keys;
then a run killed after a checkpoint resumes with the same τ and step.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.helpers.publishers import late_writes

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
PROFILE = REPO / "profiles" / "cpu-grpo.yaml"
ROWS = [
    {"id": "q0", "lang": "fr", "gold": "13", "question": "Janet a 16 œufs et en vend 3. Combien en reste-t-il ?"},
    {"id": "q1", "lang": "ja", "gold": "13", "question": "ジャネットは卵を16個持っていて、3個売ります。残りは？"},
    {"id": "q2", "lang": "pt", "gold": "13", "question": "Janet tem 16 ovos e vende 3. Quantos restam?"},
    {"id": "q3", "lang": "en", "gold": "13", "question": "Janet has 16 eggs and sells 3. How many are left?"},
]
# PCS with τ held at its start (tau_max = tau_start): 2 or 12 steps hold no check of the default k = 40, and a
# maximum the run cannot reach is refused before it starts (``polyreason plan``)
PCS_HELD = {"require_think": False, "extraction": "lenient", "tau_max": 0.1}
ROLLOUTS = [  # a given rollout file for the audit (the pcs case samples the policy instead)
    {"id": "q0", "lang": "fr", "completion": "<think>16 - 3 = 13</think>La réponse est \\boxed{13}."},
    {"id": "q1", "lang": "ja", "completion": "<think>16 - 3 = 13</think>答えは \\boxed{13} です。"},
    {"id": "q2", "lang": "pt", "completion": "<think>16 - 3 = 12</think>\\boxed{12}"},
]


def tiny_overrides(tiny_model_dir: Path, data: Path, *extra: str) -> list[str]:
    return [f"grpo.model.model={tiny_model_dir}", "grpo.model.chat=true", f"grpo.dataset={data}",
            "grpo.question_column=question", "grpo.gold_column=gold", "grpo.dataset_lang=null",
            "grpo.dataset_limit=null", "grpo.max_steps=2", "grpo.per_device_train_batch_size=4",
            "grpo.sampling.n=2", "grpo.sampling.max_new_tokens=16", "grpo.save_steps=1", "grpo.audit.sample_size=4",
            "grpo.cpu_threads=1", *extra]


def cli_env(prefect_url: str) -> dict:
    return dict(os.environ, PREFECT_API_URL=prefect_url, MLFLOW_DISABLE_TELEMETRY="true",
                PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))


def polyreason_grpo(project: Path, overrides: list[str], prefect_url: str, name: str) -> dict:
    out = project / f"{name}-summary.json"
    command = [sys.executable, "-m", "cli", "grpo", str(PROFILE), *overrides,
               "--project-dir", str(project), "--out", str(out)]
    done = subprocess.run(command, cwd=REPO, env=cli_env(prefect_url), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]
    return json.loads(out.read_text(encoding="utf-8"))


def mlflow_client(project: Path):
    from mlflow import MlflowClient

    return MlflowClient(f"sqlite:///{project / 'mlruns' / 'mlflow.db'}")


def history(project: Path, run_id: str, key: str) -> list[tuple[int, float]]:
    return sorted((m.step, m.value) for m in mlflow_client(project).get_metric_history(run_id, key))


@pytest.fixture(scope="module")
def project(tmp_path_factory, tiny_model_dir) -> dict:
    root = tmp_path_factory.mktemp("grpo-project")
    data, rollouts = root / "rl.jsonl", root / "rollouts.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in ROWS), encoding="utf-8")
    rollouts.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in ROLLOUTS), encoding="utf-8")
    return {"root": root, "data": data, "rollouts": rollouts, "model": tiny_model_dir}


REWARD_CASES = {
    # reward -> (params, MLflow keys that must hold values at steps 1 and 2)
    "accuracy": ({}, ["grpo/reward/accuracy", "grpo/rewards/accuracy/mean"]),
    "adamame": ({}, ["grpo/curriculum/phi", "grpo/curriculum/alpha_mean", "grpo/language/query_match"]),
    "pcs": (PCS_HELD, ["grpo/curriculum/tau", "grpo/reward/r_rep",
                                                                "grpo/reward/r_fmt",
                                       "grpo/reward/r_slc", "grpo/language/slc_mean",
                                       "grpo/curriculum/reference_resets"]),
    "softlc": ({}, ["grpo/reward/language_bonus", "grpo/language/query_match"]),
}


@pytest.mark.parametrize("reward", sorted(REWARD_CASES))
def test_each_reward_trains_through_grpo_trainer_and_logs_curricula(project, prefect_server, reward):
    params, keys = REWARD_CASES[reward]
    rewards = json.dumps([{"name": reward, "params": params}])
    extra = [f"grpo.rewards={rewards}"]
    if reward == "pcs":  # the exact verifier audited on rollouts sampled from the policy (--phase rollouts)
        extra.append("grpo.audit.verifier=exact")
    if reward == "accuracy":  # the exact verifier audited on a given rollout file
        extra += ["grpo.audit.verifier=exact", f"grpo.audit.rollouts={project['rollouts']}"]
    if reward == "adamame":  # validation curves on a held-out file, before training and after every step
        extra += ["grpo.validation.enabled=true", f"grpo.validation.dataset={project['data']}",
                  "grpo.validation.every_n_steps=1", "grpo.validation.sampling.max_new_tokens=8",
                  "grpo.validation.limit_per_language=1"]
    summary = polyreason_grpo(project["root"], tiny_overrides(project["model"], project["data"], *extra),
                              prefect_server, reward)
    result = summary["trained"]["run"]["summary"]
    assert result["global_step"] == 2 and result["resumed_from"] is None
    audited = ["exact"] if reward in ("pcs", "accuracy") else []
    assert summary["audit"]["verifiers"] == audited and summary["audit"]["reference"] == "trusted"
    run_id = summary["run_id"]
    for key in keys + ["grpo/train/kl", "grpo/train/loss", "grpo/completions/mean_length"]:
        assert [step for step, _ in history(project["root"], run_id, key)] == [1, 2], key
    tags = mlflow_client(project["root"]).get_run(run_id).data.tags
    if audited:
        assert tags["polyreason.grpo.audit.verifiers"] == "exact" and tags["polyreason.grpo.audit"] in ("ok", "warn")
        assert len(history(project["root"], run_id, "grpo/audit/exact/vlb_err")) == 1
    else:
        assert tags["polyreason.grpo.audit"] == "nothing-to-audit"  # every reward judges with the reference
    if reward == "adamame":  # φ at the step the rollouts were scored: t = 0 then 1 of T = 2 (trl averages in fp32)
        assert history(project["root"], run_id, "grpo/curriculum/phi") == [(1, pytest.approx(0.1)), (2, 0.5)]
        for key in ("accuracy/fr", "accuracy/overall", "response_length/ja", "response_length/overall"):
            assert [step for step, _ in history(project["root"], run_id, f"grpo/validation/{key}")] == [0, 1, 2], key
    if reward == "pcs":
        assert history(project["root"], run_id, "grpo/curriculum/tau") == [(1, 0.1), (2, 0.1)]
        assert (Path(summary["trained"]["run"]["path"]) / "rollouts.jsonl").is_file()
        assert "grpo/curriculum.png" in {a.path for a in mlflow_client(project["root"]).list_artifacts(run_id, "grpo")}
        assert late_writes(project["root"]) == []  # one publisher per product, the training directory included
        assert result["curricula"]["pcs"]["tau"] == 0.1
        client = mlflow_client(project["root"])  # the rollouts of each logging step as an MLflow table
        assert {a.path for a in client.list_artifacts(run_id, "grpo/rollouts")} == {
            "grpo/rollouts/step_00001.json", "grpo/rollouts/step_00002.json"}
        saved = json.loads(Path(client.download_artifacts(run_id, "grpo/rollouts/step_00002.json",
                                                          tempfile.mkdtemp())).read_text())
        table = [dict(zip(saved["columns"], row)) for row in saved["data"]]  # MLflow's log_table layout
        assert {"prompt", "completion", "pcs", "slc", "slc_pass", "tau", "advantage"} <= set(saved["columns"])
        assert len(table) == 4 and {r["tau"] for r in table} == {0.1} and {r["step"] for r in table} == {2}  # 2 x 2


def complete_checkpoints(project: Path) -> list[Path]:
    return sorted(project.glob("artifacts/grpo/*/trainer/checkpoint-*/checkpoint_complete.json"))


def test_killed_run_resumes_with_same_tau_and_step(project, prefect_server, tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    rewards = json.dumps([{"name": "pcs", "params": PCS_HELD}])
    overrides = tiny_overrides(project["model"], project["data"], f"grpo.rewards={rewards}", "grpo.max_steps=12",
                               f"grpo.audit.rollouts={project['rollouts']}")
    command = [sys.executable, "-m", "cli", "grpo", str(PROFILE), *overrides, "--project-dir", str(root)]
    with (root / "killed.log").open("w") as log:
        process = subprocess.Popen(command, cwd=REPO, env=cli_env(prefect_server), stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.time() + 600
        while not complete_checkpoints(root):
            assert process.poll() is None, (root / "killed.log").read_text()[-4000:]
            assert time.time() < deadline, "no checkpoint within 10 minutes"
            time.sleep(0.05)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    marker = complete_checkpoints(root)[-1]
    checkpoint = marker.parent
    step = json.loads(marker.read_text())["step"]
    assert 1 <= step < 12
    state_path = checkpoint / "curriculum_state.json"
    state = json.loads(state_path.read_text())
    state["curricula"]["pcs"]["tau"] = 0.5  # as if the curriculum had risen before the crash
    state_path.write_text(json.dumps(state))
    for later in checkpoint.parent.glob("checkpoint-*"):  # keep the chosen checkpoint the newest complete one
        if int(later.name.split("-")[1]) > step:
            (later / "checkpoint_complete.json").unlink(missing_ok=True)

    summary = polyreason_grpo(root, overrides, prefect_server, "resumed")
    result = summary["trained"]["run"]["summary"]
    assert result["resumed_from"] == str(checkpoint)
    assert result["global_step"] == 12
    assert result["curricula"]["pcs"]["tau"] == 0.5
    records = [json.loads(line) for line in (Path(summary["trained"]["run"]["path"]) / "metrics.jsonl").read_text().splitlines()]
    steps = [r["step"] for r in records if "loss" in r]
    assert steps == list(range(1, 13))  # lines past the checkpoint from the killed run were dropped
    assert all(r["curriculum/tau"] == 0.5 for r in records if r["step"] > step and "loss" in r)
    tau = dict(history(root, summary["run_id"], "grpo/curriculum/tau"))
    assert all(tau[s] == 0.5 for s in range(step + 1, 13))


def test_full_parameter_grpo_flow_publishes_and_logs_the_full_model(project, prefect_server):
    """``grpo.lora=null`` through the CLI: the run's product is the full model, which is the stage's final weights
    (a full model, no adapter to combine) and a logged model that names its path; the stage's run is tagged with
    the distributed type its trainer used (one process: ``NO``; sharded launches: tests/e2e/test_lcrl_flow.py
    and test_sharded_training.py)."""
    rewards = json.dumps([{"name": "pcs", "params": PCS_HELD}])
    overrides = tiny_overrides(project["model"], project["data"], "grpo.lora=null", "grpo.audit.enabled=false",
                               f"grpo.rewards={rewards}")
    summary = polyreason_grpo(project["root"], overrides, prefect_server, "full")
    trained = summary["trained"]
    assert trained["adapter"] is None and trained["run"]["summary"]["weights"] == "full"
    assert (summary["kind"], summary["weights"]) == ("full", trained["full_model"])
    model_dir = Path(summary["weights"])
    assert (model_dir / "model.safetensors").is_file() and not (model_dir / "adapter_config.json").exists()
    logged = mlflow_client(project["root"]).get_logged_model(summary["model_id"])
    assert (logged.model_type, logged.params["weights"], logged.params["path"]) == ("grpo-model", "full",
                                                                                   str(model_dir))
    tags = mlflow_client(project["root"]).get_run(summary["run_id"]).data.tags
    assert trained["run"]["summary"]["distributed_type"] == tags["polyreason.grpo.distributed_type"] == "NO"
    assert late_writes(project["root"]) == []  # one publisher per product, the full model's directory included
