"""The flow run a person starts from the Run form: named like its MLflow runs, its page showing the results
of the stage subflows it ran, and the MLflow run holding every setting and each override as a param."""

from __future__ import annotations

import pytest


@pytest.fixture
def fake_profile(tmp_path, shared_data, monkeypatch):
    """A whole profile as the Run form's ``advanced_profile`` (the profiles folder, read when ``flows.entry`` is
    first imported, stays the repository's)."""
    from components.config import load_profile_dict

    monkeypatch.setenv("POLYREASON_PROJECT_DIR", str(tmp_path / "project"))
    return load_profile_dict({"name": "fake-eval", "tracking": {"experiment": "started"},
                              "evaluation": {"model": {"backend": "fake", "model": "fake"},
                                             "sampling": {"n": 1, "max_new_tokens": 16},
                                             "benchmarks": [{"name": "mgsm", "data_dir": str(shared_data / "mgsm"),
                                                             "languages": ["fr"], "limit": 2}]}})


@pytest.fixture
def run_logs(monkeypatch):
    """The lines Prefect's API log handler is given for the server (a spy: the real handler still sends them)."""
    from prefect.logging.handlers import APILogHandler

    lines: list[tuple[str, str]] = []  # (the flow run it is sent to, the line)
    real = APILogHandler.emit

    def emit(self, record):
        lines.append((str(getattr(record, "flow_run_id", "")), record.getMessage()))
        return real(self, record)

    monkeypatch.setattr(APILogHandler, "emit", emit)
    return lines


def test_the_started_run_is_named_shows_the_results_and_its_mlflow_run_has_every_setting(fake_profile, tmp_path,
                                                                                         run_logs):
    from prefect import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, FlowRunFilter, \
        FlowRunFilterParentFlowRunId

    from flows.entry import evaluate
    from runtime import tracking

    state = evaluate(advanced_profile=fake_profile, overrides=["evaluation.sampling.seed=3"], return_state=True)
    assert state.is_completed(), state.message
    summary = state.result()
    with get_client(sync_client=True) as client:
        started = client.read_flow_run(state.state_details.flow_run_id)
        children = client.read_flow_runs(flow_run_filter=FlowRunFilter(
            parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[started.id])))
        keys = {a.key for a in client.read_artifacts(artifact_filter=ArtifactFilter(
            flow_run_id=ArtifactFilterFlowRunId(any_=[started.id])))}
    assert started.name == "evaluate · fake-eval · evaluation.sampling.seed=3"
    assert [run.name for run in children] == ["base evaluation · fake-eval · evaluation.sampling.seed=3"]
    assert {"plan-fake-eval", "fake-eval-evaluation-base-metrics", "fake-eval-evaluation-base-mlflow-run"} <= keys

    for run in (children[0].id, started.id):  # the stage's progress, in its run's logs and in the started run's
        logged = [line for flow_run, line in run_logs if flow_run == str(run)]
        assert any(line.startswith("evaluation base: started (MLflow run ") for line in logged), logged
        assert "generate base: prompts 2/2" in " ".join(logged)
        assert sum(line.startswith("evaluation base: done in") for line in logged) == 1, logged

    uri = tracking.tracking_uri(tracking.TrackingSettings(), tmp_path / "project")
    run = tracking.client(uri).get_run(summary["run_id"])
    params = run.data.params
    assert run.data.tags["prefect.flow_run.name"] == "base evaluation · fake-eval · evaluation.sampling.seed=3"
    assert run.info.run_name == f"base evaluation · fake-eval · evaluation.sampling.seed=3 · {run.info.run_id[:8]}"
    from prefect.settings import PREFECT_UI_URL

    url = run.data.tags.get("prefect.flow_run.url")
    if PREFECT_UI_URL.value():  # a server with a UI is configured (an earlier test's, in a whole-suite run)
        assert url and url.startswith("http") and "/flow-run" in url, url
    else:  # Prefect's temporary in-process server has no UI to link to: no tag, never "None/flow-runs/…"
        assert url is None, url
    assert params["override.evaluation.sampling.seed"] == "3"
    assert params["evaluation.sampling.max_new_tokens"] == "16"
    assert params["evaluation.model.model"] == "fake" and params["evaluation.model_tag"] == "base"


def test_a_stage_started_with_the_placing_runs_tag_reports_its_progress_to_that_run(fake_profile, run_logs,
                                                                                     tmp_path):
    """A placed stage runs in another pool's worker process; what it learns of the run that placed it is the tag
    ``run_stage`` gives its flow run. Here the stage is a subflow created under that tag in this process, with no
    started run known to it otherwise: its lines must reach the placing run through the tag alone."""
    from prefect import flow, tags
    from prefect.runtime import flow_run

    from flows.evaluation import evaluation_flow
    from runtime.flow_runs.progress import progress_tags, started_run

    from components.config import load_profile_dict

    # its own project (the flow is called directly: no ``flows.entry`` reads POLYREASON_PROJECT_DIR), so the
    # generation runs here rather than reusing an earlier run's in the working directory
    dump = {**fake_profile.model_dump(mode="json"), "project_dir": str(tmp_path / "project")}
    profile = load_profile_dict(dump, ["evaluation.sampling.seed=11"])

    @flow(name="placing")
    def placing() -> tuple[str, list[str]]:
        given = progress_tags()
        with tags(*given):
            evaluation_flow(profile)
        return flow_run.get_id(), given

    placing_id, given = placing()
    assert given == [f"polyreason-progress-to:{placing_id}"]
    assert started_run() is None  # nothing of the tagged run stays behind in this process
    logged = [line for run, line in run_logs if run == placing_id]
    assert any(line.startswith("evaluation base: started (MLflow run ") for line in logged), logged
    assert "generate base: prompts 2/2" in " ".join(logged)
