"""Nothing lost, nothing hangs: the real ``polyreason`` command (fake backend, real Prefect and MLflow)
run twice at once, interrupted with Ctrl-C, and pointed at a tracking server that is not there."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
SLOW_CLI = [sys.executable, "-m", "tests.helpers.slow_cli"]


def write_project(root: Path, questions: int, batch_size: int) -> Path:
    """A tiny MGSM copy (en, fr) and an evaluation profile on the fake backend."""
    (root / "mgsm").mkdir(parents=True)
    for lang in ("en", "fr"):
        rows = "".join(f"What is {i} plus {i}?\t{2 * i}\n" for i in range(questions))
        (root / "mgsm" / f"mgsm_{lang}.tsv").write_text(rows, encoding="utf-8")
    profile = {"name": "robust", "evaluation": {
        "model": {"backend": "fake", "model": "fake"},
        "sampling": {"n": 2, "batch_size": batch_size},
        "benchmarks": [{"name": "mgsm", "data_dir": "mgsm", "languages": ["en", "fr"]}],
    }}
    (root / "robust.yaml").write_text(json.dumps(profile), encoding="utf-8")
    return root / "robust.yaml"


def environment(delay_s: float, prefect_url: str | None = None) -> dict:
    env = dict(os.environ, POLYREASON_FAKE_DELAY_S=str(delay_s),
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    for name in ("PREFECT_HOME", "PREFECT_RESULTS_LOCAL_STORAGE_PATH", "PREFECT_API_URL"):
        env.pop(name, None)  # the project's own state, as a user gets it
    if prefect_url:
        env["PREFECT_API_URL"] = prefect_url
    return env


def evaluate(root: Path, env: dict, *overrides: str) -> subprocess.Popen:
    command = [*SLOW_CLI, "evaluate", str(root / "robust.yaml"), *overrides, "--project-dir", str(root), "--json"]
    return subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def finished(process: subprocess.Popen, timeout: float = 600) -> tuple[dict, str]:
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, err[-4000:]
    return json.loads(out), err


def rows_of(path: str) -> list[tuple[int, int]]:
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return [(json.loads(line)["prompt_index"], json.loads(line)["sample_index"]) for line in lines]


def runs(root: Path) -> list:
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{root / 'mlruns' / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("polyreason")
    return client.search_runs([experiment.experiment_id], order_by=["attributes.start_time ASC"])


def test_two_evaluations_at_once_then_a_third_keep_every_row_once(tmp_path, prefect_server):
    write_project(tmp_path, questions=10, batch_size=1)  # 20 prompts x 2 samples, 20 slow generate calls
    env = environment(delay_s=0.4, prefect_url=prefect_server)
    first, second = evaluate(tmp_path, env), evaluate(tmp_path, env)
    (one, err_one), (two, err_two) = finished(first), finished(second)
    assert "is being written by pid" in err_one + err_two  # the second waited for the first
    third, _ = finished(evaluate(tmp_path, environment(delay_s=0, prefect_url=prefect_server)))

    expected = [(prompt, sample) for prompt in range(20) for sample in range(2)]
    for summary in (one, two, third):
        assert sorted(rows_of(summary["benchmarks"]["mgsm"]["generations"]["path"])) == expected
    generation_files = list((tmp_path / "artifacts" / "generation").rglob("generations.jsonl*"))
    assert [sorted(rows_of(str(path))) for path in generation_files] == [expected]  # one file, no journal left
    assert third["benchmarks"]["mgsm"]["generated"] is False  # a cache hit
    logged = {run.info.run_id: run.data.metrics["evaluation/mgsm/overall/n_rows"] for run in runs(tmp_path)}
    assert logged == {one["run_id"]: 40.0, two["run_id"]: 40.0, third["run_id"]: 40.0}


def family(pid: int) -> list[int]:
    """Every descendant of ``pid`` (the temporary Prefect server under its lifeline included)."""
    return [child.pid for child in psutil.Process(pid).children(recursive=True)]


def alive(pids: list[int]) -> list[int]:
    return [pid for pid in pids if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]


def wait_for_rows(root: Path, process: subprocess.Popen, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        journals = list((root / "artifacts" / "generation").glob("*/generations.jsonl.partial.*"))
        if journals and journals[0].stat().st_size > 0:
            return
        assert process.poll() is None, process.communicate()[1][-4000:]
        time.sleep(0.2)
    raise AssertionError("no generated row within the time limit")


def test_ctrl_c_ends_an_evaluation_in_seconds_and_the_rerun_resumes(tmp_path):
    write_project(tmp_path, questions=40, batch_size=2)  # 80 prompts, 40 slow generate calls
    process = evaluate(tmp_path, environment(delay_s=0.5))  # its own temporary Prefect server
    wait_for_rows(tmp_path, process)
    children = family(process.pid)
    assert children, "the temporary Prefect server runs as a child"
    os.killpg(process.pid, signal.SIGINT)  # what a terminal sends on Ctrl-C
    start = time.monotonic()
    _, err = process.communicate(timeout=60)
    took = time.monotonic() - start
    assert took < 10 and process.returncode == 130, err[-4000:]
    last = err.strip().splitlines()
    assert any(line.startswith("polyreason: interrupted by SIGINT; kept ") and "generated rows kept" in line
               and "resume with: polyreason evaluate" in line for line in last[-3:]), err[-2000:]
    time.sleep(1)
    assert alive(children) == []
    assert [run.info.status for run in runs(tmp_path)] == ["KILLED"]
    with sqlite3.connect(tmp_path / ".prefect" / "prefect.db") as db:
        assert db.execute("SELECT state_type FROM flow_run").fetchall() == [("CRASHED",)]

    summary, _ = finished(evaluate(tmp_path, environment(delay_s=0)))
    generated = summary["benchmarks"]["mgsm"]["generations"]["summary"]
    assert generated["prompts_resumed"] > 0 and generated["prompts_resumed"] + generated["prompts_generated"] == 80
    assert sorted(rows_of(generated["path"])) == [(p, s) for p in range(80) for s in range(2)]
    assert [run.info.status for run in runs(tmp_path)] == ["KILLED", "FINISHED"]


def test_an_unreachable_tracking_server_is_named_before_anything_runs(tmp_path):
    write_project(tmp_path, questions=2, batch_size=2)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        uri = f"http://127.0.0.1:{sock.getsockname()[1]}"
    start = time.monotonic()
    process = evaluate(tmp_path, environment(delay_s=0), f"tracking.tracking_uri={uri}")
    _, err = process.communicate(timeout=60)
    assert time.monotonic() - start < 15
    assert process.returncode == 2 and f"tracking store {uri} is not reachable" in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "artifacts").exists() and not (tmp_path / ".prefect" / "prefect.db").exists()
    assert not (tmp_path / "mlruns" / "mlflow.db").exists()
