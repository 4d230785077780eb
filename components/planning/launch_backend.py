"""The package a trainer's launch backend needs, and the refusal, before any work, when it cannot be imported.

An accelerate config's ``distributed_type`` decides what ``accelerate launch`` starts: DeepSpeed
(``DEEPSPEED``) needs the ``deepspeed`` package, FSDP and plain multi-process launches (``FSDP``,
``MULTI_GPU``, ``MULTI_CPU``) a torch built with ``torch.distributed``. Without them the launch fails only
when the trainer starts, after every earlier stage of a recipe has run (accelerate's launcher:
"DeepSpeed is not installed"). The plan asks accelerate's own checks
(``accelerate.utils.imports``: ``is_deepspeed_available``, the package found and installed;
``is_torch_distributed_available``) and refuses the stage with a ``Problem`` naming its
``accelerate_config``, the config and the package, so ``polyreason plan`` and every training command
(preflight, the Run form's entry flow: both refuse a plan's problems) stop before any work.

A stage placed on a work pool trains on that pool's machines, which this process cannot see: the plan
names the backend and its package there, and accelerate's launcher checks it where the stage starts.

>>> launch_backend({"distributed_type": "NO"}) is None, launch_backend({}) is None
(True, True)
>>> backend = launch_backend({"distributed_type": "FSDP", "fsdp_config": {"fsdp_version": 2}})
>>> backend.name, backend.package, backend.available
('FSDP2', 'torch.distributed', True)
>>> launch_backend({"distributed_type": "DEEPSPEED", "deepspeed_config": {"zero_stage": 3}}).name
'DeepSpeed ZeRO-3'
"""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass
from typing import Any, Mapping

from components.planning.memory import accelerate_yaml
from components.planning.stage import Problem, StagePlan

GPU_INSTALL = 'pip install -c constraints/gpu.txt -e ".[gpu]"'
BACKENDS = {  # distributed_type -> (the package it needs, accelerate's check of it, how to get it)
    "DEEPSPEED": ("deepspeed", "is_deepspeed_available",
                  f"install the gpu extra ({GPU_INSTALL}, which pins DeepSpeed) or choose a config without "
                  "DeepSpeed (multi-gpu-fsdp)"),
    "FSDP": ("torch.distributed", "is_torch_distributed_available",
             "this torch was built without torch.distributed: install a torch build that has it (every Linux "
             "wheel does)"),
    "MULTI_GPU": ("torch.distributed", "is_torch_distributed_available",
                  "this torch was built without torch.distributed: install a torch build that has it"),
    "MULTI_CPU": ("torch.distributed", "is_torch_distributed_available",
                  "this torch was built without torch.distributed: install a torch build that has it"),
}


@dataclass(frozen=True)
class Backend:
    """What a launch starts (``DeepSpeed ZeRO-3``), the package it needs, whether accelerate finds it here."""

    kind: str
    name: str
    package: str
    available: bool
    remedy: str

    def version(self) -> str:
        """The installed version of the package (torch's for ``torch.distributed``)."""
        return importlib.metadata.version(self.package.split(".")[0])


def launch_backend(config: Mapping[str, Any]) -> Backend | None:
    """The backend an accelerate config (a mapping) launches, or ``None`` for one plain process."""
    kind = str(config.get("distributed_type") or "NO").upper()
    if kind not in BACKENDS:
        return None
    package, check, remedy = BACKENDS[kind]
    from accelerate.utils import imports

    return Backend(kind, backend_name(kind, config), package, bool(getattr(imports, check)()), remedy)


def backend_name(kind: str, config: Mapping[str, Any]) -> str:
    """``DeepSpeed ZeRO-3``, ``FSDP2``, ``DDP`` (several processes) in words."""
    if kind == "DEEPSPEED":
        return f"DeepSpeed ZeRO-{(config.get('deepspeed_config') or {}).get('zero_stage', '?')}"
    if kind == "FSDP":
        return f"FSDP{(config.get('fsdp_config') or {}).get('fsdp_version', 1)}"
    return "DDP (several processes)"


def backend_problems(stage: StagePlan, profile: Any, name: str, section: Any) -> list[Problem]:
    """The stage's ``launch backend`` line; a ``Problem`` naming ``<name>.accelerate_config`` when the backend's
    package cannot be imported here (a stage placed on a work pool is checked where it runs)."""
    backend = launch_backend(accelerate_yaml(section.accelerate_config))
    if backend is None:
        return []
    pool = profile.placement.get(name)
    if pool:
        stage.add("launch backend", f"{backend.name}: needs {backend.package} on work pool {pool!r}'s machines "
                                    "(accelerate's launcher checks it there)", launch_backend=backend.package)
        return []
    if backend.available:
        stage.add("launch backend", f"{backend.name} ({backend.package} {backend.version()})",
                  launch_backend=backend.package)
        return []
    stage.add("launch backend", f"{backend.name}: {backend.package} is not importable here",
              launch_backend=backend.package)
    return [Problem(name, (f"{name}.accelerate_config",),
                    f"accelerate config {section.accelerate_config} launches {backend.name} (distributed_type "
                    f"{backend.kind}), which needs {backend.package}, not importable here: {backend.remedy}")]
