"""Run a training stage as its own process and wait for it.

A stage in its own process frees all its memory when it ends (a GPU holds no stale
model into the next stage), and the same command scales to several GPUs through
accelerate/DeepSpeed configs.

The process gets the repository on ``PYTHONPATH`` and runs from the repository
root; its output is appended to ``log_path`` (a re-run after a kill keeps the
earlier log). A non-zero exit raises with the log's tail, so the Prefect task
fails with the trainer's own error.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_stage_process(command: list[str], log_path: Path, timeout_s: int, what: str) -> None:
    """Run ``command`` to completion; raise ``RuntimeError`` naming ``what`` and the log on failure."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    with log_path.open("a", encoding="utf-8") as log:
        done = subprocess.run(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, timeout=timeout_s)
    if done.returncode != 0:
        tail = log_path.read_text(encoding="utf-8")[-3000:]
        raise RuntimeError(f"{what} process failed with exit code {done.returncode}; {log_path} ends:\n{tail}")
