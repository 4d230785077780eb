"""A stage's MLflow run names the hub commits its tasks' keys were made with.

A real Hugging Face cache layout in a temporary folder (``datasets--juletxara--mgsm``
and ``models--org--tiny`` with ``refs/main`` and ``snapshots/<commit>/``) is read
offline; the keys of ``load-benchmark`` (MGSM from its hub copy) and
``build-prompts`` (a hub model) are computed as Prefect computes them, and the
stage's run (a real MLflow store) is then tagged with both commits and lists them
in ``cache_key/<task>.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

DATASET = "0123456789abcdef0123456789abcdef01234567"
MODEL = "89abcdef0123456789abcdef0123456789abcdef"


@pytest.fixture
def offline_cache(tmp_path, monkeypatch):
    from huggingface_hub import constants

    from runtime.cache import hub_revisions

    for folder, commit in (("datasets--juletxara--mgsm", DATASET), ("models--org--tiny", MODEL)):
        (tmp_path / "hub" / folder / "refs").mkdir(parents=True)
        (tmp_path / "hub" / folder / "refs" / "main").write_text(commit, encoding="utf-8")
        (tmp_path / "hub" / folder / "snapshots" / commit).mkdir(parents=True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    hub_revisions.revision.cache_clear()
    yield
    hub_revisions.revision.cache_clear()


def test_the_stage_run_is_tagged_with_the_hub_commits(tmp_path, offline_cache):
    from components.settings import BenchmarkSettings, ModelSettings, PromptSettings, TrackingSettings
    from runtime import tracking
    from runtime.cache.report import record_task_code
    from runtime.outputs import ModelRef
    from tasks.evaluation import build_prompts_task, load_benchmark_task

    model = ModelRef(tag="base", model=ModelSettings(backend="transformers", model="org/tiny"), fingerprint="f")
    inputs = {load_benchmark_task: {"benchmark": BenchmarkSettings(name="mgsm", languages=["en"])},
              build_prompts_task: {"items": [], "prompt": PromptSettings(), "model": model}}
    for task, given in inputs.items():
        task.cache_policy.compute_key(SimpleNamespace(task=task), given, {})
    settings = TrackingSettings(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}", experiment="revisions")
    with tracking.stage_run(settings, tmp_path, "revisions", stage="evaluation") as run:
        record_task_code(run, list(inputs))
    client = tracking.client(run.tracking_uri)
    tags = client.get_run(run.run_id).data.tags
    assert tags["revision.dataset.juletxara/mgsm"] == DATASET
    assert tags["revision.model.org/tiny"] == MODEL
    local = Path(client.download_artifacts(run.run_id, "cache_key/load-benchmark.json", str(tmp_path)))
    assert json.loads(local.read_text(encoding="utf-8"))["revisions"] == {"dataset:juletxara/mgsm": DATASET}
