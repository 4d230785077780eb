"""End-to-end: ``polyreason pilot`` on the tiny recipe profile, against a real Prefect server and a real MLflow
tracking server; then a recipe of the same profile links to the pilot's run.

The random tiny model's accuracy reward is 0 on every GRPO step: flat within its noise, so the pilot refuses,
naming the GRPO keys, after a report that carries every measurement (retention per language, the projected
set, slopes, throughput, projected times), its MLflow run and its Prefect artifact.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.e2e.test_recipe_flow import MlflowREST, polyreason, prefect_artifact, recipe_profile

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


def pilot_profile(tiny_model_dir: Path, shared_data: Path, mlflow_server: str) -> dict:
    profile = recipe_profile(tiny_model_dir, shared_data, mlflow_server)
    profile.update(name="tiny-pilot", tracking={"tracking_uri": mlflow_server, "experiment": "e2e-pilot"})
    profile["grpo"]["max_steps"] = 3  # within the pilot's 5: three points for the slope
    profile.pop("registry")
    return profile


def test_pilot_reports_refuses_and_a_later_recipe_links_to_it(tiny_model_dir, shared_data, tmp_path,
                                                              prefect_server, mlflow_server):
    profile = tmp_path / "tiny-pilot.yaml"
    profile.write_text(yaml.safe_dump(pilot_profile(tiny_model_dir, shared_data, mlflow_server)), encoding="utf-8")
    project, out = tmp_path / "project", tmp_path / "pilot.json"
    env = dict(os.environ, PREFECT_API_URL=prefect_server,
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    env.pop("POLYREASON_VERBOSE", None)
    done = subprocess.run([sys.executable, "-m", "cli", "pilot", str(profile), "--sft-steps", "1", "--project-dir",
                           str(project), "--out", str(out)], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 2, (done.stdout + done.stderr)[-6000:]
    assert done.stderr.startswith("pilot budget (the same flows, with these overrides: data.traces.per_language=4 "
                                  "sft.max_steps=1)"), done.stderr[:500]  # GRPO and evaluation: already small
    assert "  sft: 1 of 4 optimizer steps (25%)" in done.stderr  # the budget before any work
    report = json.loads(out.read_text(encoding="utf-8"))
    metrics, problems = report["metrics"], report["problems"]
    # the filter sees every exemplar of the file (8 per language), the kept set is capped at 4 per language
    assert metrics["pilot/traces/n/en"] == 8 and metrics["pilot/traces/n/fr"] == 8
    assert metrics["pilot/projected/target/fr"] == 8 and "pilot/traces/rate_high/fr" in metrics
    assert any(p.startswith("grpo: the reward is flat") and "grpo.learning_rate" in p for p in problems), problems
    assert metrics["pilot/slope_n/reward"] == 3 and metrics["pilot/slope/reward"] == 0.0
    assert {"pilot/throughput/grpo_steps_per_s", "pilot/throughput/evaluation_tokens_per_s",
            "pilot/projected_seconds/total"} <= set(metrics), sorted(metrics)
    lines = done.stdout.splitlines()
    assert lines[0] == "pilot of tiny-pilot" and "refused:" in lines and lines[-1].startswith("MLflow run: http://")
    assert max(map(len, lines[:-1])) <= 100, done.stdout
    assert "grpo.lora" in done.stderr.splitlines()[-1] or "grpo.lora" in done.stderr[-2000:]  # the refusal

    mlflow = MlflowREST(mlflow_server)
    pilot = mlflow.run(report["run_id"])
    assert pilot["tags"]["polyreason.pilot.profile"] == "tiny-pilot"
    assert pilot["tags"]["polyreason.pilot.verdict"] == "refused"
    assert pilot["params"]["pilot.overrides"] == "data.traces.per_language=4 sft.max_steps=1"
    assert pilot["metrics"]["pilot/projected/target/fr"] == 8
    assert "Pilot of `tiny-pilot`" in prefect_artifact(prefect_server, "pilot-tiny-pilot")

    # a recipe of the profile started after it (its data stage alone) links to the pilot
    summary, _ = polyreason("recipe", profile, project, prefect_server, "sft=null", "grpo=null", "evaluation=null",
                            "data.rejection=null", as_json=True)
    recipe = mlflow.run(summary["run_id"])
    assert recipe["tags"]["polyreason.pilot_run"] == report["run_id"]
    assert recipe["tags"]["polyreason.pilot_verdict"] == "refused"
    assert report["run_id"] in recipe["tags"]["polyreason.pilot_url"]
