"""MLflow runs are never left RUNNING: an interrupt closes them KILLED (parent and child), the CLI closes what
the unwinding missed, and the next start closes the runs of a process killed with -9."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from cli import interrupts
from components.settings import TrackingSettings
from runtime import tracking
from runtime.processes.abandoned import close_abandoned_runs
from runtime.processes.children import owner_token


def status(run) -> str:
    return tracking.client(run.tracking_uri).get_run(run.run_id).info.status


@pytest.fixture
def settings(tmp_path) -> TrackingSettings:
    return TrackingSettings(experiment="closing")


def test_an_interrupt_closes_parent_and_child_killed(tmp_path, settings):
    runs = []
    with pytest.raises(interrupts.Interrupted):
        with tracking.stage_run(settings, tmp_path, "parent", stage="recipe") as parent:
            runs.append(parent)
            with tracking.stage_run(settings, tmp_path, "child", stage="evaluation", parent=parent) as child:
                runs.append(child)
                raise interrupts.Interrupted(signal.SIGTERM)
    assert [status(run) for run in runs] == ["KILLED", "KILLED"]
    assert not {run.run_id for run in runs} & {run.run_id for run in tracking.open_runs()}  # no longer listed open


def test_a_failure_is_failed_and_the_owner_is_tagged(tmp_path, settings):
    with pytest.raises(ValueError):
        with tracking.stage_run(settings, tmp_path, "failing", stage="evaluation") as run:
            raise ValueError("bad row")
    stored = tracking.client(run.tracking_uri).get_run(run.run_id)
    assert stored.info.status == "FAILED" and stored.data.tags[tracking.OWNER_TAG] == owner_token()


def test_finish_closes_runs_the_unwinding_missed(tmp_path, settings, monkeypatch):
    monkeypatch.setattr(interrupts, "STATE", interrupts._State(signum=signal.SIGINT, kept=["/p/x (3 rows kept)"]))
    monkeypatch.setattr(tracking, "KILLED", [])
    run = tracking.open_run(settings, tmp_path, "left-open")
    line, code = interrupts.finish()
    assert status(run) == "KILLED" and code == 130
    assert line.startswith("polyreason: interrupted by SIGINT; kept /p/x (3 rows kept); MLflow run(s) "
                           f"{run.run_id[:8]}")
    assert "resume with: polyreason" in line
    assert interrupts.finish()[0] == ""  # once


def test_the_runs_of_a_killed_process_are_closed_at_the_next_start(tmp_path, settings):
    uri = tracking.tracking_uri(settings, tmp_path)
    gone = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    dead_owner = owner_token(gone.pid)
    gone.kill()
    gone.wait()
    experiment = tracking.ensure_experiment(uri, settings.experiment, None)
    mlflow_client = tracking.client(uri)
    abandoned = mlflow_client.create_run(experiment, tags={tracking.OWNER_TAG: dead_owner}).info.run_id
    alive = mlflow_client.create_run(experiment, tags={tracking.OWNER_TAG: owner_token()}).info.run_id
    elsewhere = mlflow_client.create_run(experiment, tags={tracking.OWNER_TAG: "other-host:1:2"}).info.run_id
    assert close_abandoned_runs(uri) == [abandoned]
    statuses = [mlflow_client.get_run(run).info.status for run in (abandoned, alive, elsewhere)]
    assert statuses == ["KILLED", "RUNNING", "RUNNING"]
    assert "ended without closing it" in mlflow_client.get_run(abandoned).data.tags["polyreason.ended"]
