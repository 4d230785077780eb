"""Child processes: a whole process group is ended by PID, and nothing outlives a parent killed with -9."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from runtime.processes.children import end_children, owner_alive, owner_token, run_stage_process, spawn

REPO = Path(__file__).resolve().parents[2]
# a child that starts a grandchild (like accelerate's launcher and the trainer) and prints both PIDs
FAMILY = ("import subprocess, sys, time; g = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
          "print(g.pid, flush=True); time.sleep(60)")


def gone(pids: list[int], within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE for pid in pids):
            return True
        time.sleep(0.1)
    return False


def test_end_children_ends_the_whole_group(tmp_path):
    process = spawn([sys.executable, "-c", FAMILY], "family", stdout=subprocess.PIPE, text=True)
    grandchild = int(process.stdout.readline())
    members = [p.pid for p in psutil.Process(process.pid).children(recursive=True)]
    assert grandchild in members
    assert end_children() == [f"family (pid {process.pid})"]
    assert gone([process.pid, *members], within_s=5)


def test_children_do_not_outlive_a_parent_killed_with_sigkill(tmp_path):
    parent = subprocess.Popen(
        [sys.executable, "-c", "import sys; from runtime.processes.children import spawn\n"
         f"p = spawn([sys.executable, '-c', {FAMILY!r}], 'family', stdout=sys.stdout)\n"
         "import time; time.sleep(60)"],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.PIPE, text=True)
    grandchild = int(parent.stdout.readline())
    family = [p.pid for p in psutil.Process(parent.pid).children(recursive=True)]
    assert grandchild in family
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    assert gone(family, within_s=8), [p for p in family if psutil.pid_exists(p)]


def test_a_failed_stage_process_raises_with_its_log(tmp_path):
    log = tmp_path / "train.log"
    with pytest.raises(RuntimeError, match="SFT train process failed with exit code 3"):
        run_stage_process([sys.executable, "-c", "print('boom'); raise SystemExit(3)"], log, 30, "SFT train")
    assert "boom" in log.read_text()


def test_a_stage_process_past_its_limit_is_ended(tmp_path):
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="ran past its time limit of 1 s"):
        run_stage_process([sys.executable, "-c", "import time; time.sleep(60)"], tmp_path / "log", 1, "GRPO train")
    assert time.monotonic() - start < 30  # the child would sleep 60 s if it were not ended; the rest is load


def test_an_owner_token_names_a_live_process_and_not_a_dead_one():
    assert owner_alive(owner_token()) is True
    dead = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    token = owner_token(dead.pid)
    dead.kill()
    dead.wait()
    assert owner_alive(token) is False
    assert owner_alive("elsewhere:1:2") is None
