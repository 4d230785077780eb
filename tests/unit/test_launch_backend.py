"""A trainer launch whose backend cannot be imported is refused before any work, naming the config and the package.

The oracle is accelerate's own launcher: with ``deepspeed`` made unimportable (``sys.modules["deepspeed"] =
None``: the import system then finds no such module, as on a machine that never installed it), accelerate's
DeepSpeed launcher raises "DeepSpeed is not installed". The plan refuses the same configs, ``polyreason plan``
exits 2 with the problem, and a training command's preflight refuses it before any Prefect work. Where the
package is importable the plan names the installed version instead.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.preflight import Refused, check_profile
from components.config import load_profile
from components.planning import plan_profile

REPO = Path(__file__).resolve().parents[2]
PCS = REPO / "profiles" / "qwen3-8b-pcs-grpo.yaml"  # GRPO on multi-gpu-zero3 (DeepSpeed ZeRO-3), SFT on single-gpu


@pytest.fixture
def no_deepspeed(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "deepspeed", None)
    from accelerate.commands.launch import deepspeed_launcher

    with pytest.raises(ImportError, match="DeepSpeed is not installed"):  # accelerate's launcher agrees
        deepspeed_launcher(None)


def lines(plan, stage: str) -> dict[str, str]:
    return dict(next(s for s in plan.stages if s.stage == stage).lines)


def backend_problems(plan) -> list[tuple[str, tuple[str, ...], str]]:
    return [(p.stage, p.keys, p.message) for p in plan.problems if p.keys[0].endswith(".accelerate_config")]


def test_a_deepspeed_launch_without_deepspeed_is_refused_naming_config_and_package(no_deepspeed):
    profile = load_profile(PCS, [f"project_dir={REPO}", "sft.accelerate_config=multi-gpu-zero2"])
    plan = plan_profile(profile)
    assert backend_problems(plan) == [
        ("sft", ("sft.accelerate_config",), "accelerate config multi-gpu-zero2 launches DeepSpeed ZeRO-2 "
         "(distributed_type DEEPSPEED), which needs deepspeed, not importable here: install the gpu extra "
         "(pip install -c constraints/gpu.txt -e \".[gpu]\", which pins DeepSpeed) or choose a config without "
         "DeepSpeed (multi-gpu-fsdp)"),
        ("grpo", ("grpo.accelerate_config",), "accelerate config multi-gpu-zero3 launches DeepSpeed ZeRO-3 "
         "(distributed_type DEEPSPEED), which needs deepspeed, not importable here: install the gpu extra "
         "(pip install -c constraints/gpu.txt -e \".[gpu]\", which pins DeepSpeed) or choose a config without "
         "DeepSpeed (multi-gpu-fsdp)")]
    with pytest.raises(Refused) as refused:  # a training command's preflight, before Prefect starts
        check_profile(profile, ["grpo"])
    assert [line for line in refused.value.problems if "accelerate_config" in line] == [
        f"grpo.accelerate_config: {backend_problems(plan)[1][2]}"]


def test_polyreason_plan_exits_2_on_it(no_deepspeed):
    from cli.app import app

    result = CliRunner().invoke(app, ["plan", str(PCS), "--project-dir", str(REPO)])
    assert result.exit_code == 2
    assert "grpo.accelerate_config: accelerate config multi-gpu-zero3 launches DeepSpeed ZeRO-3" in result.stderr
    assert "launch backend         DeepSpeed ZeRO-3: deepspeed is not importable here" in result.stdout


def test_an_fsdp_launch_needs_no_extra_package(no_deepspeed):
    plan = plan_profile(load_profile(PCS, [f"project_dir={REPO}", "grpo.accelerate_config=multi-gpu-fsdp"]))
    assert backend_problems(plan) == []
    import torch

    assert lines(plan, "grpo")["launch backend"] == f"FSDP2 (torch.distributed {torch.__version__})"


def test_a_stage_placed_on_a_pool_is_checked_where_it_runs(no_deepspeed):
    plan = plan_profile(load_profile(PCS, [f"project_dir={REPO}", "placement.grpo=gpu-pool"]))
    assert backend_problems(plan) == []
    assert lines(plan, "grpo")["launch backend"] == (
        "DeepSpeed ZeRO-3: needs deepspeed on work pool 'gpu-pool''s machines (accelerate's launcher checks it there)")


def test_with_deepspeed_installed_the_plan_names_its_version():
    plan = plan_profile(load_profile(PCS, [f"project_dir={REPO}"]))
    assert backend_problems(plan) == []
    version = importlib.metadata.version("deepspeed")  # the gpu extra's (and the test environment's) DeepSpeed
    assert lines(plan, "grpo")["launch backend"] == f"DeepSpeed ZeRO-3 (deepspeed {version})"
    assert "launch backend" not in lines(plan, "sft")  # single-gpu: one plain process
