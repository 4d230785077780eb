"""End-to-end: ``polyreason compare RUN --paper PROFILE`` on a real evaluation run of a CPU twin.

The AdaMame evaluation twin (``profiles/cpu-adamame-evaluation.yaml``, every protocol switch of
``profiles/qwen3-4b-adamame-evaluation.yaml``, counts shrunk) runs on the tiny from-config model
against a real Prefect server; then the command line holds the run against AdaMame's table, as a
person and as a machine reads it. Random weights: the test asserts that each paper row is either
measured with the number the run logged (its error, n and interval) or listed as missing for the
right reason, never the numbers themselves.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.e2e.test_paper_profile_twins import REPO, metrics_of, twin
from tests.helpers.cockpit import said

pytestmark = pytest.mark.slow

PAPER = REPO / "profiles" / "qwen3-4b-adamame-evaluation.yaml"


def compare(project, prefect_url, *arguments: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PREFECT_API_URL=prefect_url,
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, "-m", "cli", "compare", *arguments, "--project-dir", str(project)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)


def test_an_evaluation_twin_held_against_adamames_table(tiny_model_dir, shared_data, tmp_path, prefect_server):
    from components.config import load_profile_dict
    from components.reports.paper_tables import load_table
    from flows.evaluation import evaluation_flow

    run_id = evaluation_flow(load_profile_dict(twin("adamame", tiny_model_dir, tmp_path))).run_id
    logged = metrics_of(tmp_path, run_id)

    done = compare(tmp_path, prefect_server, run_id, "--paper", str(PAPER), "--json")
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    out = json.loads(done.stdout[done.stdout.index("{"):])
    entries = out["paper"]
    assert len(entries) == len(load_table(REPO / "profiles" / "papers" / PAPER.name))  # no row dropped
    measured = [e for e in entries if e["status"] == "measured"]
    assert measured and {e["row"] for e in measured} == {"Prompt"}  # the shipped setting: the instruction prepended
    for entry in measured:  # the run's own numbers, its error and n, the interval around them
        assert entry["measured"] == logged[entry["key"]] and entry["run_id"] == run_id
        assert entry["n"] == logged[entry["key"] + "_n"] and entry["metric"] in ("lcpr", "ttc")
        assert entry["difference"] == pytest.approx(entry["measured"] - entry["paper"] / 100)
        if entry["stderr"] is not None:
            assert entry["ci_low"] <= entry["measured"] <= entry["ci_high"]
            # the paper's own error (its 250 problems per language) widens the difference's interval
            assert entry["paper_n"] == 250 and entry["difference_low"] <= entry["difference"] <= entry["difference_high"]
            assert entry["consistent_with_paper"] is (entry["difference_low"] <= 0 <= entry["difference_high"])
    reasons = {e["reason"] for e in entries if e["status"] == "missing"}
    assert 'another setting: this row is measured with evaluation.prompt={style: plain}' in reasons  # Vanilla rows
    assert any(r.startswith("not logged: the run reports no pass_at_4") for r in reasons)  # the twin has pass@2
    assert any(r == "not evaluated: the run has no ko on mgsm_rev2" for r in reasons)  # no Korean offline
    corrected = [e for e in entries if e["corrected"] is not None]  # the cells the paper prints inconsistently
    assert corrected and all(e["paper"] == e["corrected"] != e["printed"] and e["evidence"] for e in corrected)
    assert all(e["difference"] == pytest.approx(e["measured"] - e["corrected"] / 100)
               for e in corrected if e["status"] == "measured")

    text = compare(tmp_path, prefect_server, run_id, "--paper", "qwen3-4b-adamame-evaluation")
    assert text.returncode == 0, said(text)
    assert f"{len(measured)} of {len(entries)} values measured" in text.stdout
    assert "Table 16" in text.stdout and "missing: another setting" in text.stdout and "comparison run: " in text.stdout
    assert "(printed 13.0: the mean of table 16's fr, ja, ko and th" in text.stdout  # held value and printed one

    refused = compare(tmp_path, prefect_server, run_id, "--paper", str(REPO / "profiles" / "cpu-lcrl.yaml"))
    assert refused.returncode == 2 and "no paper table" in refused.stderr
