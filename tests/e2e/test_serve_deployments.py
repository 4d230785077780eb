"""Deployments for the Prefect UI: each stage of a profile is registered on a real Prefect
server with the validated profile as its parameter, and evaluations get the nightly cron."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


def test_profiles_become_deployments_with_a_nightly_evaluation(prefect_server, tmp_path):
    from prefect import get_client

    from flows.serve import build_deployments

    profile = REPO / "profiles" / "cpu-demo.yaml"
    deployments = build_deployments([profile], "0 2 * * *", tmp_path)
    assert [d.name for d in deployments] == ["cpu-demo-recipe", "cpu-demo-evaluation"]
    ids = [d.apply() for d in deployments]

    with get_client(sync_client=True) as client:
        stored = client.read_deployment(ids[1])
        schedules = client.read_deployment_schedules(ids[1])
        recipe_schedules = client.read_deployment_schedules(ids[0])
    assert recipe_schedules == []
    assert stored.name == "cpu-demo-evaluation"
    assert stored.parameters["profile"]["evaluation"]["benchmarks"][0]["name"] == "mgsm"
    assert stored.parameters["profile"]["project_dir"] == str(tmp_path.resolve())
    assert [s.schedule.cron for s in schedules] == ["0 2 * * *"]
