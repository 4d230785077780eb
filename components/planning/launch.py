"""How many trainer processes a training stage launches, on how many machines, as its launch will start them.

The plan's world size is the one the trainer will see: on a multi-node work pool,
the nodes × processes per node its job sets (``POLYREASON_NNODES``,
``POLYREASON_NPROC_PER_NODE``; the launch passes their product to accelerate as
``--num_processes``, ``components.training.multinode.Rendezvous``), read for a stage the
profile places on a pool when the plan runs with them set (inside the job, or set by
hand to the pool's figures); otherwise what the stage's accelerate config launches,
``num_machines`` × (``num_processes`` // ``num_machines``), as accelerate reads it
(``components.training.multinode.accelerate_world``); one process without a config.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from components.planning.memory import accelerate_yaml
from components.planning.stage import Problem
from components.training.multinode import accelerate_world, pool_layout


@dataclass(frozen=True)
class Launch:
    """``machines`` × ``per_machine`` trainer processes, and where those figures come from."""

    machines: int
    per_machine: int
    basis: str

    @property
    def processes(self) -> int:
        return self.machines * self.per_machine

    def text(self) -> str:
        """``16 processes (2 machines × 8: …)`` or ``1 process (…)``."""
        count = f"{self.processes} process{'es' if self.processes > 1 else ''}"
        shape = f"{self.machines} machines × {self.per_machine}: " if self.machines > 1 else ""
        return f"{count} ({shape}{self.basis})"


def stage_launch(profile: Any, name: str, section: Any, env: Mapping[str, str] | None = None) -> Launch:
    """The launch of trainer section ``name`` (``env``: the environment the pool's job sets, default this one)."""
    pool = profile.placement.get(name)
    layout = pool_layout(env) if pool else None
    if layout is not None:
        return Launch(*layout, f"work pool {pool!r}'s job: POLYREASON_NNODES × POLYREASON_NPROC_PER_NODE")
    if section.accelerate_config is None:
        return Launch(1, 1, "no accelerate config: python -m")
    config = accelerate_yaml(section.accelerate_config)
    machines, per_machine = accelerate_world(config)
    basis = (f"accelerate config {section.accelerate_config}: num_processes {config.get('num_processes') or 1}"
             + (f" over num_machines {machines}" if machines > 1 else ""))
    if pool:
        basis += (f"; placed on work pool {pool!r}: a multi-node pool's job sets the nodes at run time, plan with "
                  "POLYREASON_NNODES and POLYREASON_NPROC_PER_NODE set as it sets them")
    return Launch(machines, per_machine, basis)


def launch_problems(profile: Any, name: str, section: Any, launch: Launch) -> list[Problem]:
    """A launch on several nodes without an accelerate config (the trainer launch refuses it)."""
    if launch.machines > 1 and section.accelerate_config is None:
        return [Problem(name, (f"{name}.accelerate_config", f"placement.{name}"),
                        f"{launch.text()}: training on several nodes needs an accelerate config (a sharded one: "
                        "multi-gpu-zero3 or multi-gpu-fsdp)")]
    return []
