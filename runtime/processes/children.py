"""Child processes of a run: started in their own process group, ended by PID, never left behind.

A training stage runs as its own process (memory is freed when the stage ends,
and the same command scales to several GPUs through accelerate/DeepSpeed
configs). Every child goes through ``spawn``:

* it runs under ``components.lifeline``, which ends it and everything it started
  (accelerate's launcher and the trainer) when ``polyreason`` disappears, even
  after ``kill -9``;
* ``end_children`` ends it the same way, by PID, on an interrupt;
* a trainer stays in ``polyreason``'s process group, so a signal to the group
  (Ctrl-C in a terminal, ``kill -9 -PGID``) reaches it at once; a server the run
  still reports to gets its own group (``own_group``), so Ctrl-C does not stop
  it before the run has said it was interrupted — its owner stops it last.

``run_stage_process`` gives the trainer the repository on ``PYTHONPATH`` and
runs it from the repository root; its output is appended to ``log_path`` (a
re-run after a kill keeps the earlier log). While it waits, it relays the
progress lines the child writes into that log (``components.progress``) every
second, so a person sees the trainer's steps. A non-zero exit raises with the
log's tail, so the Prefect task fails with the trainer's own error.

``owner_token``/``owner_alive`` name a process across restarts (host, PID and
start time, so a reused PID is not mistaken for the old process): runs and
flow runs carry it, and the next start closes those whose owner is gone.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from components.progress import MarkedLines

REPO = Path(__file__).resolve().parents[2]
RELAY_S = 1.0  # how often a waiting task relays its child's progress lines
_CHILDREN: dict[int, tuple[subprocess.Popen, str]] = {}  # pid -> (process, what it is)


def spawn(command: list[str], what: str, *, own_group: bool = False, **popen: Any) -> subprocess.Popen:
    """Start ``command`` under the lifeline.

    ``own_group``: in a new process group, untouched by signals to this one and by ``end_children`` (a server
    the run still reports to; its owner stops it last).
    """
    wrapped = [sys.executable, "-m", "components.lifeline", str(os.getpid()), "--", *command]
    env = dict(popen.pop("env", None) or os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    process = subprocess.Popen(wrapped, start_new_session=own_group, env=env, **popen)
    if not own_group:
        _CHILDREN[process.pid] = (process, what)
    return process


def end_process_tree(process: subprocess.Popen, grace_s: float = 3.0) -> None:
    """SIGTERM to ``process`` and everything below it, SIGKILL after ``grace_s`` to what is left."""
    import psutil

    try:
        tree = [psutil.Process(process.pid), *psutil.Process(process.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return
    for member in tree:
        try:
            member.terminate()
        except psutil.NoSuchProcess:
            pass
    _, left = psutil.wait_procs(tree, timeout=grace_s)
    for member in left:
        try:
            member.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(left, timeout=grace_s)
    process.poll()


def end_children(grace_s: float = 3.0) -> list[str]:
    """End every child still running, with what it started; returns what was ended, e.g. ``["SFT train (pid 12)"]``."""
    ended = []
    for pid, (process, what) in list(_CHILDREN.items()):
        if process.poll() is None:
            end_process_tree(process, grace_s)
            ended.append(f"{what} (pid {pid})")
        _CHILDREN.pop(pid, None)
    return ended


def run_stage_process(command: list[str], log_path: Path, timeout_s: int, what: str,
                      env: dict[str, str] | None = None) -> None:
    """Run ``command`` to completion (in ``env``, default this process's); raise ``RuntimeError`` naming ``what``
    and the log on failure."""
    from components.progress import MarkedLines

    with log_path.open("a", encoding="utf-8") as log:
        progress = MarkedLines(log_path)  # the child's progress lines from here on (a re-run appends to the log)
        process = spawn(command, what, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, env=env)
        returncode = _wait(process, timeout_s, what, progress)
    if returncode != 0:
        tail = log_path.read_text(encoding="utf-8")[-3000:]
        raise RuntimeError(f"{what} process failed with exit code {returncode}; {log_path} ends:\n{tail}")


def _wait(process: subprocess.Popen, timeout_s: int, what: str, progress: MarkedLines) -> int:
    """Wait for ``process`` (ended after ``timeout_s``), relaying its progress lines every ``RELAY_S`` seconds."""
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            try:
                return process.wait(timeout=max(0.0, min(RELAY_S, deadline - time.monotonic())))
            except subprocess.TimeoutExpired:
                if time.monotonic() >= deadline:
                    end_process_tree(process)
                    raise RuntimeError(f"{what} process ran past its time limit of {timeout_s} s and was ended") \
                        from None
            finally:
                progress.relay()
    finally:
        if process.poll() is None:  # interrupted while waiting: the trainer goes with us
            end_process_tree(process)
        _CHILDREN.pop(process.pid, None)


def owner_token(pid: int | None = None) -> str:
    """``host:pid:start`` of a process (this one by default)."""
    import psutil

    pid = pid or os.getpid()
    return f"{socket.gethostname()}:{pid}:{int(psutil.Process(pid).create_time())}"


def owner_alive(token: str) -> bool | None:
    """Whether the process a token names still runs; ``None`` when it ran on another host (cannot tell)."""
    import psutil

    parts = token.split(":")
    if len(parts) < 3 or ":".join(parts[:-2]) != socket.gethostname():
        return None
    pid, started = int(parts[-2]), int(parts[-1])
    try:
        return int(psutil.Process(pid).create_time()) == started
    except psutil.NoSuchProcess:
        return False
