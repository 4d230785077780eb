"""The settings check registry names through the registries handed to them, and every entry point hands them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from components.catalog import CATALOG, REGISTRIES as CATALOG_REGISTRIES
from components.config import load_profile_dict
from components.settings import REGISTRIES, Profile, ProfileError
from components.settings.registries import KINDS, CheckedUpstream
from components.settings.trainer import TRL_CHECKS

REPO = Path(__file__).resolve().parents[2]
GRPO = {"model": {"model": "m"}, "dataset": "d.jsonl", "rewards": [{"name": "made_up", "params": {"tone": 2}}]}


class OneReward(CheckedUpstream):
    """Registries that know one reward, ``made_up``, whose only parameter is ``tone``."""

    def reward_problems(self, name, params):
        if name != "made_up":
            return [f"unknown reward {name!r} (known: made_up)"]
        return [f"unknown parameter {key!r}" for key in params if key != "tone"]


def test_the_settings_ask_the_registries_they_are_handed():
    with pytest.raises(ProfileError, match=r"grpo.rewards.0: .*unknown reward 'made_up' \(known: accuracy, "):
        load_profile_dict({"name": "t", "grpo": GRPO}, trl_checks=())  # the process's: the project's catalog
    handed = {REGISTRIES: OneReward(), TRL_CHECKS: frozenset()}  # trl's own checks (seconds of imports) not asked
    profile = Profile.model_validate({"name": "t", "grpo": GRPO}, context=handed)
    assert profile.grpo.rewards[0].name == "made_up"
    with pytest.raises(ValueError, match="unknown parameter 'mood'"):
        Profile.model_validate({"name": "t", "grpo": {**GRPO, "rewards": [{"name": "made_up", "params": {"mood": 1}}]}},
                               context=handed)


def test_the_catalog_answers_every_kind_the_settings_check():
    assert tuple(CATALOG_REGISTRIES) == KINDS
    assert all(CATALOG.names(kind) for kind in KINDS)
    assert CATALOG.check("accelerate config", "cpu") == "cpu"
    with pytest.raises(ValueError, match=r"unknown LCPR rule 'nope' \(known: "):
        CATALOG.check("LCPR rule", "nope")


def installed_in_a_fresh_interpreter(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    return (done.stdout + done.stderr).strip().splitlines()[-1]


def test_without_registries_a_name_is_refused_loudly_not_let_through():
    last = installed_in_a_fresh_interpreter(
        "from components.settings import ModelSettings; ModelSettings(model='m', backend='vllm')")
    assert last.startswith("LookupError: the settings were handed no registries") and "components.catalog" in last


@pytest.mark.parametrize("entry", ["cli", "flows"])
def test_the_command_line_and_the_flows_hand_the_catalog_over_when_imported(entry):
    """Prefect validates a flow's typed profile in whatever process imports the flow: no context, the installed
    registries (a deployment's worker imports the flow module, hence ``flows/__init__``)."""
    last = installed_in_a_fresh_interpreter(
        f"import {entry}; from components.settings.registries import registries_for; "
        "print(type(registries_for()).__name__)")
    assert last == "Catalog"
