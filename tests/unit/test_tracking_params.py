"""Which settings become MLflow params: every setting of every shipped profile, none that holds a secret."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.config import flatten, load_profile
from runtime.tracking import _param_entities, is_secret_key

PROFILES = sorted((Path(__file__).resolve().parents[2] / "profiles").glob("*.yaml"))


def logged_keys(params: dict) -> set[str]:
    return {param.key for param in _param_entities(params)}


@pytest.mark.parametrize("path", PROFILES, ids=[p.stem for p in PROFILES])
def test_every_setting_of_a_shipped_profile_is_logged(path):
    flat = flatten(load_profile(path))
    logged = logged_keys(flat)
    assert logged == set(flat)  # no shipped profile holds a secret value, so nothing is left out
    lengths = [key for key in flat if key.endswith("max_new_tokens")]
    assert set(lengths) <= logged


def test_the_shipped_profiles_log_every_generation_length():
    lengths = set()
    for path in PROFILES:
        lengths |= {key for key in logged_keys(flatten(load_profile(path))) if key.endswith("max_new_tokens")}
    # the sections that generate, read off the settings classes by hand
    assert {"evaluation.sampling.max_new_tokens", "grpo.sampling.max_new_tokens",
            "data.traces.sampling.max_new_tokens", "data.translation.sampling.max_new_tokens"} <= lengths


def test_the_environment_variable_names_are_logged_and_secret_values_are_not():
    params = {"evaluation.model.api_key_env": "OPENAI_API_KEY", "evaluation.model.api_key": "sk-123",
              "hub.hf_token": "hf_abc", "db.password": "hunter2", "judge.client_secret": "s",
              "grpo.sampling.max_new_tokens": 256, "grpo.lcrl.max_turn_tokens": 64, "tokenizer.pad_token_id": 0}
    assert logged_keys(params) == {"evaluation.model.api_key_env", "grpo.sampling.max_new_tokens",
                                   "grpo.lcrl.max_turn_tokens", "tokenizer.pad_token_id"}


@pytest.mark.parametrize("key", ["api_key", "a.token", "a.API_KEY", "x.openai_api_key", "y.passwd"])
def test_secret_names(key):
    assert is_secret_key(key)
