"""Checks from the profile alone, before any Prefect work: each problem named by its key and path or URL,
all of them at once."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from cli.preflight import Refused, check_profile, looks_local
from cli.store_check import tracking_problems
from components.config import load_profile_dict


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def project(tmp_path) -> Path:
    data = tmp_path / "mgsm"
    data.mkdir()
    for lang in ("en", "fr"):
        (data / f"mgsm_{lang}.tsv").write_text("One plus one?\t2\n", encoding="utf-8")
    (tmp_path / "models").mkdir()
    return tmp_path


def profile(project: Path, **evaluation) -> dict:
    section = {"model": {"backend": "fake", "model": "fake"},
               "benchmarks": [{"name": "mgsm", "data_dir": "mgsm", "languages": ["en"], "limit": 1}]}
    return {"name": "t", "project_dir": str(project), "evaluation": {**section, **evaluation}}


def problems(data: dict) -> list[str]:
    try:
        check_profile(load_profile_dict(data), ["evaluation"])
    except Refused as refused:
        return refused.problems
    return []


DEAD = f"http://127.0.0.1:{closed_port()}"
CASES = [
    ("fine", {}, []),
    ("missing data_dir", {"benchmarks": [{"name": "mgsm", "data_dir": "nope"}]},
     ["evaluation.benchmarks.0.data_dir: {project}/nope does not exist"]),
    ("language not in the copy", {"benchmarks": [{"name": "mgsm", "data_dir": "mgsm", "languages": ["en", "ko", "th"]}]},
     ["evaluation.benchmarks.0.languages: mgsm has no ko, th in {project}/mgsm (it has: en, fr)"]),
    ("missing exemplars", {"prompt": {"style": "few_shot", "num_shots": 2, "exemplars_path": "ex.json"}},
     ["evaluation.prompt.exemplars_path: {project}/ex.json does not exist"]),
    ("local model typo", {"model": {"backend": "transformers", "model": "./tiny-modle"}},
     ["evaluation.model.model: ./tiny-modle does not exist (a local model path"]),
    ("model under a project folder", {"model": {"backend": "transformers", "model": "models/tiny"}},
     ["evaluation.model.model: models/tiny does not exist"]),
    ("missing adapter", {"model": {"backend": "fake", "model": "fake", "adapter": "adapters/sft"}},
     ["evaluation.model.adapter: {project}/adapters/sft does not exist"]),
    ("API key not exported", {"model": {"backend": "openai", "model": "gpt", "api_key_env": "POLYREASON_UNSET_KEY"}},
     ["evaluation.model.api_key_env: the environment variable POLYREASON_UNSET_KEY (model.api_key_env) is not set"]),
    ("dead endpoint", {"model": {"backend": "openai", "model": "m", "base_url": f"{DEAD}/v1"}},
     [f"evaluation.model.base_url: {DEAD}/v1 is not reachable"]),
    ("everything at once", {"benchmarks": [{"name": "mgsm", "data_dir": "nope"}],
                            "model": {"backend": "transformers", "model": "/no/such/model"}},
     ["evaluation.benchmarks.0.data_dir", "evaluation.model.model: /no/such/model does not exist"]),
]


@pytest.mark.parametrize(("case", "evaluation", "expected"), CASES, ids=[c[0] for c in CASES])
def test_problems_are_named_by_key(project, monkeypatch, case, evaluation, expected):
    monkeypatch.delenv("POLYREASON_UNSET_KEY", raising=False)
    found = problems(profile(project, **evaluation))
    assert len(found) == len(expected), found
    for line, text in zip(found, expected):
        assert text.format(project=project) in line


def test_a_path_with_placeholders_is_checked_by_its_directory(project):
    data = {"name": "t", "project_dir": str(project),
            "data": {"languages": ["fr"], "source": {"path": "mgsm/mgsm_en.tsv", "format": "tsv",
                                                      "reference_path": "refs/test_{language}.json"},
                     "translation": {"model": {"backend": "fake", "model": "fake"}},
                     "traces": {"model": {"backend": "fake", "model": "fake"}}}}
    with pytest.raises(Refused) as refused:
        check_profile(load_profile_dict(data), ["data"])
    assert refused.value.problems == [f"data.source.reference_path: {project}/refs does not exist"]
    (project / "refs").mkdir()
    check_profile(load_profile_dict(data), ["data"])


def test_a_hub_model_missing_offline_is_named(project, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(project / "hf"))
    found = problems(profile(project, model={"backend": "transformers", "model": "someone/not-cached"}))
    assert found == ["evaluation.model.model: someone/not-cached is not in the local Hugging Face cache and "
                     "HF_HUB_OFFLINE is set"]


@pytest.mark.parametrize(
    ("value", "local"),
    [("./m", True), ("../m", True), ("/abs/m", True), ("~/m", True), ("m.gguf", True), ("a/b/c", True),
     ("models/x", True), ("Qwen/Qwen3-4B", False), ("gpt2", False)],
)
def test_what_looks_like_a_local_model_path(project, value, local):
    assert looks_local(value, project) is local


def test_an_unreachable_tracking_server_is_named_within_seconds(project):
    from components.settings import TrackingSettings

    found = tracking_problems(TrackingSettings(tracking_uri=DEAD), project)
    assert len(found) == 1 and found[0].startswith(f"tracking store {DEAD} is not reachable")


def test_an_unwritable_tracking_store_is_named(project):
    from components.settings import TrackingSettings

    (project / "afile").write_text("")
    uri = f"sqlite:///{project / 'afile' / 'mlflow.db'}"
    found = tracking_problems(TrackingSettings(tracking_uri=uri), project)
    assert found and found[0].startswith(f"tracking store {uri} is not writable") and "not a directory" in found[0]


def test_a_local_store_in_a_fresh_project_is_fine(project):
    from components.settings import TrackingSettings

    assert tracking_problems(TrackingSettings(), project / "fresh") == []
