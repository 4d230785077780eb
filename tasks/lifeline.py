"""``python -m tasks.lifeline PARENT_PID -- COMMAND ...``: run COMMAND, and end its process group with its parent.

A child process (a trainer, a temporary Prefect server) must never outlive the
``polyreason`` process that started it, even when that process is killed with
``kill -9`` and cannot clean up. This small wrapper is started as the leader of
a new process group (``start_new_session``), runs COMMAND in that group, and:

* exits with COMMAND's exit code when it ends;
* checks twice a second that PARENT_PID is still its parent; when the parent is
  gone (the wrapper was re-parented), it sends SIGTERM to the whole group, then
  SIGKILL to what is left after ``GRACE_S``;
* on SIGTERM or SIGINT sent to it alone, passes the signal to the whole group.

It imports only the standard library, so it starts in a few tens of milliseconds.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

GRACE_S = 5.0
POLL_S = 0.5


def end_group(signum: int = signal.SIGTERM) -> None:
    """Pass ``signum`` to every process of this group (this one ignores it)."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        os.killpg(os.getpgrp(), signum)
    except ProcessLookupError:
        pass


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        sys.stderr.write("usage: python -m tasks.lifeline PARENT_PID -- COMMAND ...\n")
        return 2
    parent, command = int(argv[0]), argv[2:]
    child = subprocess.Popen(command)
    ending_since: list[float] = []

    def forward(signum, frame):  # noqa: ARG001 - signal handler signature
        ending_since.append(time.monotonic())
        end_group(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    while True:
        try:
            return child.wait(timeout=POLL_S)
        except subprocess.TimeoutExpired:
            pass
        if not ending_since and os.getppid() != parent:
            ending_since.append(time.monotonic())
            end_group(signal.SIGTERM)
        if ending_since and time.monotonic() - ending_since[0] > GRACE_S:
            end_group(signal.SIGKILL)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
