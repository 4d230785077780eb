"""``python -m components.lifeline PARENT_PID -- COMMAND ...``: run COMMAND, and end it and its children with the parent.

A child process (a trainer, a temporary Prefect server) must never outlive the
``polyreason`` process that started it, even when that process is killed with
``kill -9`` and cannot clean up. This small wrapper runs COMMAND and:

* exits with COMMAND's exit code when it ends;
* checks twice a second that PARENT_PID is still its parent; when the parent is
  gone (the wrapper was re-parented), it sends SIGTERM to every process below
  it (COMMAND and what COMMAND started, e.g. accelerate's launcher and the
  trainer), then SIGKILL to what is left after ``GRACE_S``;
* on SIGTERM or SIGINT, passes the signal to every process below it and waits.

It imports the standard library and psutil only, so it starts in a few tens of milliseconds.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

GRACE_S = 5.0
POLL_S = 0.5


def end_descendants(signum: int = signal.SIGTERM) -> None:
    """Pass ``signum`` to every process below this one (this one ignores later signals)."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # first: a second signal must not re-enter the import below
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    import psutil

    for process in psutil.Process().children(recursive=True):
        try:
            process.send_signal(signum)
        except psutil.NoSuchProcess:
            pass


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        sys.stderr.write("usage: python -m components.lifeline PARENT_PID -- COMMAND ...\n")
        return 2
    parent, command = int(argv[0]), argv[2:]
    child = subprocess.Popen(command)
    ending_since: list[float] = []

    def forward(signum, frame):  # noqa: ARG001 - signal handler signature
        ending_since.append(time.monotonic())
        end_descendants(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    while True:
        try:
            return child.wait(timeout=POLL_S)
        except subprocess.TimeoutExpired:
            pass
        if not ending_since and os.getppid() != parent:
            ending_since.append(time.monotonic())
            end_descendants(signal.SIGTERM)
        if ending_since and time.monotonic() - ending_since[0] > GRACE_S:
            end_descendants(signal.SIGKILL)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
