"""End-to-end: a re-run after a code edit trains again; an interrupted run of the same key resumes.

A copy of the project's code runs the ``polyreason grpo`` command (real Prefect
server, MLflow, trl) on the tiny from-config model with the shipped
``cpu-grpo`` profile, 4 steps with a checkpoint after each:

1. the first run is killed once it has a complete checkpoint (an interrupted run);
2. a comment is appended to the copy's reward module (``softlc``, the profile's
   reward): the GRPO task's key changes, so the run must train from step 0 —
   not continue the interrupted run's checkpoint nor publish its weights;
3. the comment is taken out again: the key is the first run's, whose
   interrupted checkpoint the run continues ("resumed from step N of this key").

The terminal line, the ``--json``/``--out`` summary and the stage's MLflow run
tag must each say which happened.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
CODE = ("components", "runtime", "tasks", "flows", "cli", "profiles")
ROWS = [
    {"id": "q0", "lang": "fr", "gold": "13", "question": "Janet a 16 œufs et en vend 3. Combien en reste-t-il ?"},
    {"id": "q1", "lang": "en", "gold": "13", "question": "Janet has 16 eggs and sells 3. How many are left?"},
]
REWARD = "components/rewards/softlc.py"


def code_copy(root: Path) -> Path:
    """The project's packages and profiles copied to ``root`` (no caches): what the edits change."""
    for name in CODE:
        shutil.copytree(REPO / name, root / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    return root


def command_env(code: Path, prefect_url: str) -> dict:
    return dict(os.environ, PREFECT_API_URL=prefect_url, MLFLOW_DISABLE_TELEMETRY="true", PYTHONPATH=str(code))


def grpo_command(code: Path, project: Path, model: Path, data: Path, out: Path | None = None) -> list[str]:
    overrides = [f"grpo.model.model={model}", "grpo.model.chat=true", f"grpo.dataset={data}",
                 "grpo.question_column=question", "grpo.gold_column=gold", "grpo.dataset_lang=null",
                 "grpo.dataset_limit=null", "grpo.max_steps=4", "grpo.per_device_train_batch_size=2",
                 "grpo.sampling.n=2", "grpo.sampling.max_new_tokens=8", "grpo.save_steps=1",
                 'grpo.rewards=[{"name": "softlc"}]', "grpo.cpu_threads=1"]
    tail = ["--out", str(out)] if out is not None else []
    return [sys.executable, "-m", "cli", "grpo", str(code / "profiles" / "cpu-grpo.yaml"), *overrides,
            "--project-dir", str(project), *tail]


def complete_markers(project: Path) -> list[Path]:
    return sorted(project.glob("artifacts/grpo/*/trainer/checkpoint-*/checkpoint_complete.json"))


def run_grpo(code: Path, project: Path, model: Path, data: Path, prefect_url: str, name: str) -> tuple[dict, str]:
    out = project / f"{name}-summary.json"
    done = subprocess.run(grpo_command(code, project, model, data, out), cwd=code,
                          env=command_env(code, prefect_url), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]
    return json.loads(out.read_text(encoding="utf-8")), done.stderr


def interrupted_run(code: Path, project: Path, model: Path, data: Path, prefect_url: str) -> Path:
    """Start a run and kill it once a checkpoint is complete; that checkpoint's marker."""
    with (project / "killed.log").open("w") as log:
        process = subprocess.Popen(grpo_command(code, project, model, data), cwd=code,
                                   env=command_env(code, prefect_url), stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        try:
            deadline = time.time() + 600
            while not complete_markers(project):
                assert process.poll() is None, (project / "killed.log").read_text()[-4000:]
                assert time.time() < deadline, "no checkpoint within 10 minutes"
                time.sleep(0.05)
        finally:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return complete_markers(project)[0]


def start_tag(project: Path, run_id: str) -> str:
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{project / 'mlruns' / 'mlflow.db'}")
    return client.get_run(run_id).data.tags["polyreason.grpo.start"]


def test_edit_retrains_from_step_zero_and_same_key_resumes(tmp_path, prefect_server, tiny_model_dir):
    code, project = code_copy(tmp_path / "code"), tmp_path / "project"
    project.mkdir()
    data = project / "rl.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in ROWS), encoding="utf-8")

    marker = interrupted_run(code, project, tiny_model_dir, data, prefect_server)
    interrupted, first = json.loads(marker.read_text()), marker.parent
    for later in first.parent.glob("checkpoint-*"):  # keep the first complete checkpoint the one to continue
        if later != first:
            (later / "checkpoint_complete.json").unlink(missing_ok=True)
    assert 1 <= interrupted["step"] < 4 and interrupted["run_key"]
    first_dir = first.parent.parent

    reward = code / REWARD
    original = reward.read_text(encoding="utf-8")
    reward.write_text(original + "\n# an edit: the key of every task that reaches this module changes\n",
                      encoding="utf-8")
    edited, terminal = run_grpo(code, project, tiny_model_dir, data, prefect_server, "edited")
    result = edited["trained"]["run"]["summary"]
    print("\n--- terminal (stderr) of the re-run after the edit ---\n" + terminal[-3000:])
    print("--- --json summary of the re-run after the edit ---\n" + json.dumps(edited, indent=2)[:6000])
    assert result["start"] == "trained from step 0" and result["start_step"] == 0 and result["resumed_from"] is None
    assert result["global_step"] == 4 and result["train_runtime"] > 0.5  # four real steps, not a 0-step resume
    assert result["run_key"] != interrupted["run_key"]
    assert Path(edited["trained"]["run"]["path"]) != first_dir  # a directory of its own key
    assert "GRPO: trained from step 0 to step 4" in terminal
    assert start_tag(project, edited["run_id"]) == "trained from step 0"

    reward.write_text(original, encoding="utf-8")  # the first run's code again: its key, its checkpoint
    resumed, terminal = run_grpo(code, project, tiny_model_dir, data, prefect_server, "resumed")
    result = resumed["trained"]["run"]["summary"]
    step = interrupted["step"]
    assert result["start"] == f"resumed from step {step} of this key" and result["start_step"] == step
    assert result["resumed_from"] == str(first) and result["run_key"] == interrupted["run_key"]
    assert result["global_step"] == 4 and Path(resumed["trained"]["run"]["path"]) == first_dir
    assert f"GRPO: resumed from step {step} of this key to step 4" in terminal
    assert start_tag(project, resumed["run_id"]) == f"resumed from step {step} of this key"
