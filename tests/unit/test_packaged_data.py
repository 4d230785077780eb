"""The data the CPU profiles read ships in the package, with its licence, and is named ``packaged:<set>/...``.

Oracles: the full copies the team keeps beside the repository (the shipped files must be byte-identical to
them; CI has them, a clone without them skips that one check, saying so), ``hashlib`` for what a cache key
holds, and the preflight of every ``cpu-*`` profile in a project directory with nothing beside it.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from cli.preflight import Refused, check_profile
from components.config import load_profile, load_profile_dict
from components.data.packaged import PACKAGED_DATA
from components.settings import ProfileError

REPO = Path(__file__).resolve().parents[2]
CPU_PROFILES = sorted((REPO / "profiles").glob("cpu-*.yaml"))
LICENCES = {"mgsm": "CC BY 4.0", "mgsm_rev2": "CC BY-SA 4.0", "msvamp": "MIT", "mmath": "MIT",
            "mmlu_prox_sample": "Apache-2.0"}
COPYRIGHT = {"msvamp": ["Copyright (c) Microsoft Corporation."],
             "mmath": ["Copyright (c) 2025 RUCAIBox", "Copyright (c) 2025 NVIDIA"]}


def data_files(name: str) -> list[Path]:
    return sorted(p for p in PACKAGED_DATA[name].iterdir() if p.name not in ("PROVENANCE.md", "LICENSE"))


@pytest.mark.parametrize("name", sorted(PACKAGED_DATA))
def test_each_set_carries_its_provenance_and_licence(name):
    provenance = (PACKAGED_DATA[name] / "PROVENANCE.md").read_text(encoding="utf-8")
    assert LICENCES[name] in provenance
    if LICENCES[name] == "MIT":  # MIT asks for its notice and permission text in every copy
        text = (PACKAGED_DATA[name] / "LICENSE").read_text(encoding="utf-8")
        assert "Permission is hereby granted, free of charge" in text
        assert all(line in text for line in COPYRIGHT[name])
    elif LICENCES[name].startswith("CC"):  # CC licences: the notice and the licence's address
        assert "https://creativecommons.org/licenses/" in provenance


@pytest.mark.parametrize("name", sorted(set(PACKAGED_DATA) - {"mmlu_prox_sample"}))  # the sample is ours
def test_shipped_files_are_the_full_copies_bytes(name):
    full = Path(os.environ.get("POLYREASON_SHARED_DATA") or REPO.parent / "shared" / "data") / name
    if not full.is_dir():
        pytest.skip(f"the full copy {full} is not here to compare with (CI has it)")
    for path in data_files(name):
        assert path.read_bytes() == (full / path.name).read_bytes(), path


def test_packaged_sets_hold_what_the_cpu_profiles_read():
    languages = {name: sorted(p.stem.removeprefix("mgsm_").removeprefix("test_") for p in data_files(name)
                              if p.suffix in (".tsv", ".json", ".jsonl") and p.name not in ("exemplars.json",
                                                                                  "replaced_questions.json"))
                 for name in PACKAGED_DATA}
    assert languages == {"mgsm": ["bn", "de", "en", "es", "fr", "ja", "ru", "sw", "te", "th", "zh"],
                         "mgsm_rev2": ["en", "fr", "ja"], "msvamp": ["English", "French", "Japanese"],
                         "mmath": ["fr", "ja"], "mmlu_prox_sample": ["fr", "ja"]}


@pytest.mark.parametrize("path", CPU_PROFILES, ids=lambda p: p.stem)
def test_cpu_profile_passes_preflight_with_nothing_beside_the_project(path, tmp_path):
    assert "../shared/" not in path.read_text(encoding="utf-8")
    profile = load_profile(path, [f"project_dir={tmp_path}"])
    check_profile(profile, [name for name in ("data", "sft", "grpo", "evaluation", "audit") if getattr(profile, name)])


def test_a_packaged_reference_resolves_into_the_package_and_its_bytes_enter_the_key(tmp_path):
    from runtime.cache.file_inputs import settings_files

    profile = load_profile_dict({"name": "t", "project_dir": str(tmp_path), "evaluation": {
        "model": {"backend": "fake", "model": "fake"},
        "benchmarks": [{"name": "mmath", "data_dir": "packaged:mmath", "languages": ["fr"]}]}})
    assert profile.evaluation.benchmarks[0].data_dir == "packaged:mmath"  # as written: a dump validates again
    benchmark = profile.with_absolute_paths().evaluation.benchmarks[0]
    assert Path(benchmark.data_dir) == REPO / "components" / "data" / "packaged" / "mmath"
    digest = hashlib.sha256()
    for name in ("LICENSE", "PROVENANCE.md", "fr.json", "ja.json"):  # the directory: names and contents, sorted
        digest.update(name.encode())
        digest.update(hashlib.sha256((Path(benchmark.data_dir) / name).read_bytes()).hexdigest().encode())
    assert settings_files(benchmark) == {benchmark.data_dir: digest.hexdigest()}


@pytest.mark.parametrize(("value", "message"), [
    ("packaged:gsm8k", "evaluation.benchmarks.0.data_dir: unknown packaged data set 'gsm8k' (known: "
                       "mgsm, mgsm_rev2, mmath, mmlu_prox_sample, msvamp)"),
    ("packaged:mgsm/../../etc", "evaluation.benchmarks.0.data_dir: packaged:mgsm/../../etc: a packaged "
                                "path names a file inside its set ('..' is not allowed)"),
])
def test_a_bad_packaged_reference_is_refused_when_the_profile_loads(value, message):
    with pytest.raises(ProfileError) as refused:
        load_profile_dict({"name": "t", "evaluation": {"model": {"backend": "fake", "model": "fake"},
                                                       "benchmarks": [{"name": "mgsm", "data_dir": value}]}})
    assert message in str(refused.value)


def test_a_language_the_packaged_copy_lacks_says_where_the_full_set_is(tmp_path):
    profile = load_profile_dict({"name": "t", "project_dir": str(tmp_path), "evaluation": {
        "model": {"backend": "fake", "model": "fake"},
        "benchmarks": [{"name": "msvamp", "data_dir": "packaged:msvamp", "languages": ["fr", "de"]}]}})
    with pytest.raises(Refused) as refused:
        check_profile(profile, ["evaluation"])
    assert refused.value.problems == [
        f"evaluation.benchmarks.0.languages: msvamp has no de in {PACKAGED_DATA['msvamp']} (it has: en, fr, ja); "
        "packaged:msvamp ships only these: set data_dir to a full copy, or unset it to read the hub copy (or list "
        "the others in hub_languages)"]
