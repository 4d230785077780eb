"""What a person sees in the MLflow UI, against a real SQLite store: a model-training experiment (also one created
before experiments were tagged), run names that tell runs apart, links that open the model-training view."""

from __future__ import annotations

from components.config import load_profile_dict
from components.settings import TrackingSettings
from runtime import tracking

KIND = "mlflow.experimentKind"


def test_experiments_are_model_training_experiments_new_or_old(tmp_path):
    settings = TrackingSettings(experiment="new")
    run = tracking.open_run(settings, tmp_path, "demo-recipe")
    client = tracking.client(run.tracking_uri)
    assert client.get_experiment(run.experiment_id).tags[KIND] == "custom_model_development"

    old = client.create_experiment("old")  # made by an earlier version: no kind
    chosen = client.create_experiment("chosen", tags={KIND: "finetuning"})  # a kind set by a person stays
    tracking.open_run(settings.model_copy(update={"experiment": "old"}), tmp_path, "demo-recipe")
    tracking.open_run(settings.model_copy(update={"experiment": "chosen"}), tmp_path, "demo-recipe")
    assert client.get_experiment(old).tags[KIND] == "custom_model_development"
    assert client.get_experiment(chosen).tags[KIND] == "finetuning"


def test_run_names_say_the_stage_what_changed_and_a_short_id(tmp_path):
    data = {"name": "demo", "tracking": {"experiment": "names"},
            "evaluation": {"benchmarks": [{"name": "mgsm", "languages": ["en"]}]}}
    plain = load_profile_dict(data)
    changed = load_profile_dict(data, ["evaluation.sampling.seed=3"])
    with tracking.stage_run(plain.tracking, tmp_path, "demo-grpo", stage="grpo") as first:
        with tracking.stage_run(changed.tracking, tmp_path, "demo-grpo", stage="grpo", parent=first) as second:
            pass
    client = tracking.client(first.tracking_uri)
    names = [client.get_run(run.run_id).info.run_name for run in (first, second)]
    assert names == [f"demo-grpo · {first.run_id[:8]}", f"demo-grpo · evaluation.sampling.seed=3 · {second.run_id[:8]}"]
    assert tracking.flow_run_tags() == {}  # outside a Prefect flow run there is none to name


def test_a_run_link_opens_the_model_training_view():
    ref = tracking.RunRef("http://127.0.0.1:5000", "abc", "3")
    assert tracking.run_url(ref) == "http://127.0.0.1:5000/#/experiments/3/runs/abc?workflowType=machine_learning"


def test_training_runs_alone_log_system_metrics_at_the_set_interval(tmp_path):
    import time

    settings = TrackingSettings(experiment="system", system_metrics_interval_s=0.5)
    with tracking.stage_run(settings, tmp_path, "recipe · demo", stage="recipe") as recipe:
        with tracking.stage_run(settings, tmp_path, "sft · demo", stage="sft", parent=recipe) as sft:
            time.sleep(1.8)
        with tracking.stage_run(settings, tmp_path, "base evaluation · demo", stage="evaluation",
                                parent=recipe) as evaluation:
            time.sleep(1.0)
        off = settings.model_copy(update={"system_metrics_interval_s": 0})
        with tracking.stage_run(off, tmp_path, "grpo · demo", stage="grpo", parent=recipe) as quiet:
            time.sleep(1.0)
    client = tracking.client(sft.tracking_uri)
    measured = client.get_run(sft.run_id).data.metrics
    assert {"system/cpu_utilization_percentage", "system/system_memory_usage_megabytes"} <= set(measured)
    assert len(client.get_metric_history(sft.run_id, "system/cpu_utilization_percentage")) >= 2  # every 0.5 s
    assert not [k for k in client.get_run(recipe.run_id).data.metrics if k.startswith("system/")]  # no work of its own
    assert not [k for k in client.get_run(quiet.run_id).data.metrics if k.startswith("system/")]  # turned off
    assert not [k for k in client.get_run(evaluation.run_id).data.metrics if k.startswith("system/")]  # no training


def test_changed_settings_and_each_override_are_params_and_every_setting_is_in_settings_json(tmp_path):
    import json
    from pathlib import Path

    from components.config import flatten, load_profile

    demo = Path(__file__).resolve().parents[2] / "profiles" / "cpu-demo.yaml"
    profile = load_profile(demo, ["evaluation.benchmarks.0.limit=8", "grpo.sampling.max_new_tokens=48"])
    run = tracking.open_run(profile.tracking.model_copy(update={"experiment": "params"}), tmp_path, "demo-recipe",
                            settings_of={"": profile})
    client = tracking.client(run.tracking_uri)
    params = client.get_run(run.run_id).data.params
    assert params["override.evaluation.benchmarks.0.limit"] == "8"
    assert params["override.grpo.sampling.max_new_tokens"] == params["grpo.sampling.max_new_tokens"] == "48"
    assert params["name"] == "cpu-demo" and params["grpo.learning_rate"] == "0.0005"  # the demo's own choices
    assert "sft.resume" not in params and "grpo.lora.r" not in params  # left at their defaults (True, 8)
    assert profile.sft.resume is True and profile.grpo.lora.r == 8
    assert not [key for key in params if key.startswith("tracking.overrides")]  # each override once
    every = json.loads(Path(client.download_artifacts(run.run_id, "settings.json", str(tmp_path))).read_text())
    assert every == {key: value for key, value in flatten(profile).items()}  # every setting, defaults too
    assert len(params) < len(every) / 4, (len(params), len(every))  # the runs table's columns: a few dozen


def test_a_cache_hit_links_the_source_runs_logged_models_and_copies_nothing(tmp_path):
    from runtime.tracking import logged_models

    settings = TrackingSettings(experiment="hits")
    weights = tmp_path / "adapter"
    weights.mkdir()
    (weights / "adapter_model.safetensors").write_bytes(b"w" * 64)
    source = tracking.open_run(settings, tmp_path, "demo-sft")
    checkpoint = logged_models.log_model(source, "demo-sft-checkpoint-1", kind="sft-checkpoint", step=1,
                                         files=[weights / "adapter_model.safetensors"])
    adapter = logged_models.log_model(source, "demo-sft-adapter", kind="sft-adapter", step=2, directory=weights)
    hit = tracking.open_run(settings, tmp_path, "demo-sft")
    linked = logged_models.link_source_models(hit, source.run_id)

    client = tracking.client(hit.tracking_uri)
    every = client.search_logged_models([hit.experiment_id])
    assert sorted(m.model_id for m in every) == sorted([checkpoint, adapter])  # no new logged model
    assert linked == {"sft-checkpoint": checkpoint, "sft-adapter": adapter}
    run = client.get_run(hit.run_id)
    assert {o.model_id for o in run.outputs.model_outputs} == {checkpoint, adapter}  # MLflow's own link
    assert run.data.tags["polyreason.checkpoint.1"] == f"models:/{checkpoint}"
    assert source.run_id in run.data.tags["polyreason.cache.source_run_url"]
    assert "demo-sft" in run.data.tags["mlflow.note.content"]
    assert logged_models.link_source_models(hit, "0" * 32) == {}  # no such run: the caller logs its own


def test_a_reference_model_is_logged_once_per_fingerprint(tmp_path):
    from runtime.tracking import logged_models

    settings = TrackingSettings(experiment="references")
    first, second = (tracking.open_run(settings, tmp_path, "demo-evaluation-base") for _ in range(2))
    ids = [logged_models.reference_model(run, "base-tiny", "base-reference", fp, {"model": "tiny"}, {})
           for run, fp in ((first, "abc"), (second, "abc"), (second, "def"))]
    assert ids[0] == ids[1] != ids[2]
    assert len(tracking.client(first.tracking_uri).search_logged_models([first.experiment_id])) == 2
