"""Profile loading: unknown keys named, overrides applied, registry names checked, shipped profiles valid."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.config import fingerprint, load_profile, load_profile_dict, parse_override
from components.settings import ProfileError

REPO = Path(__file__).resolve().parents[2]


def test_unknown_key_is_named():
    with pytest.raises(ProfileError) as error:
        load_profile_dict({"name": "x", "evaluation": {"sampling": {"temprature": 0.6}}})
    assert "evaluation.sampling.temprature" in str(error.value)


def test_all_errors_reported_at_once():
    with pytest.raises(ProfileError) as error:
        load_profile_dict({"name": "x", "evaluation": {"sampling": {"n": 0, "top_p": 2}}})
    text = str(error.value)
    assert "2 invalid setting" in text and "sampling.n" in text and "sampling.top_p" in text


def test_dotted_overrides_change_nested_fields():
    data = {"name": "x", "evaluation": {"benchmarks": [{"name": "mgsm", "languages": ["en"]}]}}
    profile = load_profile_dict(data, ["evaluation.sampling.temperature=0.6", "evaluation.benchmarks.0.limit=3"])
    assert profile.evaluation.sampling.temperature == 0.6
    assert profile.evaluation.benchmarks[0].limit == 3


@pytest.mark.parametrize("overrides, label", [
    ([], None),
    (["evaluation.sampling.temperature=0.6"], "evaluation.sampling.temperature=0.6"),
    (["evaluation.sampling.n=4"], "evaluation.sampling.n=4"),  # a key the profile leaves to its default
    (["evaluation.sampling.n=1"], None),  # the default: nothing changes
    (["evaluation.benchmarks.0.limit=3", "evaluation.benchmarks.0.limit=5"], "evaluation.benchmarks.0.limit=5"),
    (["evaluation.benchmarks.0.name=mgsm"], None),  # the profile's own value: nothing differs
    (["tracking.experiment=other"], None),  # where results go does not tell runs apart
    (["evaluation.sampling.seed=2", "tracking.run_label=mine"], "mine"),  # a label set by hand wins
])
def test_runs_are_labelled_with_the_overrides_that_change_the_profile(overrides, label):
    data = {"name": "x", "evaluation": {"benchmarks": [{"name": "mgsm", "languages": ["en"]}]}}
    profile = load_profile_dict(data, overrides)
    assert profile.tracking.run_label == label
    assert set(profile.tracking.overrides) == ({o.split("=")[0] for o in overrides if not o.startswith("tracking.")}
                                               if label else set())  # each override that changed it, by its key
    unlabelled = profile.model_copy(update={"tracking": profile.tracking.model_copy(update={"run_label": None,
                                                                                             "overrides": {}})})
    assert fingerprint(profile) == fingerprint(unlabelled)  # how runs are named is in no cache key


def test_unknown_registry_names_are_refused():
    data = {"name": "x", "evaluation": {"model": {"backend": "nope"}, "scoring": {"verifier": "vibes"},
                                        "benchmarks": [{"name": "gsm-imaginary"}]}}
    with pytest.raises(ProfileError) as error:
        load_profile_dict(data)
    text = str(error.value)
    assert "3 invalid setting(s)" in text and "'nope'" in text and "'vibes'" in text and "'gsm-imaginary'" in text
    assert "evaluation.benchmarks.0.name: unknown benchmark 'gsm-imaginary'" in text


def test_unknown_accelerate_config_is_refused_at_load():
    with pytest.raises(ProfileError) as error:
        load_profile_dict({"name": "x", "sft": {"accelerate_config": "tpu"}})
    assert "sft.accelerate_config: unknown accelerate config 'tpu' (known: cpu, cpu-2, cpu-fsdp-2, cpu-zero3-2, multi-gpu-fsdp, multi-gpu-fsdp-4, multi-gpu-zero2, multi-gpu-zero3, multi-gpu-zero3-2, single-gpu)" in str(
        error.value)
    assert load_profile_dict({"name": "x", "sft": {"accelerate_config": "mine.yaml"}}).sft.accelerate_config == "mine.yaml"


def test_override_parsing():
    assert parse_override("a.b=[1, 2]") == (["a", "b"], [1, 2])
    with pytest.raises(ProfileError):
        parse_override("novalue")


def test_fingerprint_changes_with_content_and_ignores_operational_fields():
    a = load_profile_dict({"name": "x", "sft": {}})
    b = load_profile_dict({"name": "x", "sft": {}}, ["sft.learning_rate=0.1"])
    assert fingerprint(a) != fingerprint(b) and fingerprint(a) == fingerprint(load_profile_dict({"name": "x", "sft": {}}))
    timeout = load_profile_dict({"name": "x", "sft": {}}, ["sft.timeout_s=5", "tracking.experiment=other"])
    assert fingerprint(timeout) == fingerprint(a)  # operational: how the stage runs, not what it computes


@pytest.mark.parametrize("path", sorted((REPO / "profiles").glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_profiles_validate(path):
    profile = load_profile(path)
    assert profile.name


@pytest.mark.parametrize("path", sorted((REPO / "profiles").glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_profiles_survive_a_round_trip_through_json(path):
    """Deployments and the Prefect UI pass the dumped profile back: it must validate again, unchanged."""
    from components.settings import Profile

    profile = load_profile(path)
    assert Profile.model_validate(profile.model_dump(mode="json")) == profile


def test_a_comparison_baseline_the_recipe_does_not_evaluate_is_refused_at_load():
    evaluation = {"baseline": "grpo", "benchmarks": [{"name": "mgsm", "languages": ["en"]}]}
    with pytest.raises(ValueError, match="evaluation.baseline: 'grpo' is evaluated only after a grpo stage"):
        load_profile_dict({"name": "x", "sft": {}, "evaluation": evaluation})
    for baseline in ("base", "sft", "previous"):
        loaded = load_profile_dict({"name": "x", "sft": {}, "evaluation": {**evaluation, "baseline": baseline}})
        assert loaded.evaluation.baseline == baseline
    with pytest.raises(ValueError, match="evaluation.baseline"):
        load_profile_dict({"name": "x", "evaluation": {**evaluation, "baseline": "first"}})


def test_a_recipe_that_does_not_evaluate_its_base_model():
    """evaluation.evaluate_base false: the recipe evaluates only what it trains (the PCS profiles: table 2 has no
    base-model row); the base as the comparison's baseline, or nothing trained, is refused at load."""
    from components.planning.generation_plan import evaluated_models
    from flows.recipe_plan import RecipePlan

    evaluation = {"evaluate_base": False, "baseline": "previous", "benchmarks": [{"name": "mgsm", "languages": ["en"]}]}
    profile = load_profile_dict({"name": "x", "sft": {}, "evaluation": evaluation})
    assert RecipePlan.of(profile, None, "file:///tmp/none").evaluated() == ["sft"]
    assert evaluated_models(profile) == ["sft"]
    with_base = load_profile_dict({"name": "x", "sft": {}, "evaluation": {**evaluation, "evaluate_base": True}})
    assert RecipePlan.of(with_base, None, "file:///tmp/none").evaluated() == ["base", "sft"]
    with pytest.raises(ValueError, match="with evaluate_base false the recipe does not evaluate the base model"):
        load_profile_dict({"name": "x", "sft": {}, "evaluation": {**evaluation, "baseline": "base"}})
    with pytest.raises(ValueError, match="evaluation.evaluate_base: false leaves the trained models to evaluate"):
        load_profile_dict({"name": "x", "evaluation": evaluation})
    pcs = load_profile(Path(__file__).parents[2] / "profiles" / "qwen3-8b-pcs-grpo.yaml")
    assert evaluated_models(pcs) == ["sft", "grpo"]
