"""On a fresh machine (a HOME with nothing in it) a command's Prefect server starts without a warning a user cannot
act on, and keeps its state in the project, not in ~/.prefect."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

START_AND_STOP = """
import sys
from pathlib import Path
from cli.environment import configure
from cli.prefect_server import start_temporary_server, stop_temporary_server
paths = configure(Path(sys.argv[1]))
start_temporary_server(paths["prefect_home"])
stop_temporary_server()
"""


def test_a_temporary_server_on_a_fresh_home_warns_about_nothing(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PREFECT_", "MLFLOW_"))}
    env.update(HOME=str(home), PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", START_AND_STOP, str(project)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "WARNING" not in output and "memo_store" not in output, output
    assert (project / ".prefect" / "memo_store.toml").is_file()  # the next start skips block registration
    assert list(home.iterdir()) == []  # nothing written outside the project


def test_the_stacks_server_keeps_its_memo_in_the_project(tmp_path):
    from cli.stack_launch import server_env

    env = server_env(tmp_path, 4200)
    assert env["PREFECT_SERVER_MEMO_STORE_PATH"] == str(tmp_path / ".prefect" / "memo_store.toml")
    assert env["PREFECT_HOME"] == str(tmp_path / ".prefect")
