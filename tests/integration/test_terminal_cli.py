"""The ``polyreason`` command's two outputs: a table a person reads by default, the JSON alone with ``--json``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_verify_prints_a_table_by_default_and_only_json_with_json(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"id": "1", "lang": "fr", "gold": "12", "answer": "12", "expected": true}\n', encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("POLYREASON_VERBOSE", None)
    command = [sys.executable, "-m", "cli", "verify", str(rows)]
    text = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    machine = subprocess.run([*command, "--json"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert text.returncode == machine.returncode == 0, text.stderr + machine.stderr
    assert "fr       1.000 [0.207, 1.000] (n 1)" in text.stdout and "Warning" not in text.stderr
    assert json.loads(machine.stdout)["aggregate"]["fr"]["accuracy"] == 1.0
