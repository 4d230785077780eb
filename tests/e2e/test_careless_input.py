"""The real ``polyreason evaluate`` (its own Prefect server, an MLflow store, the ``openai`` backend against a
scripted OpenAI-compatible server) on input a careless user gives it: a benchmark file with one byte that is not
UTF-8, and a ``base_url`` with a user and password in it.

The bad byte costs its row alone: every other row is generated, and the terminal names the file, line and field.
The password reaches the server (HTTP basic auth from the URL) and nothing else: no file of the project but the
profile the user wrote holds it (MLflow's store, Prefect's database and its results included), nor stdout, stderr
or the JSON result.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.cockpit import said
from tests.helpers.scripted_api import ScriptedAPI

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
SECRET = "s3cr3t-PASS-49"


def write_project(root: Path, base_url: str) -> Path:
    (root / "mgsm").mkdir(parents=True)
    lines = [f"What is {i} plus {i}?\t{2 * i}".encode() for i in range(4)]
    lines[1] = b"What is 1 plus \xff1?\t2"  # line 2: one byte that is not UTF-8
    (root / "mgsm" / "mgsm_en.tsv").write_bytes(b"\n".join(lines) + b"\n")
    profile = {"name": "careless", "evaluation": {
        "model": {"backend": "openai", "model": "scripted", "base_url": base_url},
        "benchmarks": [{"name": "mgsm", "data_dir": "mgsm", "languages": ["en"]}]}}
    (root / "careless.yaml").write_text(json.dumps(profile), encoding="utf-8")
    return root / "careless.yaml"


def files_holding(root: Path, text: str) -> list[str]:
    return sorted(str(path.relative_to(root)) for path in root.rglob("*")
                  if path.is_file() and text.encode() in path.read_bytes())


def test_a_bad_byte_costs_one_row_and_a_url_password_reaches_only_the_server(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    for name in ("PREFECT_HOME", "PREFECT_RESULTS_LOCAL_STORAGE_PATH", "PREFECT_API_URL"):
        env.pop(name, None)  # the project's own Prefect server and database, as a user gets them
    with ScriptedAPI([]) as api:
        profile = write_project(tmp_path, api.url.replace("http://", f"http://alice:{SECRET}@"))
        done = subprocess.run([sys.executable, "-m", "cli", "evaluate", str(profile), "--project-dir", str(tmp_path),
                               "--out", str(tmp_path / "result.json")], cwd=REPO, env=env, capture_output=True,
                              text=True, timeout=600)
    assert done.returncode == 0, said(done)

    lines = done.stdout.splitlines()  # the terminal's summary names the skipped row
    assert lines[lines.index("mgsm: 1 row skipped as unreadable (load_errors):") + 1] == \
        f"  {tmp_path / 'mgsm' / 'mgsm_en.tsv'}:2: field question: not UTF-8 text (byte 0xff at column 16)"
    result = json.loads((tmp_path / "result.json").read_text(encoding="utf-8"))  # what --json prints
    mgsm = result["benchmarks"]["mgsm"]
    assert mgsm["load_errors"] == 1
    generated = [json.loads(line) for line in Path(mgsm["generations"]["path"]).read_text().splitlines()]
    assert sorted(row["id"] for row in generated) == ["mgsm-0", "mgsm-2", "mgsm-3"]  # every other row

    assert {header["Authorization"] for header in api.headers} == \
        {"Basic " + base64.b64encode(f"alice:{SECRET}".encode()).decode()}  # the secret reached the server
    assert result["model"]["model"]["base_url"] == api.url.replace("http://", "http://***@")
    assert SECRET not in done.stdout + done.stderr
    assert files_holding(tmp_path, SECRET) == ["careless.yaml"]  # MLflow, Prefect, results: none holds it
