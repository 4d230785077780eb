"""A command that trains nothing loads its profile without trl, torch or transformers; one that trains checks its
trainer sections with trl when the profile loads, with the errors a full load gives."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cli.app import _load
from components.config import checked_trainers, load_profile
from components.settings import ProfileError

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "profiles" / "cpu-demo.yaml"
HEAVY = ("torch", "transformers", "trl", "peft")

STARTUP = f"""
import json, sys
from pathlib import Path
from cli.app import app, _load
from components.planning import plan_profile
from flows.commands import sections_for
app(["--help"], prog_name="polyreason", standalone_mode=False)
after_help = sorted(name for name in {HEAVY!r} if name in sys.modules)
profile = _load(Path({str(DEMO)!r}), [], "evaluate")
plan = plan_profile(profile, sections=sections_for("evaluate", profile))
print(json.dumps({{"help": after_help, "evaluate": sorted(name for name in {HEAVY!r} if name in sys.modules),
                   "stages": [stage.stage for stage in plan.stages]}}))
"""


def test_help_and_a_profile_for_a_command_that_trains_nothing_import_no_trainer_library():
    done = subprocess.run([sys.executable, "-c", STARTUP], cwd=REPO, capture_output=True, text=True, timeout=300,
                          check=True)
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"help": [], "evaluate": [], "stages": ["evaluation"]}


@pytest.mark.parametrize("overrides", [
    ["sft.learning_rat=1e-4"],  # not a field of trl's SFTConfig
    ["sft.learning_rate=abc"],  # not the float trl declares
    ["grpo.vllm_server_port=9000"],  # a vllm_ key without the vllm backend (needs trl's default to tell)
    ["sft.lr_scheduler_type=constant"],  # the demo's warm-up, which transformers' constant schedule ignores
    ["grpo.generation_batch_size=3"],  # refused by trl's __post_init__: not divisible by num_generations
])
def test_trainer_sections_checked_later_give_the_errors_of_a_full_load(overrides):
    with pytest.raises(ProfileError) as full:
        load_profile(DEMO, overrides)
    unchecked = load_profile(DEMO, overrides, trl_checks=())
    assert not unchecked.sft.trl_checked and not unchecked.grpo.trl_checked
    with pytest.raises(ProfileError) as later:
        checked_trainers(unchecked, source=str(DEMO))
    assert str(later.value) == str(full.value)


def test_a_section_checked_later_is_the_section_a_full_load_gives():
    overrides = ["sft.learning_rate='1e-4'"]  # a string: trl's float annotation coerces it
    unchecked = load_profile(DEMO, overrides, trl_checks=())
    assert unchecked.sft.learning_rate == "1e-4"  # as given: no trl yet
    checked = checked_trainers(unchecked)
    assert checked == load_profile(DEMO, overrides) and checked.sft.learning_rate == 1e-4
    assert checked.sft.trl_checked and checked.grpo.trl_checked


def test_a_trainer_is_never_built_from_keys_trl_has_not_checked():
    unchecked = load_profile(DEMO, trl_checks=["grpo"])
    assert unchecked.grpo.trl_checked and not unchecked.sft.trl_checked
    runtime = {"output_dir": "x", "use_cpu": True, "bf16": False, "fp16": False, "report_to": []}
    with pytest.raises(RuntimeError, match="the sft section was loaded without trl's checks"):
        unchecked.sft.trl_arguments(runtime)
    assert unchecked.grpo.trl_arguments(runtime)["beta"] == 0.001


def test_a_command_that_trains_checks_its_trainer_sections_when_the_profile_loads():
    with pytest.raises(ProfileError, match="sft.learning_rat: neither a field of this section nor of trl's SFTConfig"):
        _load(DEMO, ["sft.learning_rat=1e-4"], "sft")
    assert not _load(DEMO, ["sft.learning_rat=1e-4"], "evaluate").sft.trl_checked  # evaluate trains nothing
    with pytest.raises(ProfileError, match="grpo: vllm_server_port: read only when model.backend is vllm"):
        _load(DEMO, ["grpo.vllm_server_port=9000"], "recipe")


PLAN_STARTUP = f"""
import json, sys
from cli.app import app
seen = {{}}
import components.planning.plan as plan_module
from components.planning import render
stage_text = render.stage_text
def recording(stage):
    seen.setdefault(stage.stage, sorted(name for name in {HEAVY!r} if name in sys.modules))
    return stage_text(stage)
render.stage_text = recording
app(["plan", {str(DEMO)!r}, "--project-dir", {str(REPO)!r}], prog_name="polyreason", standalone_mode=False)
print(json.dumps(seen))
"""


def test_the_plan_prints_the_stages_before_its_first_trainer_without_trainer_libraries():
    done = subprocess.run([sys.executable, "-c", PLAN_STARTUP], cwd=REPO, capture_output=True, text=True, timeout=300,
                          check=True)
    lines = done.stdout.strip().splitlines()
    seen = json.loads(lines[-1])
    assert lines[0] == f"polyreason plan: cpu-demo ({DEMO})" and lines.index("data — the command's process "
                                                                             "(no placement)") == 3
    assert seen["data"] == [] and {"torch", "trl", "transformers"} <= set(seen["sft"])


@pytest.mark.parametrize("overrides", [["sft.learning_rat=1e-4"], ["grpo.generation_batch_size=3"]])
def test_the_plan_refuses_a_trainer_section_with_the_error_of_a_full_load(overrides):
    from typer.testing import CliRunner

    from cli.app import app

    with pytest.raises(ProfileError) as full:
        load_profile(DEMO, overrides)
    result = CliRunner().invoke(app, ["plan", str(DEMO), *overrides, "--project-dir", str(REPO)])
    assert result.exit_code == 2 and str(full.value) in result.output


DEPLOY_STARTUP = f"""
import json, sys
from pathlib import Path
from cli.deploy import profile_keys, profiles_in
profiles = profiles_in(Path({str(REPO / "profiles")!r}))
keys = profile_keys("recipe", profiles)
print(json.dumps({{"heavy": sorted(name for name in {HEAVY!r} if name in sys.modules), "demo": "sft.lora.r" in keys["cpu-demo"],
                   "checked": [p.name for p in profiles if (p.sft and p.sft.trl_checked) or (p.grpo and p.grpo.trl_checked)]}}))
"""


def test_deploy_reads_every_profile_and_its_run_form_keys_without_trainer_libraries():
    done = subprocess.run([sys.executable, "-c", DEPLOY_STARTUP], cwd=REPO, capture_output=True, text=True,
                          timeout=300, check=True)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"heavy": [], "demo": True, "checked": []}
