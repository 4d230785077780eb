"""Files a task reads enter its key by content; hub repositories by the commit a local snapshot names.

Expected digests are computed here with hashlib over bytes written by the test
(sha256 of b"abc" is the FIPS 180-2 test vector), never by the code under test.
The hub case builds a real Hugging Face cache layout (``models--org--name/refs/main``
and ``snapshots/<commit>/``) and reads it offline through huggingface_hub.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from runtime.cache.file_inputs import MISSING, content_digest, package_data, settings_files

ABC = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"  # sha256("abc"), FIPS 180-2


def test_a_file_enters_by_the_sha256_of_its_bytes(tmp_path):
    path = tmp_path / "words.txt"
    path.write_bytes(b"abc")
    assert content_digest(path) == ABC


def test_a_directory_changes_with_any_file_and_a_missing_path_is_named(tmp_path):
    (tmp_path / "mgsm").mkdir()
    (tmp_path / "mgsm" / "mgsm_en.tsv").write_text("q\t1\n", encoding="utf-8")
    before = content_digest(tmp_path / "mgsm")
    expected = hashlib.sha256(b"mgsm_en.tsv" + hashlib.sha256(b"q\t1\n").hexdigest().encode()).hexdigest()
    assert before == expected
    (tmp_path / "mgsm" / "mgsm_en.tsv").write_text("q\t2\n", encoding="utf-8")
    edited = content_digest(tmp_path / "mgsm")
    (tmp_path / "mgsm" / "mgsm_fr.tsv").write_text("q\t2\n", encoding="utf-8")
    assert len({before, edited, content_digest(tmp_path / "mgsm")}) == 3
    assert content_digest(tmp_path / "nowhere") == MISSING


def test_the_files_a_profile_names_are_found_in_a_task_s_inputs(tmp_path):
    from components.settings import BenchmarkSettings, PromptSettings, ScoringSettings, SFTSettings
    from components.training.accelerate import ACCELERATE_CONFIGS

    for name in ("exemplars.json", "words"):
        (tmp_path / name).write_bytes(b"abc")
    (tmp_path / "mgsm").mkdir()
    own_config = tmp_path / "launch.yaml"
    own_config.write_text("num_processes: 1\n", encoding="utf-8")
    inputs = {"benchmark": BenchmarkSettings(name="mgsm", data_dir=str(tmp_path / "mgsm"), languages=["en"]),
              "prompt": PromptSettings(style="few_shot", num_shots=1, exemplars_path=str(tmp_path / "exemplars.json")),
              "scoring": [ScoringSettings(lcpr_rule="lcb", words_path=str(tmp_path / "words"))],
              "sft": SFTSettings(model={"model": "m"}, accelerate_config="cpu"),
              "own": SFTSettings(model={"model": "m"}, accelerate_config=str(own_config))}
    found = settings_files(inputs)
    shipped = ACCELERATE_CONFIGS["cpu"]
    assert found == {str(tmp_path / "mgsm"): hashlib.sha256(b"").hexdigest(),
                     str(tmp_path / "exemplars.json"): ABC, str(tmp_path / "words"): ABC,
                     str(shipped): hashlib.sha256(shipped.read_bytes()).hexdigest(),
                     str(own_config): hashlib.sha256(b"num_processes: 1\n").hexdigest()}


def test_package_data_is_what_ships_beside_a_reached_module():
    from runtime.cache.import_graph import REPO, modules_of

    data = package_data({"components.data.benchmarks_qa"}, modules_of(), REPO)
    questions = REPO / "components" / "data" / "offline_qa" / "questions.jsonl"
    assert data["components/data/offline_qa/questions.jsonl"] == hashlib.sha256(questions.read_bytes()).hexdigest()
    assert not [name for name in data if name.endswith(".py")]
    assert package_data({"components.extraction"}, modules_of(), REPO) == {}


@pytest.fixture
def offline_cache(tmp_path, monkeypatch):
    """A Hugging Face hub cache with one model and one dataset snapshot, read offline."""
    from huggingface_hub import constants

    from runtime.cache import hub_revisions

    commits = {"model": "0123456789abcdef0123456789abcdef01234567",
               "dataset": "89abcdef0123456789abcdef0123456789abcdef"}
    for kind, repo in (("model", "models--org--tiny"), ("dataset", "datasets--org--bench")):
        (tmp_path / repo / "refs").mkdir(parents=True)
        (tmp_path / repo / "refs" / "main").write_text(commits[kind], encoding="utf-8")
        snapshot = tmp_path / repo / "snapshots" / commits[kind]
        snapshot.mkdir(parents=True)
        (snapshot / "config.json").write_text("{}", encoding="utf-8")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    hub_revisions.revision.cache_clear()
    yield commits
    hub_revisions.revision.cache_clear()


def test_hub_models_and_datasets_resolve_to_the_cached_snapshot_commit(offline_cache):
    from components.settings import DataSourceSettings, ModelSettings
    from runtime.cache.hub_revisions import UNRESOLVED, revision_tags, revisions

    inputs = {"model": ModelSettings(backend="transformers", model="org/tiny"),
              "source": DataSourceSettings(hub="org/bench", split="test"),
              "other": ModelSettings(backend="transformers", model="org/absent")}
    found = revisions(inputs)
    assert found == {"model:org/tiny": offline_cache["model"], "dataset:org/bench": offline_cache["dataset"],
                     "model:org/absent": UNRESOLVED}
    assert revision_tags(found)["revision.model.org/tiny"] == offline_cache["model"]


def test_a_local_model_or_an_api_model_has_no_hub_revision(tmp_path, offline_cache):
    from components.settings import ModelSettings
    from runtime.cache.hub_revisions import revisions

    assert revisions({"m": ModelSettings(backend="transformers", model=str(tmp_path))}) == {}
    assert revisions({"m": ModelSettings(backend="fake", model="org/tiny")}) == {}


def test_a_new_hub_commit_changes_the_task_key(tmp_path, offline_cache):
    from types import SimpleNamespace

    from components.settings import ModelSettings
    from runtime.cache import hub_revisions
    from runtime.cache.policy import SettingsInputs

    inputs = {"model": ModelSettings(backend="transformers", model="org/tiny")}
    before = SettingsInputs().compute_key(SimpleNamespace(task=SimpleNamespace(name="t")), inputs, {})
    (tmp_path / "models--org--tiny" / "refs" / "main").write_text("f" * 40, encoding="utf-8")
    (tmp_path / "models--org--tiny" / "snapshots" / ("f" * 40)).mkdir()
    hub_revisions.revision.cache_clear()
    after = SettingsInputs().compute_key(SimpleNamespace(task=SimpleNamespace(name="t")), inputs, {})
    assert before != after


def test_a_path_template_names_every_file_it_matches(tmp_path):
    from components.settings import DataSourceSettings

    (tmp_path / "test_English.json").write_bytes(b"abc")
    (tmp_path / "test_French.json").write_bytes(b"abc")
    source = DataSourceSettings(path=str(tmp_path / "test_English.json"),
                                reference_path=str(tmp_path / "test_{language}.json"))
    assert settings_files({"source": source}) == {
        str(tmp_path / "test_English.json"): ABC, str(tmp_path / "test_French.json"): ABC,
        str(tmp_path / "test_{language}.json"): MISSING}


def test_an_unset_retrieval_corpus_is_the_packaged_one_by_content():
    from components.retrieval import default_corpus
    from components.settings.lcrl import RetrievalSettings

    corpus = Path(default_corpus())
    assert settings_files({"retrieval": RetrievalSettings()}) == {
        str(corpus): hashlib.sha256(corpus.read_bytes()).hexdigest()}
