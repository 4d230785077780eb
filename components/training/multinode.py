"""Training on several nodes: the rendezvous a work pool's job gives, and the trainer launch on every node.

A work pool whose job spans nodes (a Slurm allocation, a Kubernetes Indexed Job)
sets the same variables on every node, from its job variables:

* ``POLYREASON_NNODES`` nodes, ``POLYREASON_NPROC_PER_NODE`` trainer processes per node (its GPUs);
* ``POLYREASON_MASTER_ADDR`` / ``POLYREASON_MASTER_PORT``: node 0's address, where
  torch's static rendezvous meets (accelerate passes them to torchrun as
  ``--master_addr``/``--master_port``);
* the node's rank: ``POLYREASON_NODE_RANK``, else Slurm's ``SLURM_NODEID``, else
  Kubernetes' ``JOB_COMPLETION_INDEX`` (the pod's index in an Indexed Job).

Every node runs the same ``accelerate launch`` with ``--num_machines``,
``--machine_rank`` and ``--num_processes`` (all processes of all nodes, as
accelerate counts them) added to the stage's accelerate config. Node 0 is the
flow run: its training task announces each launch in ``POLYREASON_NODES_DIR``
(a directory on the shared project file system, one per flow run) while its own
trainer runs; every other node runs ``python -m components.training.node_role follow``,
which starts its rank of each announced launch and ends when node 0's flow run
has ended (``lead``). A restarted job resumes: the trainer continues from its
last complete checkpoint, whichever node was killed.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

LAUNCH, DONE = "launch.json", "done.json"
RANK_VARIABLES = ("POLYREASON_NODE_RANK", "SLURM_NODEID", "JOB_COMPLETION_INDEX")


@dataclass(frozen=True)
class Rendezvous:
    """Where this node's trainer processes meet the others' (see the module docstring)."""

    nnodes: int
    node_rank: int
    nproc_per_node: int
    master_addr: str
    master_port: int

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "Rendezvous | None":
        """The rendezvous the pool's job sets, or ``None`` on one node.

        >>> Rendezvous.from_env({"POLYREASON_NNODES": "2", "SLURM_NODEID": "1", "POLYREASON_MASTER_ADDR": "n0"})
        Rendezvous(nnodes=2, node_rank=1, nproc_per_node=1, master_addr='n0', master_port=29500)
        """
        env = os.environ if env is None else env
        nnodes = int(env.get("POLYREASON_NNODES", "1"))
        if nnodes <= 1:
            return None
        rank = next((env[name] for name in RANK_VARIABLES if env.get(name)), None)
        missing = [name for name, value in (("POLYREASON_MASTER_ADDR", env.get("POLYREASON_MASTER_ADDR")),
                                            (" or ".join(RANK_VARIABLES), rank)) if not value]
        if missing:
            raise ValueError(f"POLYREASON_NNODES={nnodes} but {', '.join(missing)} unset: the pool's job must set "
                             "them on every node")
        return cls(nnodes=nnodes, node_rank=int(rank), nproc_per_node=int(env.get("POLYREASON_NPROC_PER_NODE", "1")),
                   master_addr=env["POLYREASON_MASTER_ADDR"], master_port=int(env.get("POLYREASON_MASTER_PORT", "29500")))

    def launch_flags(self) -> list[str]:
        """``accelerate launch`` options that place this node's processes in the whole job.

        >>> Rendezvous(2, 1, 4, "n0", 29500).launch_flags()
        ['--num_machines', '2', '--machine_rank', '1', '--num_processes', '8', '--main_process_ip', 'n0', '--main_process_port', '29500']
        """
        return ["--num_machines", str(self.nnodes), "--machine_rank", str(self.node_rank), "--num_processes",
                str(self.nnodes * self.nproc_per_node), "--main_process_ip", self.master_addr,
                "--main_process_port", str(self.master_port)]


def accelerate_world(config: Mapping[str, Any]) -> tuple[int, int]:
    """``(machines, processes per machine)`` that an accelerate config launches.

    accelerate reads ``num_processes`` as the processes of all machines together and
    starts ``num_processes // num_machines`` on each one (``prepare_multi_gpu_env``
    passes that to torchrun as ``--nproc_per_node``), so the world has
    ``num_machines × (num_processes // num_machines)`` processes: fewer than
    ``num_processes`` when the machines do not divide it. A config without
    ``num_processes`` starts one.

    >>> accelerate_world({"num_machines": 2, "num_processes": 16}), accelerate_world({"num_processes": 8})
    ((2, 8), (1, 8))
    >>> accelerate_world({"num_machines": 2, "num_processes": 15}), accelerate_world({})
    ((2, 7), (1, 1))
    """
    machines, processes = int(config.get("num_machines") or 1), int(config.get("num_processes") or 1)
    return machines, (processes // machines if machines > 1 else processes)


def pool_layout(env: Mapping[str, str] | None = None) -> tuple[int, int] | None:
    """``(nodes, processes per node)`` a multi-node pool's job sets (``POLYREASON_NNODES``,
    ``POLYREASON_NPROC_PER_NODE``), or ``None`` on one node; no rank or address needed (the plan reads it).

    >>> pool_layout({"POLYREASON_NNODES": "2", "POLYREASON_NPROC_PER_NODE": "8"}), pool_layout({})
    ((2, 8), None)
    """
    env = os.environ if env is None else env
    nodes = int(env.get("POLYREASON_NNODES", "1"))
    return (nodes, int(env.get("POLYREASON_NPROC_PER_NODE", "1"))) if nodes > 1 else None


def nodes_dir(env: Mapping[str, str] | None = None) -> Path | None:
    """Where node 0 announces launches: ``POLYREASON_NODES_DIR``, else ``<project>/.polyreason/nodes/<flow run>``."""
    env = os.environ if env is None else env
    if env.get("POLYREASON_NODES_DIR"):
        return Path(env["POLYREASON_NODES_DIR"])
    if env.get("POLYREASON_PROJECT_DIR") and env.get("PREFECT__FLOW_RUN_ID"):
        return Path(env["POLYREASON_PROJECT_DIR"]) / ".polyreason" / "nodes" / env["PREFECT__FLOW_RUN_ID"]
    return None


def launch_key(job_path: str, out_dir: str, phase: str) -> str:
    """A launch's identity: the same job resumed after a restart is the same launch."""
    return hashlib.sha256(f"{job_path}|{out_dir}|{phase}".encode()).hexdigest()[:16]


def write_json(path: Path, data: dict) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(data), encoding="utf-8")
    os.replace(temporary, path)


@contextmanager
def announced(directory: Path | None, job_path: Path, out_dir: Path, phase: str) -> Iterator[None]:
    """Announce a launch to the other nodes for the block (node 0, while its own trainer runs)."""
    if directory is None:
        yield
        return
    directory.mkdir(parents=True, exist_ok=True)
    write_json(directory / LAUNCH, {"job": str(job_path), "out": str(out_dir), "phase": phase,
                                    "key": launch_key(str(job_path), str(out_dir), phase)})
    try:
        yield
    finally:
        (directory / LAUNCH).unlink(missing_ok=True)


def read_launch(directory: Path) -> dict | None:
    try:
        return json.loads((directory / LAUNCH).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def ended_since(directory: Path, marker: Path) -> bool:
    """Whether node 0's flow run ended after ``marker`` was written (both times from the shared file system)."""
    done = directory / DONE
    return done.is_file() and done.stat().st_mtime >= marker.stat().st_mtime


def wait_interval() -> float:
    return float(os.environ.get("POLYREASON_NODE_POLL_S", "1.0"))


def sleep() -> None:
    time.sleep(wait_interval())
