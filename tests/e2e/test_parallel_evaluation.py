"""Evaluations fanned out to two workers give what the sequential evaluations give.

Three tiny from-config models (different random weights) are evaluated on two
benchmarks, sampled (so the rows depend on which prompts share a backend call and
on the seed of each call), through a real Prefect server and a real MLflow server:

* sequentially, one model after the other in this process, as the recipe does
  without fan-out;
* fanned out: ``execution.runner: threads`` with two workers, each model's
  generation a task in a process of its own (three tasks, two at a time), then
  the same per-model evaluations, which find every prompt in the journals.

The generations, scores and reports must be byte-identical files under the same
content-addressed paths, and every model's MLflow run must hold the same metrics.
The same fan-out runs on a local Ray (``runner: ray``) and on a local Dask cluster
(``runner: dask``) where their extras are installed (CI installs both). A language-sharded
fan-out (``shard_languages``, one task per language) is checked on the ``fake`` backend, whose answers depend on the prompt alone: its
files equal the sequential ones too, and a cached re-run plans no task.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.publishers import late_writes

pytestmark = pytest.mark.slow

SEEDS = (0, 1, 2)


def profile_for(project: Path, tracking_uri: str, shared_data: Path, model: dict, execution: dict) -> dict:
    return {
        "name": "parallel-evaluation", "project_dir": str(project),
        "tracking": {"tracking_uri": tracking_uri, "experiment": "e2e-parallel"},
        "execution": execution,
        "evaluation": {
            "model": model,
            "sampling": {"n": 2, "temperature": 0.8, "top_p": 0.95, "max_new_tokens": 6, "batch_size": 8, "seed": 3},
            "benchmarks": [
                {"name": "mgsm", "data_dir": str(shared_data / "mgsm"), "languages": ["en", "fr"], "limit": 2},
                {"name": "msvamp", "data_dir": str(shared_data / "msvamp"), "languages": ["en"], "limit": 2},
            ],
        },
    }


@pytest.fixture(scope="module")
def three_models(tmp_path_factory) -> list[Path]:
    from tests.helpers.tiny_model import build_tiny_model

    root = tmp_path_factory.mktemp("three-models")
    return [build_tiny_model(root / f"model-{seed}", seed=seed) for seed in SEEDS]


def evaluate(profile_dict: dict, model_dirs: list[Path]) -> tuple[list, list]:
    """What the recipe does for its evaluated models (``model_dirs``; none: the section's own model, as
    ``polyreason evaluate``): fan out when the profile asks, then one evaluation per model."""
    from components.config import load_profile_dict
    from flows.evaluation import evaluation_flow
    from flows.fanout import evaluation_fanout_flow
    from runtime.project import prepared
    from tasks.models import resolve_model_task

    profile, project = prepared(load_profile_dict(profile_dict))
    section = profile.evaluation.model
    models = [resolve_model_task(section.model_copy(update={"model": str(d)}), project, f"m{i}")
              for i, d in enumerate(model_dirs)] or [None]
    units = evaluation_fanout_flow(profile, models if model_dirs else None) if profile.execution.fans_out else []
    return units, [evaluation_flow(profile, model) for model in models]


def product_files(project: Path) -> dict[str, bytes]:
    """Every published generations, scores and metrics file, by its path in the project."""
    found = {}
    for pattern in ("artifacts/generation/*/generations.jsonl", "artifacts/scores/*/scores.json",
                    "artifacts/reports/*/metrics.json"):
        found.update({str(p.relative_to(project)): p.read_bytes() for p in sorted(project.glob(pattern))})
    return found


def run_metrics(client, outputs) -> dict[str, dict[str, float]]:
    """Each model's MLflow metrics, without ``system/*``: the machine's samples, logged while a run lasts, so their
    presence and values depend on how long it took, not on what it computed."""
    return {o.model.tag: {key: value for key, value in client.get_run(o.run_id).data.metrics.items()
                          if not key.startswith("system/")} for o in outputs}


def test_two_workers_evaluate_three_models_like_one_after_another(three_models, shared_data, tmp_path,
                                                                   prefect_server, mlflow_server):
    from mlflow import MlflowClient

    model = {"backend": "transformers", "model": str(three_models[0]), "dtype": "float32", "chat": True}
    sequential, fanned = tmp_path / "sequential", tmp_path / "fanned-out"
    _, one_by_one = evaluate(profile_for(sequential, mlflow_server, shared_data, model, {}), three_models)
    units, at_once = evaluate(profile_for(fanned, mlflow_server, shared_data, model,
                                          {"runner": "threads", "workers": 2, "cpu_threads": 1}), three_models)

    assert sorted(u.name for u in units) == ["m0: mgsm, msvamp", "m1: mgsm, msvamp", "m2: mgsm, msvamp"]
    assert all(u.prompts_generated == 4 + 2 and not u.skipped and u.gpus is None for u in units)
    first_end = min(u.ended_at for u in units)
    assert sum(u.started_at < first_end for u in units) == 2  # two tasks at once, the third after one of them

    expected = product_files(sequential)
    assert len([p for p in expected if p.endswith("generations.jsonl")]) == 3 * 2
    assert product_files(fanned) == expected  # same paths (same cache identities), same bytes
    assert all(b.generated for o in at_once for b in o.benchmarks.values())  # published by the evaluation itself
    client = MlflowClient(mlflow_server)
    assert run_metrics(client, at_once) == run_metrics(client, one_by_one)
    assert late_writes(fanned) == []


def test_language_shards_hand_their_rows_to_the_benchmark(shared_data, tmp_path, prefect_server, mlflow_server):
    model = {"backend": "fake", "model": "fake"}
    sharded = {"runner": "threads", "workers": 2, "split": "benchmark", "shard_languages": ["mgsm"]}
    _, one_by_one = evaluate(profile_for(tmp_path / "sequential", mlflow_server, shared_data, model, {}), [])
    units, outputs = evaluate(profile_for(tmp_path / "sharded", mlflow_server, shared_data, model, sharded), [])

    assert sorted(u.name for u in units) == ["base: mgsm[en]", "base: mgsm[fr]", "base: msvamp"]
    assert product_files(tmp_path / "sharded") == product_files(tmp_path / "sequential")
    rows = [json.loads(line) for line in Path(outputs[0].benchmarks["mgsm"].generations.path).read_text().splitlines()]
    assert [(r["lang"], r["sample_index"]) for r in rows] == [("en", 0), ("en", 1)] * 2 + [("fr", 0), ("fr", 1)] * 2
    assert not list((tmp_path / "sharded" / "artifacts" / "generation").glob("*.shard-*/*.partial*"))
    again, _ = evaluate(profile_for(tmp_path / "sharded", mlflow_server, shared_data, model, sharded), [])
    assert again == []  # every file finished: no task planned
    assert late_writes(tmp_path / "sharded") == []


def cluster_runner(module: str) -> None:
    """Skip where the runner's extra is not installed, unless ``POLYREASON_REQUIRE_CLUSTER_RUNNERS`` is set (CI
    installs the ``ray`` and ``dask`` extras and sets it, so a missing package fails there instead of skipping)."""
    import importlib.util
    import os

    if importlib.util.find_spec(module) is None:
        if os.environ.get("POLYREASON_REQUIRE_CLUSTER_RUNNERS"):
            pytest.fail(f"{module} is not installed but POLYREASON_REQUIRE_CLUSTER_RUNNERS is set")
        pytest.skip(f"{module} is not installed (pip install 'polyreason[{module.removeprefix('prefect_')}]')")


def fans_out_like_sequential(runner: str, three_models, shared_data, tmp_path, mlflow_server) -> None:
    model = {"backend": "transformers", "model": str(three_models[0]), "dtype": "float32", "chat": True}
    sequential, clustered = tmp_path / "sequential", tmp_path / runner
    _, one_by_one = evaluate(profile_for(sequential, mlflow_server, shared_data, model, {}), three_models)
    units, at_once = evaluate(profile_for(clustered, mlflow_server, shared_data, model,
                                          {"runner": runner, "workers": 2, "gpus_per_task": 0, "cpu_threads": 1}),
                              three_models)
    assert sorted(u.name for u in units) == ["m0: mgsm, msvamp", "m1: mgsm, msvamp", "m2: mgsm, msvamp"]
    assert all(u.prompts_generated == 4 + 2 and not u.skipped for u in units)
    expected = product_files(sequential)
    assert len([p for p in expected if p.endswith("generations.jsonl")]) == 3 * 2
    assert product_files(clustered) == expected  # same paths (same cache identities), same bytes
    from mlflow import MlflowClient

    client = MlflowClient(mlflow_server)
    assert run_metrics(client, at_once) == run_metrics(client, one_by_one)
    print(f"{runner}: {len(units)} tasks, {len(expected)} files byte-identical to the sequential run, "
          f"{sum(len(m) for m in run_metrics(client, at_once).values())} MLflow metrics equal")


def test_a_local_ray_evaluates_like_one_after_another(three_models, shared_data, tmp_path, prefect_server,
                                                      mlflow_server, monkeypatch):
    """``runner: ray`` without an address: prefect-ray starts a local Ray with ``workers`` CPUs (2) for the run;
    each task asks for no GPU."""
    cluster_runner("prefect_ray")
    monkeypatch.setenv("PREFECT_API_URL", prefect_server)  # the Ray workers report the task runs to the same server
    fans_out_like_sequential("ray", three_models, shared_data, tmp_path, mlflow_server)


def test_a_local_dask_cluster_evaluates_like_one_after_another(three_models, shared_data, tmp_path, prefect_server,
                                                               mlflow_server, monkeypatch):
    """``runner: dask`` without an address: prefect-dask starts a local cluster of ``workers`` (2) worker
    processes, one thread each, declaring ``GPU=0``; tasks ask for no GPU, so none carries a resource claim."""
    cluster_runner("prefect_dask")
    monkeypatch.setenv("PREFECT_API_URL", prefect_server)  # the Dask worker processes report to the same server
    fans_out_like_sequential("dask", three_models, shared_data, tmp_path, mlflow_server)
