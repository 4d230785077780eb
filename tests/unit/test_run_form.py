"""The Run form's description of ``overrides``: every key it lists, with its listed value, is an override that loads."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cli.deploy import profile_keys, profiles_in
from components.config import load_profile
from components.override_keys import deployment_description, keys_markdown, overrides_help, section_keys

PROFILES = Path(__file__).resolve().parents[2] / "profiles"


def test_the_listed_keys_are_the_sections_the_command_runs_with_values_written_as_yaml():
    profile = {"name": "x", "evaluation": {"benchmarks": [{"name": "mgsm", "limit": None, "languages": ["fr", "ja"]}],
                                           "sampling": {"greedy": True}}, "sft": {"max_steps": 2}}
    assert section_keys(profile, ["evaluation"]) == {
        "evaluation.benchmarks.0.name": "mgsm", "evaluation.benchmarks.0.limit": "null",
        "evaluation.benchmarks.0.languages": '["fr", "ja"]', "evaluation.sampling.greedy": "true"}


def test_the_full_list_has_a_table_per_profile_and_the_parameter_names_the_default_profiles_values():
    text = keys_markdown("sft", {"a": {"sft.max_steps": "2"}, "b": {"sft.lora.r": "a|b"}})
    assert "### a\n\n| key | current value |\n|---|---|\n| `sft.max_steps` | 2 |" in text
    assert "| `sft.lora.r` | a\\|b |" in text  # a pipe in a value does not break the table
    assert "e.g. a has sft.max_steps=2." in overrides_help("a", {"sft.max_steps": "2"})


@pytest.mark.parametrize("command", ["recipe", "evaluate", "sft"])
def test_the_deployment_page_is_short_shows_changed_keys_with_values_and_links_the_full_list(command):
    from flows.commands import COMMANDS

    keys = profile_keys(command, profiles_in(PROFILES))
    full = keys_markdown(command, keys)
    text = deployment_description(command, COMMANDS[command][1], "cpu-demo", keys["cpu-demo"], "[keys](http://ui/k)")
    assert text.startswith(f"**polyreason {command}**: ") and text.endswith("[keys](http://ui/k)")
    assert len(text) < 2000 < len(full)  # a page, not every profile's every key
    shown = re.findall(r"^- `([^=`]+)=(.*)`$", text, flags=re.M)
    assert shown and all(keys["cpu-demo"][key] == value for key, value in shown)  # the profile's current values
    assert all(f"| `{key}` |" in full for key, _ in shown)


@pytest.mark.parametrize("command", ["recipe", "evaluate"])
def test_every_listed_key_with_its_listed_value_loads_as_an_override_and_changes_nothing(command):
    from flows.commands import trained_sections

    profiles = {p.name: p for p in profiles_in(PROFILES)}
    keys = profile_keys(command, list(profiles.values()))
    assert "cpu-demo" in keys and "evaluation.benchmarks.0.limit" in keys["cpu-demo"]
    for name in ("cpu-demo", "qwen3-8b-pcs-grpo"):
        overrides = [f"{key}={value}" for key, value in keys[name].items()]
        checks = trained_sections(command)  # as the deployed flow loads it when it runs
        assert load_profile(PROFILES / f"{name}.yaml", overrides, trl_checks=checks) == load_profile(
            PROFILES / f"{name}.yaml", trl_checks=checks)


def test_a_command_lists_only_the_profiles_it_can_run():
    keys = profile_keys("data", profiles_in(PROFILES))
    assert "cpu-demo" in keys and "cpu-adamame-evaluation" not in keys  # no data section
    assert all(key.startswith(("data.", "tracking.")) for key in keys["cpu-demo"])


def test_the_recipe_lists_where_it_registers_and_tracks():
    keys = profile_keys("recipe", profiles_in(PROFILES))["cpu-demo"]
    assert any(key.startswith("registry.") for key in keys) and any(key.startswith("tracking.") for key in keys)
