"""Each node of a multi-node training job (``components.training.multinode``): node 0 leads, the others follow.

    python -m components.training.node_role lead -- prefect flow-run execute   # node 0: the flow run itself
    python -m components.training.node_role follow                            # every other node
    python -m components.training.node_role auto -- prefect flow-run execute   # either, by this node's rank

``auto`` (a job template's one command for every node) leads on node 0 and follows
elsewhere. ``lead`` clears what a killed run left in the nodes directory, runs its command
(the flow run, whose training tasks announce their launches), and marks the
directory done when the command ends, however it ends. ``follow`` starts its
rank of each announced launch (``accelerate launch`` with the job's accelerate
config and this node's place in the rendezvous), once per launch (a launch
resumed after a restart is the same launch), and ends when node 0's run is
done, ending a launch still running then. A work pool's job template runs
this entry on every node (its ``command``).
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
from pathlib import Path

from components.training.multinode import DONE, LAUNCH, Rendezvous, ended_since, nodes_dir, read_launch, sleep, write_json


def lead(command: list[str], directory: Path) -> int:
    """Run node 0's command; the nodes directory says when it ended. SIGTERM (a pod or job being stopped) is
    passed on to the command, which ends its run as after Ctrl-C; the directory is marked done either way."""
    directory.mkdir(parents=True, exist_ok=True)
    for stale in (LAUNCH, DONE):
        (directory / stale).unlink(missing_ok=True)
    try:
        process = subprocess.Popen(command)
        signal.signal(signal.SIGTERM, lambda signum, _frame: process.send_signal(signum))
        return process.wait()
    finally:
        write_json(directory / DONE, {"command": command})


def follower_command(launch: dict, rendezvous: Rendezvous) -> list[str]:
    """This node's ``accelerate launch`` of an announced job."""
    from components.training.runner import job_launch_command, read_job

    job = read_job(launch["job"])
    return job_launch_command(sys.executable, job, Path(launch["job"]), Path(launch["out"]), launch["phase"],
                              rendezvous)


def follow(directory: Path, rendezvous: Rendezvous) -> int:
    """Start this node's rank of every announced launch until node 0's run is done."""
    directory.mkdir(parents=True, exist_ok=True)
    marker = directory / f"follower-{rendezvous.node_rank}.started"
    write_json(marker, {"rank": rendezvous.node_rank})
    completed: set[str] = set()
    while not ended_since(directory, marker):
        launch = read_launch(directory)
        if launch is None or launch["key"] in completed:
            sleep()
            continue
        process = subprocess.Popen(follower_command(launch, rendezvous))
        while process.poll() is None:
            if ended_since(directory, marker):  # node 0 is gone: this rank would wait for it forever
                process.terminate()
                process.wait()
                return 0
            sleep()
        if process.returncode == 0:
            completed.add(launch["key"])
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("role", choices=("lead", "follow", "auto"))
    parser.add_argument("command", nargs=argparse.REMAINDER, help="lead: the command node 0 runs, after --")
    args = parser.parse_args(argv)
    directory = nodes_dir()
    if directory is None:
        parser.error("set POLYREASON_NODES_DIR (or POLYREASON_PROJECT_DIR and PREFECT__FLOW_RUN_ID)")
    rendezvous = Rendezvous.from_env()
    role = args.role if args.role != "auto" else ("follow" if rendezvous and rendezvous.node_rank else "lead")
    if role == "lead":
        command = args.command[1:] if args.command[:1] == ["--"] else args.command
        if not command:
            parser.error("lead needs the command node 0 runs, after --")
        return lead(command, directory)
    if rendezvous is None or rendezvous.node_rank == 0:
        parser.error("follow runs on nodes 1..N-1 of a multi-node job (POLYREASON_NNODES > 1, a node rank > 0)")
    return follow(directory, rendezvous)


if __name__ == "__main__":
    sys.exit(main())
