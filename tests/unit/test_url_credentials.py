"""A URL's user and password stay in the settings object and leave the process only where they are needed.

Every JSON form of the settings (MLflow params, Prefect's parameters, ``--json``) shows ``http://***@host``; a
hand-over to one of our own processes keeps them; a redacted URL coming back is refused naming its key.
"""

from __future__ import annotations

import json

import pytest
from fastapi.encoders import jsonable_encoder

from components.config import REVEALED, flatten, load_profile_dict
from components.settings import ModelSettings, ProfileError

URL = "http://alice:PASS@127.0.0.1:8000/v1"
SHOWN = "http://***@127.0.0.1:8000/v1"
PROFILE = {"name": "x", "tracking": {"tracking_uri": "http://bob:MLPW@mlflow.example:5000"},
           "evaluation": {"model": {"backend": "openai", "model": "m", "base_url": URL},
                          "benchmarks": [{"name": "mgsm", "data_dir": "d"}]}}


def test_the_settings_keep_the_secret_and_every_json_form_hides_it():
    profile = load_profile_dict(PROFILE)
    assert profile.evaluation.model.base_url == URL  # what the backend is built from
    assert profile.model_dump()["evaluation"]["model"]["base_url"] == URL
    dumped = profile.model_dump(mode="json")
    assert dumped["evaluation"]["model"]["base_url"] == SHOWN
    assert dumped["tracking"]["tracking_uri"] == "http://***@mlflow.example:5000"
    assert "PASS" not in json.dumps(jsonable_encoder(profile))  # how Prefect writes a flow run's parameters
    params = flatten(profile)  # the MLflow params of a run
    assert params["evaluation.model.base_url"] == SHOWN and "MLPW" not in json.dumps(params)


def test_repr_and_str_hide_it_too():
    model = ModelSettings(backend="openai", model="m", base_url=URL)
    assert "PASS" not in repr(model) and "PASS" not in str(model) and SHOWN in repr(model)
    assert "MLPW" not in repr(load_profile_dict(PROFILE))


def test_a_hand_over_to_our_own_process_keeps_the_secret():
    model = ModelSettings(backend="openai", model="m", base_url=URL)
    assert json.loads(model.model_dump_json(context=REVEALED))["base_url"] == URL
    assert ModelSettings.model_validate_json(model.model_dump_json(context=REVEALED)) == model


def test_a_redacted_url_coming_back_is_refused_naming_its_key():
    written = load_profile_dict(PROFILE).model_dump(mode="json")  # e.g. a placed stage's deployment parameters
    with pytest.raises(ProfileError) as error:
        load_profile_dict(written)
    text = str(error.value)
    assert "evaluation.model.base_url: http://***@127.0.0.1:8000/v1: its credentials were redacted" in text
    assert "tracking.tracking_uri" in text


def test_an_override_with_a_password_names_the_run_without_it():
    profile = load_profile_dict(PROFILE, ["evaluation.model.base_url=http://carol:PW2@10.0.0.1:9/v1"])
    assert profile.evaluation.model.base_url == "http://carol:PW2@10.0.0.1:9/v1"
    assert profile.tracking.run_label == "evaluation.model.base_url=http://***@10.0.0.1:9/v1"
    assert profile.tracking.overrides == {"evaluation.model.base_url": "http://***@10.0.0.1:9/v1"}


def test_mlflow_params_tags_and_the_json_result_hide_urls_they_are_handed():
    from cli.terminal import as_json, where_lines
    from runtime.tracking import _param_entities

    rewards = json.dumps([{"name": "mthinker", "params": {"judge": {"base_url": URL}}}])  # a list param, as JSON
    entities = _param_entities({"grpo.rewards": rewards, "plain": "http://h/v1", "api_key": "k"})
    assert {(e.key, e.value) for e in entities} == {("grpo.rewards", rewards.replace(URL, SHOWN)),
                                                    ("plain", "http://h/v1")}
    assert json.loads(as_json({"run_url": "http://u:p@mlflow:5000/#/runs/1", "n": 2})) == \
        {"run_url": "http://***@mlflow:5000/#/runs/1", "n": 2}
    assert where_lines("http://u:p@mlflow:5000/#/runs/1", None) == ["MLflow run: http://***@mlflow:5000/#/runs/1"]


def test_a_placed_stage_cannot_take_a_url_with_credentials():
    """Its parameters reach the work pool through Prefect, redacted: refused before any work, naming the keys."""
    with pytest.raises(ProfileError, match=r"placement\.evaluation, tracking\.tracking_uri, "
                                           r"evaluation\.model\.base_url: a URL with a user and password"):
        load_profile_dict({**PROFILE, "placement": {"evaluation": "gpu-pool"}})
